"""`/kns8s/AdvSearch`: the advanced search page and its own script.

The page script (like CNKI's) builds QueryJson from the visible condition rows and POSTs the grid
form with `X-Requested-With: XMLHttpRequest`, then puts the answer into `#briefBox`; pager and
sort links inside the returned grid post later pages with the `#hidTurnPage` cursor. Each row
becomes one child group of the Subject group (the row's logic on the group, one item inside).
The EN (中英文扩展) checkbox is checked by default; while checked every item carries `Extend: 1`
and the simulator also matches English titles/keywords/abstracts (CNKI's opaque expansion)."""

from __future__ import annotations

from html import escape

from cnki_mcp.sim.links import Links, Visitor

# (label, code) as in CNKI's field picker; 主题 uses TOPRANK and its match picker is locked.
FIELDS: tuple[tuple[str, str], ...] = (
    ("主题", "SU"),
    ("篇关摘", "TKA"),
    ("关键词", "KY"),
    ("篇名", "TI"),
    ("全文", "FT"),
    ("作者", "AU"),
    ("第一作者", "FI"),
    ("通讯作者", "RP"),
    ("作者单位", "AF"),
    ("基金", "FU"),
    ("摘要", "AB"),
    ("小标题", "ST"),
    ("参考文献", "RF"),
    ("分类号", "CLC"),
    ("文献来源", "LY"),
    ("DOI", "DOI"),
)
_DEFAULT_ROWS = (("主题", "SU"), ("作者", "AU"), ("文献来源", "LY"))
_LOCKED_MATCH = {"SU", "CLC"}

_CSS = """
body{font-family:"Microsoft YaHei",sans-serif;margin:0}
.gradeSearch{width:900px;margin:20px auto}
#gradetxt dd{display:flex;align-items:center;margin:6px 0;height:34px}
.sort{position:relative;display:inline-block;min-width:70px;height:30px;line-height:30px;border:1px solid #ddd;
 margin-right:6px;cursor:pointer;padding:0 6px}
.sort.logical.hidden{visibility:hidden}
.sort-list{display:none;position:absolute;top:30px;left:0;background:#fff;border:1px solid #ddd;z-index:10;
 min-width:90px}
.sort-list ul{list-style:none;margin:0;padding:0}.sort-list li a{display:block;padding:0 8px;white-space:nowrap}
.sort.open .sort-list{display:block}
.sort.disableclick{color:#999;cursor:default}
#gradetxt input[data-tipid]{width:380px;height:28px;border:1px solid #ccc;padding:0 6px}
.extend-box{margin:8px 0}.date-box input{width:110px;height:26px}
.search-middle{margin:14px 0}.btn-search{width:120px;height:36px;background:#1b66c9;color:#fff;border:0;
 cursor:pointer}
#briefBox{min-height:40px}
.result-table-list{border-collapse:collapse;width:100%}.result-table-list td{border-bottom:1px solid #eee;
 padding:4px}
.pages a,.pagesnums{display:inline-block;margin:0 3px;cursor:pointer}#orderList li{display:inline-block;
 margin-right:10px;cursor:pointer}
"""

