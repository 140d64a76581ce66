"""The article page's 引文网络 block: empty list containers filled by a script from the citation
JSON API, lazily, as the 2026 page does (docs/citation-api.md "How the page loads the lists").

At load the containers hold nothing. When the 核心文献推荐 block comes into the viewport the script
asks the four `…/domains` keyword lists; when `#refpartdiv` does (at load or on a scroll) it asks
`quotations/metrics`, and when references or citations are non-zero the reference list of each of
the 12 databases (page 1, size 10), then the similar papers. A click on a tab
(`li[data-id=citations]` …) asks that kind's 12 lists. Each is asked once per page view."""

from __future__ import annotations

from ..corpus import SimRecord
from ..links import Links
from .common import esc, script_json

# (type code, container suffix, heading) in the page's order.
DATABASES: tuple[tuple[str, str, str], ...] = (
    ("CJFDREF", "journal", "期刊"),
    ("CDFDREF", "dissertation-d", "博士"),
    ("CMFDREF", "dissertation-m", "硕士"),
    ("CPFDREF", "conference-c", "中国会议"),
    ("IPFDREF", "conference-i", "国际会议"),
    ("CYFDREF", "yearbook", "年鉴"),
    ("CCNDREF", "newpaper", "报纸"),
    ("WWJDREF", "journal-w", "国际期刊"),
    ("CBBDREF", "book", "图书"),
    ("SCPDREF", "patent", "专利"),
    ("SCSDREF", "stand", "标准"),
    ("NLNKREF", "crldeng", "中外文题录"),
)
# Tab id -> (list kind in the API path, container id).
TABS: tuple[tuple[str, str, str], ...] = (
    ("references", "references", "参考文献"),
    ("citations", "citations", "引证文献"),
    ("coreferences", "co-references", "共引文献"),
    ("cocitations", "co-citations", "同被引文献"),
    ("secondreferences", "second-references", "二级参考文献"),
    ("secondcitations", "second-citations", "二级引证文献"),
)

