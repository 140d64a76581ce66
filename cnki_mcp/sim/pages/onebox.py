"""The one-box (一框式) search page: `/kns8s/search` and its result URL `/kns8s/defaultresult/index`.

Shaped like the saved kns8s result pages (`kns8s-grid/kaffu_search_shell_raw.html` is the server's
answer, `kaffu_waam_p1.html` the rendered page): `<title>检索-中国知网</title>`; `#ModuleSearch`
with the field picker `.sort.reopt` (`.sort-default > span`, hidden `#selectfield[korder][data-opt]`,
`.sort-list li[data-val] > a[value=<match>]`), the box `input#txt_search.search-input` (value = the
query) and `input.search-btn`; the left `#divGroup` facet column; `#ModuleSearchResult > #briefBox`
that the page's own script fills by POSTing the grid (Subject group with one item
`{Field: korder, Operator: <match>, Value: kw}`, `SearchType` 2), then the facet counts from
`/kns8s/group/result`. Pager links and `#orderList` re-post with the `#hidTurnPage` cursor."""

from __future__ import annotations

from ..facets import DEFAULT_OPEN, render_sidebar_skeleton
from ..links import Links, Visitor
from .common import esc, header_html, script_json

# (label, korder, match) in the picker's order, as on the 2026-07 saved page.
ONEBOX_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("主题", "SU", "TOPRANK"),
    ("篇关摘", "TKA", "FUZZY"),
    ("关键词", "KY", "DEFAULT"),
    ("篇名", "TI", "FUZZY"),
    ("全文", "FT", "FUZZY"),
    ("作者", "AU", "DEFAULT"),
    ("第一作者", "FI", "DEFAULT"),
    ("通讯作者", "RP", "DEFAULT"),
    ("作者单位", "AF", "FUZZY"),
    ("基金", "FU", "FUZZY"),
    ("摘要", "AB", "FUZZY"),
    ("小标题", "CO", "FUZZY"),
    ("参考文献", "RF", "DEFAULT"),
    ("分类号", "CLC", "SUFFIX"),
    ("文献来源", "LY", "FUZZY"),
    ("DOI", "DOI", "PREFIX"),
)
# The grid's field and match for each picker entry where the simulator's evaluator names them
# differently (小标题 is the section-heading field; SUFFIX/PREFIX read as the code-prefix/equal rules).
_GRID_FIELD = {"CO": "ST"}
_GRID_MATCH = {"SUFFIX": "FUZZY", "PREFIX": "DEFAULT"}
CROSSIDS = "YSTT4HG0,LSTPFY1C,EMRPGLPA,JUP3MUPD,MPMFIG1A,WQ0UVIAA,BLZOG7CK,PWFIRAGL,NLBO1Z6R,NN3FJMUV"

_CSS = """
body{font-family:"Microsoft YaHei",sans-serif;margin:0}
.search-box{padding:16px;background:#f5f7fa}.input-box{display:flex;align-items:center;gap:6px}
.sort{position:relative;display:inline-block;min-width:70px;height:34px;line-height:34px;border:1px solid #ddd;
 background:#fff;cursor:pointer;padding:0 6px}
.sort-list{position:absolute;top:34px;left:0;background:#fff;border:1px solid #ddd;z-index:10;min-width:90px}
.sort-list ul{list-style:none;margin:0;padding:0}.sort-list li{padding:0 8px;white-space:nowrap}
.search-input{width:480px;height:32px;border:1px solid #ccc;padding:0 6px}
.search-btn{width:80px;height:36px;background:#1b66c9;border:0;cursor:pointer}
.module-main{display:flex}.search-result{display:flex;width:100%}
#divGroup{width:220px;flex:none}#divGroup dt.tit{cursor:pointer;font-weight:bold;margin-top:8px}
#divGroup ul{list-style:none;margin:0;padding:0 0 0 8px}
#ModuleSearchResult{flex:1}.result-table-list{border-collapse:collapse;width:100%}
.result-table-list td{border-bottom:1px solid #eee;padding:4px}
.pages a,.pagesnums{display:inline-block;margin:0 3px;cursor:pointer}#orderList li{display:inline-block;
 margin-right:10px;cursor:pointer}
"""