_SCRIPT = r"""
(function(){
  var gridUrl = document.getElementById('gridUrl').value;
  var state = {queryJson: null, page: 1, sortField: 'FFD', sortType: 'desc', pageSize: 20};
  function rows(){ return Array.prototype.slice.call(document.querySelectorAll('#gradetxt > dd')); }
  function pickerValue(el){ var s = el && el.querySelector('.sort-default span'); return s ? s.getAttribute('value') : ''; }
  function expertMode(){ var m = document.getElementById('majorSearch'); return m && m.style.display !== 'none'; }
  function buildQueryJson(){
    if (expertMode()) return buildExpertJson();
    var en = document.querySelector('.gradeSearch input[data-id="EN"]');
    var extend = en && en.checked ? 1 : 0;
    var children = [];
    rows().forEach(function(dd, i){
      var input = dd.querySelector('input[data-tipid]');
      var value = input ? input.value.trim() : '';
      if (!value) return;
      var fieldSpan = dd.querySelector('.sort.reopt .sort-default span');
      var field = fieldSpan.getAttribute('value');
      var title = fieldSpan.textContent;
      var match = pickerValue(dd.querySelector('.sort.special'));
      var op = field === 'SU' ? 'TOPRANK' : (match === '=' ? 'DEFAULT' : 'FUZZY');
      var lg = pickerValue(dd.querySelector('.sort.logical'));
      var logic = children.length === 0 ? 0 : ({AND: 0, OR: 1, NOT: 2}[lg] || 0);
      var key = 'input[data-tipid=' + input.getAttribute('data-tipid') + ']';
      children.push({Key: key, Title: title, Logic: logic,
        Items: [{Key: key, Title: title, Logic: 0, Field: field, Operator: op, Value: value, Value2: '',
                 Extend: extend}],
        ChildItems: []});
    });
    var control = controlGroup();
    return {Platform: '', Resource: 'CROSSDB', Classid: 'WD0FTY92', Products: '',
      QNode: {QGroup: [{Key: 'Subject', Title: '', Logic: 0, Items: [], ChildItems: children}, control]},
      ExScope: '1', SearchType: 1, Rlang: 'CHINESE', KuaKuCode: 'YSTT4HG0,LSTPFY1C,JUP3MUPD,MPMFIG1A'};
  }
  function controlGroup(){
    var control = {Key: 'ControlGroup', Title: '', Logic: 0, Items: [], ChildItems: []};
    var d0 = document.getElementById('datebox0').value.trim(), d1 = document.getElementById('datebox1').value.trim();
    if (d0 || d1) {
      control.ChildItems.push({Key: '.tit-date-box', Title: '发表时间', Logic: 0, Items: [
        {Key: '.tit-date-box', Title: '发表时间', Logic: 0, Field: 'PT', Operator: 7, Value: d0, Value2: d1,
         options: {}}], ChildItems: []});
    }
    return control;
  }
  // 专业检索: the whole expression is one EXPERT item (Operator 0), SearchType 4.
  function buildExpertJson(){
    var expr = document.querySelector('textarea.textarea-major.majorSearch').value.trim();
    return {Platform: '', Resource: 'CROSSDB', Classid: 'WD0FTY92', Products: '',
      QNode: {QGroup: [{Key: 'Subject', Title: '', Logic: 0, Items: [{Key: 'Expert', Title: '', Logic: 0,
        Field: 'EXPERT', Operator: 0, Value: expr, Value2: '', options: {}}], ChildItems: []}, controlGroup()]},
      ExScope: '1', SearchType: 4, Rlang: 'CHINESE', KuaKuCode: 'YSTT4HG0,LSTPFY1C,JUP3MUPD,MPMFIG1A'};
  }
  function showTab(name){
    var expert = name === 'majorSearch';
    document.getElementById('gradeSearch').style.display = expert ? 'none' : '';
    document.getElementById('majorSearch').style.display = expert ? '' : 'none';
    document.querySelectorAll('.search-classify-menu li').forEach(function(li){
      li.classList.toggle('cur', li.getAttribute('name') === name); });
  }
  function post(fields){
    var body = Object.keys(fields).map(function(k){
      return encodeURIComponent(k) + '=' + encodeURIComponent(fields[k]); }).join('&');
    var box = document.getElementById('briefBox');
    box.setAttribute('data-loading', '1');
    return fetch(gridUrl, {method: 'POST', credentials: 'include', body: body,
      headers: {'Content-Type': 'application/x-www-form-urlencoded; charset=UTF-8',
                'X-Requested-With': 'XMLHttpRequest'}})
      .then(function(r){ return r.text(); })
      .then(function(html){ box.innerHTML = html; box.removeAttribute('data-loading'); })
      .catch(function(e){ box.removeAttribute('data-loading'); box.setAttribute('data-error', String(e)); });
  }
  function search(){
    state.queryJson = JSON.stringify(buildQueryJson());
    state.page = 1;
    return post({boolSearch: 'true', QueryJson: state.queryJson, pageNum: 1, pageSize: state.pageSize,
      sortField: state.sortField, sortType: state.sortType, dstyle: 'listmode', boolSortSearch: 'false',
      sentenceSearch: 'false', productStr: 'YSTT4HG0,LSTPFY1C,JUP3MUPD,MPMFIG1A', aside: '',
      searchFrom: '资源范围：总库', CurPage: 1, SearchFrom: 1});
  }
  function turnPage(n){
    if (!state.queryJson) return;
    var cursor = document.getElementById('hidTurnPage');
    state.page = n;
    return post({boolSearch: 'false', QueryJson: state.queryJson, pageNum: n, pageSize: state.pageSize,
      sortField: state.sortField, sortType: state.sortType, dstyle: 'listmode', boolSortSearch: 'false',
      sentenceSearch: 'false', productStr: 'YSTT4HG0,LSTPFY1C,JUP3MUPD,MPMFIG1A', aside: '',
      searchFrom: '资源范围：总库', turnpage: cursor ? cursor.value : '', SearchFrom: 4});
  }
  function sortBy(code){
    if (!state.queryJson) return;
    state.sortField = code;
    state.page = 1;
    return post({boolSearch: 'false', QueryJson: state.queryJson, pageNum: 1, pageSize: state.pageSize,
      sortField: code, sortType: 'desc', dstyle: 'listmode', boolSortSearch: 'true', sentenceSearch: 'false',
      productStr: 'YSTT4HG0,LSTPFY1C,JUP3MUPD,MPMFIG1A', aside: '', searchFrom: '资源范围：总库', CurPage: 1,
      SearchFrom: 1});
  }
  document.addEventListener('click', function(ev){
    var t = ev.target;
    var sortBox = t.closest('.sort');
    if (sortBox && t.closest('.sort-list a')) {
      var a = t.closest('.sort-list a');
      var span = sortBox.querySelector('.sort-default span');
      span.setAttribute('value', a.getAttribute('value'));
      span.textContent = a.textContent;
      sortBox.classList.remove('open');
      if (sortBox.classList.contains('reopt')) {
        var special = sortBox.parentNode.querySelector('.sort.special');
        var code = a.getAttribute('value');
        var locked = code === 'SU' || code === 'CLC';
        special.classList.toggle('disableclick', locked);
        if (locked) { var s = special.querySelector('.sort-default span'); s.setAttribute('value', '%='); s.textContent = '相关'; }
        else if (special.querySelector('.sort-default span').getAttribute('value') === '%=') {
          var s2 = special.querySelector('.sort-default span'); s2.setAttribute('value', '%'); s2.textContent = '模糊'; }
      }
      ev.preventDefault();
      return;
    }
    if (sortBox && t.closest('.sort-default')) {
      if (!sortBox.classList.contains('disableclick')) sortBox.classList.toggle('open');
      return;
    }
    if (t.closest('#gradetxt .add-group')) { addRow(); return; }
    var tab = t.closest('.search-classify-menu li[name]');
    if (tab) { ev.preventDefault(); showTab(tab.getAttribute('name')); return; }
    var pageLink = t.closest('#briefBox a[data-curpage]');
    if (pageLink) { ev.preventDefault(); turnPage(parseInt(pageLink.getAttribute('data-curpage'), 10)); return; }
    var sortLink = t.closest('#briefBox #orderList li[data-sort]');
    if (sortLink) { ev.preventDefault(); sortBy(sortLink.getAttribute('data-sort')); return; }
  });
  function addRow(){
    var all = rows();
    if (all.length >= 10) return;
    var copy = all[all.length - 1].cloneNode(true);
    var n = all.length + 1;
    var input = copy.querySelector('input[data-tipid]');
    input.value = ''; input.setAttribute('data-tipid', 'gradetxt-' + n);
    copy.querySelector('.sort.logical').classList.remove('hidden');
    all[all.length - 1].parentNode.insertBefore(copy, all[all.length - 1].nextSibling);
  }
  document.querySelector('.search-middle input.btn-search').addEventListener('click', function(ev){
    ev.preventDefault(); search(); });
  document.querySelector('.search-buttons input.btn-search').addEventListener('click', function(ev){
    ev.preventDefault(); search(); });
  window.cnkiSearch = {
    getSearchJsonInfo: function(){ return JSON.stringify(buildQueryJson()); },
    setQueryJson: function(q){ state.queryJson = typeof q === 'string' ? q : JSON.stringify(q); },
    search: search, turnPage: turnPage, sortBy: sortBy
  };
})();
"""