_SCRIPT = """(function(){
var C=%(cfg)s,api=document.getElementById('apiHost').value,
v=document.getElementById('paramkcmslink').value.split('&')[0],asked={},started=false;
function get(u,cb){var x=new XMLHttpRequest();x.open('GET',u);x.withCredentials=true;x.timeout=3000;
x.onload=function(){if(x.status==200){try{cb(JSON.parse(x.responseText));}catch(e){}}};x.send();}
function esc(s){return String(s==null?'':s).replace(/[&<>"']/g,function(c){return '&#'+c.charCodeAt(0)+';';});}
function meta(it,n){var m=it.metadata||[];for(var i=0;i<m.length;i++){if(m[i].name==n)return m[i].value;}return '';}
function rel(it,s){var r=it.relations||[];for(var i=0;i<r.length;i++){if(r[i].scope==s)return r[i].url;}return '';}
function box(d,db){var h='<div class="essayBox"><div class="dbTitle">'+db[2]+'<b class="titleTotle">共<span name="pcount">'
+d.total+'</span>条</b></div><ul class="ebBd">';for(var i=0;i<d.data.length;i++){var it=d.data[i],t=meta(it,'TI'),u=rel(it,'ABSTRACT');
h+='<li><span class="number">['+(d.start+i)+'] </span>'+(u?'<a class="document-title" target="_blank" href="'+esc(u)+'">'+esc(t)+'</a>':esc(t))
+'. '+esc(meta(it,'AU').replace(/;$/,''))+'. '+esc(it.source?it.source.title:meta(it,'LY'))+'</li>';}return h+'</ul></div>';}
function kind(k,div){if(asked[k])return;asked[k]=1;var el=document.getElementById(div);
C.dbs.forEach(function(db){var holder=document.createElement('div');holder.id='nxgp-kcms-data-ref-'+k+'-'+db[1];el.appendChild(holder);
get(api+'/citation-api/v1/literature/'+k+'?'+v+'&type='+db[0]+'&start=1&size=10',function(d){
if(d&&d.code==0&&d.data&&d.data.size>0){holder.innerHTML=box(d.data,db);}});});}
function seen(id){var el=document.getElementById(id),h=document.documentElement.clientHeight||document.body.clientHeight;
return el&&el.getBoundingClientRect().top<h;}
function similar(){if(asked.similar)return;asked.similar=1;var id=document.getElementById('export-id').value;
get(api+'/usercenter-api/v1/recommend/similar/articles?productid=CJFD&trace=JZTJ_KCMSSIMILAR&articleid='+encodeURIComponent(id)+'&size=10',function(d){
var el=document.getElementById('kcms-data-similar');
if(d&&d.data&&d.data.length){el.innerHTML=box({total:d.data.length,start:1,data:d.data},['','','相似文献']);}});}
function check(){if(!asked.core&&seen('kcms-data-quoted-corefirerecomend')){asked.core=1;
C.domains.forEach(function(k){get(api+'/citation-api/v1/literature/'+k+'/domains?'+v,function(d){});});}
if(started||!seen('refpartdiv'))return;started=true;
get(api+'/citation-api/v1/literature/quotations/metrics?'+v,function(d){if(!d||!d.data)return;var n={};
d.data.forEach(function(m){n[m.name]=m.value;});C.tabs.forEach(function(t){var s=document.getElementById('rc-'+t[0]);if(s)s.textContent='('+(n[t[1]]||0)+')';});
if((n.references||'0')!='0'||(n.citations||'0')!='0'){kind('references','quoted-references');}similar();});}
C.tabs.forEach(function(t){var li=document.querySelector('ul.tpl_lieteratures li[data-id="'+t[0]+'"]');
if(li)li.addEventListener('click',function(){started=true;kind(t[1],'quoted-'+t[0]);});});
window.addEventListener('scroll',check);window.addEventListener('resize',check);check();
})();"""


def citation_block(record: SimRecord, links: Links) -> str:
    """`#refpartdiv` with empty containers, the hidden inputs the script reads, and the script."""
    v = links.detail(record.id).split("?", 1)[1].split("&", 1)[0]  # a live `v=…` for this paper
    tabs = "".join(
        f'<li data-id="{tid}" class="{tid}{" cur" if tid == "references" else ""}">{name}'
        f'<span id="rc-{tid}"></span></li>'
        for tid, _, name in TABS
    )
    boxes = "".join(f'<div id="quoted-{tid}" data-id="{kind}"></div>' for tid, kind, _ in TABS)
    cfg = {"dbs": [list(d) for d in DATABASES], "tabs": [[t, k] for t, k, _ in TABS],
           "domains": ["starter", "source", "branch", "boost"]}  # fmt: skip
    return (
        # The real page's 核心文献推荐 block sits above the network (height 413px): the lists load
        # only once the reader scrolls down to them.
        '<div id="kcms-data-quoted-corefirerecomend" style="height:900px"></div>'
        '<div id="refpartdiv" class="dis-show"><h5 class="module-title"><span><b>引文网络</b></span></h5>'
        f'<ul class="module-tab tpl_lieteratures" id="{esc(record.native_filename)}">{tabs}</ul>'
        f'<div id="MapArea"><div id="div-literatureRef">{boxes}</div></div></div>'
        '<div id="literature-recommend"><h5 class="module-title"><span><b>相关文献推荐</b></span></h5>'
        '<div id="kcms-data-similar"></div></div>'
        f'<input id="export-id" type="hidden" value="{esc(record.native_filename)}">'
        f'<input id="apiHost" type="hidden" value="{esc(links.kns("/restapi"))}">'
        f'<input id="paramkcmslink" type="hidden" value="{esc(v)}&amp;uniplatform=NZKPT">'
        f"<script>{_SCRIPT % {'cfg': script_json(cfg)}}</script>"
    )