_SCRIPT = r"""
(function(){
  var cfg = JSON.parse(document.getElementById('oneboxConfig').textContent);
  var gridMap = cfg.gridField, matchMap = cfg.gridMatch;
  var state = {queryJson: null, page: 1, sortField: 'FFD', sortType: 'desc', pageSize: 20};
  var picker = document.querySelector('#ModuleSearch .sort.reopt');
  var list = picker.querySelector('.sort-list');
  var selected = document.getElementById('selectfield');
  function buildQueryJson(kw){
    var korder = selected.getAttribute('korder') || 'SU';
    var op = selected.getAttribute('data-opt') || 'TOPRANK';
    var title = selected.getAttribute('title') || '主题';
    return {Platform: '', Resource: 'CROSSDB', Classid: 'WD0FTY92', Products: '',
      QNode: {QGroup: [{Key: 'Subject', Title: '', Logic: 0, Items: [{Field: gridMap[korder] || korder,
        Value: kw, Operator: matchMap[op] || op, Logic: 0, Title: title}], ChildItems: []}]},
      ExScope: 1, SearchType: 2, Rlang: 'CHINESE', KuaKuCode: cfg.crossids, Expands: {}, SearchFrom: 1};
  }
  function form(extra){
    var base = {QueryJson: state.queryJson, pageSize: state.pageSize, sortField: state.sortField,
      sortType: state.sortType, dstyle: 'listmode', productStr: cfg.crossids, aside: '', searchFrom: '资源范围：总库',
      subject: '', language: '', uniplatform: ''};
    Object.keys(extra).forEach(function(k){ base[k] = extra[k]; });
    return Object.keys(base).map(function(k){
      return encodeURIComponent(k) + '=' + encodeURIComponent(base[k]); }).join('&');
  }
  function postTo(url, body){
    return fetch(url, {method: 'POST', credentials: 'include', body: body,
      headers: {'Content-Type': 'application/x-www-form-urlencoded; charset=UTF-8',
                'X-Requested-With': 'XMLHttpRequest'}}).then(function(r){ return r.text(); });
  }
  function showGrid(html){
    var box = document.getElementById('briefBox');
    box.innerHTML = html; box.removeAttribute('data-loading');
  }
  function loadGroups(ids){
    if (!state.queryJson) return Promise.resolve();
    var body = 'queryJson=' + encodeURIComponent(state.queryJson) + '&groupIds=' + encodeURIComponent(ids) +
      '&manageId=&aside=&subject=';
    return postTo(cfg.groupUrl, body).then(function(html){
      var tmp = document.createElement('div'); tmp.innerHTML = html;
      tmp.querySelectorAll('dl[groupid]').forEach(function(dl){
        var old = document.querySelector('#divGroup dl[groupid="' + dl.getAttribute('groupid') + '"]');
        if (old) { dl.className = old.className.replace('off', '').trim(); old.replaceWith(dl); }
      });
    });
  }
  function search(){
    var kw = document.getElementById('txt_search').value.trim();
    if (!kw) return;
    if (cfg.resultUrl) {  // the personal home page opens the result page
      location.href = cfg.resultUrl + '?crossids=' + encodeURIComponent(cfg.crossids) + '&korder=' +
        encodeURIComponent(selected.getAttribute('korder') || 'SU') + '&kw=' + encodeURIComponent(kw);
      return;
    }
    state.queryJson = JSON.stringify(buildQueryJson(kw));
    state.page = 1; state.sortField = 'FFD';
    document.getElementById('briefBox').setAttribute('data-loading', '1');
    return postTo(cfg.gridUrl, form({boolSearch: 'true', pageNum: 1, boolSortSearch: 'false',
      sentenceSearch: 'false', CurPage: 1, SearchFrom: 1})).then(showGrid).then(function(){
        return loadGroups(cfg.openGroups); });
  }
  function turnPage(n){
    if (!state.queryJson) return;
    var cursor = document.getElementById('hidTurnPage');
    state.page = n;
    return postTo(cfg.gridUrl, form({boolSearch: 'false', pageNum: n, boolSortSearch: 'false',
      sentenceSearch: 'false', turnpage: cursor ? cursor.value : '', SearchFrom: 4})).then(showGrid);
  }
  function sortBy(code){
    if (!state.queryJson) return;
    state.sortField = code; state.page = 1;
    return postTo(cfg.gridUrl, form({boolSearch: 'false', pageNum: 1, boolSortSearch: 'true',
      sentenceSearch: 'false', CurPage: 1, SearchFrom: 5})).then(showGrid);
  }
  document.addEventListener('click', function(ev){
    var t = ev.target;
    if (t.closest('#ModuleSearch .sort-default')) {
      list.style.display = list.style.display === 'none' ? 'block' : 'none'; return;
    }
    var li = t.closest('#ModuleSearch .sort-list li[data-val]');
    if (li) {
      var a = li.querySelector('a');
      picker.querySelectorAll('.sort-list li').forEach(function(x){ x.classList.remove('cur'); });
      li.classList.add('cur');
      selected.value = li.getAttribute('data-val'); selected.setAttribute('korder', li.getAttribute('data-val'));
      selected.setAttribute('data-opt', a.getAttribute('value')); selected.setAttribute('title', a.getAttribute('title'));
      var span = picker.querySelector('.sort-default span');
      span.textContent = a.textContent; span.setAttribute('title', a.getAttribute('title'));
      list.style.display = 'none'; ev.preventDefault(); return;
    }
    if (t.closest('#ModuleSearch .search-btn')) { ev.preventDefault(); search(); return; }
    var dt = t.closest('#divGroup dt.tit');
    if (dt) {
      var dl = dt.closest('dl');
      if (dl && !dl.querySelector('dd')) loadGroups(dl.getAttribute('groupid'));
      return;
    }
    var pageLink = t.closest('#briefBox a[data-curpage]');
    if (pageLink) { ev.preventDefault(); turnPage(parseInt(pageLink.getAttribute('data-curpage'), 10)); return; }
    var sortLink = t.closest('#briefBox #orderList li[data-sort]');
    if (sortLink) { ev.preventDefault(); sortBy(sortLink.getAttribute('data-sort')); return; }
  });
  document.getElementById('txt_search').addEventListener('keydown', function(ev){
    if (ev.key === 'Enter') { ev.preventDefault(); search(); } });
  window.cnkiSearch = {search: search, turnPage: turnPage, sortBy: sortBy,
    getSearchJsonInfo: function(){ return state.queryJson; }};
  if (document.getElementById('txt_search').value.trim()) search();
})();
"""