def _picker(cls: str, current: tuple[str, str], options: list[tuple[str, str]], *, attr_title: bool) -> str:
    label, value = current
    opts = "".join(
        f'<li><a href="javascript:void(0);"{f" title={escape(lbl)!r}" if attr_title else ""} value="{escape(val)}">'
        f"{escape(lbl)}</a></li>"
        for lbl, val in options
    )
    return (
        f'<div class="sort {cls}"><div class="sort-default"><span value="{escape(value)}">{escape(label)}</span>'
        f'<i class="icon-sort"></i></div><div class="sort-list"><ul>{opts}</ul></div></div>'
    )


def _row(n: int, label: str, code: str) -> str:
    logical = _picker(
        "logical" + (" hidden" if n == 1 else ""),
        ("AND", "AND"),
        [("AND", "AND"), ("OR", "OR"), ("NOT", "NOT")],
        attr_title=False,
    )
    field = _picker("reopt", (label, code), list(FIELDS), attr_title=True)
    locked = code in _LOCKED_MATCH
    match_current = ("相关", "%=") if locked else (("精确", "=") if code == "AU" else ("模糊", "%"))
    match = _picker(
        "special" + (" disableclick" if locked else ""),
        match_current,
        [("精确", "="), ("模糊", "%")],
        attr_title=False,
    )
    return (
        f'<dd data-row="{n}">{logical}<div class="input-box">{field}'
        f'<input type="text" data-tipid="gradetxt-{n}" maxlength="120" autocomplete="off" '
        f'placeholder="中文文献、外文文献" style="width:380px">{match}</div></dd>'
    )