def _picker(korder: str) -> str:
    current = next((f for f in ONEBOX_FIELDS if f[1] == korder), ONEBOX_FIELDS[0])
    label, code, match = current
    items = "".join(
        f'<li name="{"true" if c == code else "false"}" data-val="{c}"{" class=cur" if c == code else ""}>'
        f'<a value="{m}" title="{esc(lbl)}">{esc(lbl)}</a></li>'
        for lbl, c, m in ONEBOX_FIELDS
    )
    return (
        '<div class="sort reopt"><div class="sort-default">'
        f'<span title="{esc(label)}">{esc(label)}</span><i class="icon-sort"></i>'
        '<input type="hidden" id="postfield">'
        f'<input type="hidden" id="selectfield" value="{code}" korder="{code}" data-opt="{match}" title="{esc(label)}">'
        '<input type="hidden" id="advSearchUrl" value="/AdvSearch">'
        '<input type="hidden" id="defaultSearchUrl" value="/search"></div>'
        f'<div class="sort-list" style="display: none;"><ul>{items}</ul>'
        '<input type="hidden" id="showField" value="true"></div></div>'
    )


def render_onebox(
    links: Links, visitor: Visitor, *, kw: str = "", korder: str = "SU", personal_home: bool = False
) -> str:
    """The one-box page; `personal_home` is `/kns8s/` (个性化首页): the same search box, no result
    area, and a search opens `/kns8s/defaultresult/index` (saved page
    `home-login/pluginsx_kns8s_personal_home_2026.html` has the same `#ModuleSearch` markup)."""
    config = {
        "resultUrl": links.kns("/kns8s/defaultresult/index") if personal_home else "",
        "gridUrl": links.kns("/kns8s/brief/grid"),
        "groupUrl": links.kns("/kns8s/group/result"),
        "crossids": CROSSIDS,
        "openGroups": ",".join(DEFAULT_OPEN),
        "gridField": _GRID_FIELD,
        "gridMatch": _GRID_MATCH,
    }
    search_box = (
        '<div id="ModuleSearch"><div class="search-box"><div class="content"><div class="search-main">'
        f'<div class="input-box">{_picker(korder)}<span class="btn-clear">×</span>'
        '<input id="txt_search" class="search-input" type="text" autocomplete="off" '
        f'placeholder="中文文献、外文文献" maxlength="100" value="{esc(kw)}" aria-label="中文文献、外文文献">'
        '<input class="search-btn" type="button" value="" aria-label="检索"></div>'
        f'<a class="btn-result-search disableclick" href="javascript:void(0)">结果中检索</a></div></div></div></div>'
    )
    doctype = (
        '<div class="top-doctype"><div class="content">'
        '<input type="hidden" id="classid" value="WD0FTY92"><input type="hidden" id="resource" value="CROSSDB">'
        '<div class="all-box cur zk-zh"><a data-id="all" class="all" name="classify" href="javascript:void(0)" '
        'classid="WD0FTY92" resource="CROSSDB"><span>总库</span><em></em></a></div></div></div>'
    )
    title = "个性化首页-中国知网" if personal_home else "检索-中国知网"
    results = (
        ""
        if personal_home
        else f'<div class="module-main"><div class="search-result">{render_sidebar_skeleton()}'
        '<div id="ModuleSearchResult"><div id="briefBox"></div></div></div></div>'
    )
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{_CSS}</style></head><body>"
        f"{header_html(visitor, links)}"
        f'<div class="module-main-wrap">{search_box}{doctype}{results}</div>'
        f'<script type="application/json" id="oneboxConfig">{script_json(config)}</script>'
        f"<script>{_SCRIPT}</script></body></html>"
    )