def render_advsearch(links: Links, visitor: Visitor, *, expert: bool = False) -> str:
    """The search page; `expert` (`?type=expert`) opens the 专业检索 tab instead of 高级检索."""
    from cnki_mcp.sim.pages.common import header_html

    rows = "".join(_row(i + 1, label, code) for i, (label, code) in enumerate(_DEFAULT_ROWS))
    grid_url = links.kns("/kns8s/brief/grid")
    hide_grade = ' style="display: none;"' if expert else ""
    hide_major = "" if expert else ' style="display: none;"'
    tabs = "".join(
        f'<li name="{name}"{" class=cur" if (name == "majorSearch") == expert else ""}>'
        f'<a href="javascript:void(0);">{label}</a></li>'
        for name, label in (("gradeSearch", "高级检索"), ("majorSearch", "专业检索"))
    )
    dates = (
        '<div class="date-box"><span>时间范围：</span><span>发表时间</span>'
        '<input id="datebox0" type="text" placeholder="起始年" autocomplete="off"> - '
        '<input id="datebox1" type="text" placeholder="结束年" autocomplete="off"></div>'
    )
    # The open tab's panel comes first: clients of either tab click the first `input.btn-search`
    # (this product's template capture on 高级检索, cnki-deepsearch on 专业检索; docs/simulator.md).
    major = (
        f'<div class="majorSearch" id="majorSearch"{hide_major}>'
        '<textarea class="textarea-major majorSearch" '
        "placeholder=\"例：SU=('经济发展'+'可持续发展')*'转变'-'泡沫'\"></textarea>"
        '<div class="search-buttons"><input type="button" class="btn-search" value="检索">'
        '<a class="reset" href="javascript:void(0);">重置条件</a></div>'
        "</div>"
    )
    grade = (
        f'<div class="gradeSearch" id="gradeSearch"{hide_grade}>'
        f'<dl id="gradetxt">{rows}<dt><a class="add-group" href="javascript:void(0);">+</a></dt></dl>'
        '<div class="extend-box"><label><input type="checkbox" data-id="EN" checked>中英文扩展</label>'
        '<label><input type="checkbox" data-id="TY">同义词扩展</label></div>'
        '<div class="search-middle"><input type="button" class="btn-search" value="检索">'
        '<a class="reset" href="javascript:void(0);">重置条件</a></div>'
        "</div>"
    )
    panels = major + grade if expert else grade + major
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        f"<title>高级检索-中国知网</title><style>{_CSS}</style></head><body>"
        f"{header_html(visitor, links)}"
        f'<div class="search-box"><ul class="search-classify-menu">{tabs}</ul>'
        f"{panels}{dates}</div>"
        '<div class="result-con"><div id="ModuleSearchResult"><div id="briefBox"></div></div></div>'
        f'<input id="gridUrl" type="hidden" value="{escape(grid_url)}">'
        f"<script>{_SCRIPT}</script></body></html>"
    )
