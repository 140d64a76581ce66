"""The www.cnki.net home page: header identity, the one-box search, and the ECP login box.

Search area as on the saved home page (`home-login/pluginsx_www_home_saved_2026.html`): the field
picker `#DBFieldBox.sort.reopt` (`.sort-default > span`, list `#DBFieldList.sort-list`, hidden,
`li[value] > a[value="SU$%=|"]`…), the box `textarea#txt_SearchText.search-input` and the button
`div.search-btn`. Searching opens the result page in the same tab:
`kns.cnki.net/kns8s/defaultresult/index?crossids=…&korder=<code>&kw=<text>` (the URL the saved
result pages were saved from)."""

from __future__ import annotations

from ..links import Links, Visitor
from .common import ecp_login_box, esc, page_shell, script_json
from .onebox import CROSSIDS

# (label, the picker's value) as on the saved home page; the code before `$` is the result page's korder.
HOME_FIELDS: tuple[tuple[str, str], ...] = (
    ("主题", "SU$%=|"),
    ("篇关摘", "TKA$%=|"),
    ("关键词", "KY$=|"),
    ("篇名", "TI$%=|"),
    ("全文", "FT$%=|"),
    ("作者", "AU$=|"),
    ("第一作者", "FI$=|"),
    ("通讯作者", "RP$%=|"),
    ("作者单位", "AF$%"),
    ("基金", "FU$%|"),
    ("摘要", "AB$%=|"),
    ("小标题", "CO$%=|"),
    ("参考文献", "RF$%=|"),
    ("分类号", "CLC$=|??"),
    ("文献来源", "LY$%=|"),
    ("DOI", "DOI$=|?"),
)

_SCRIPT = r"""
(function(){
  var cfg = JSON.parse(document.getElementById('homeConfig').textContent);
  var box = document.getElementById('DBFieldBox'), list = document.getElementById('DBFieldList');
  var korder = 'SU';
  document.addEventListener('click', function(ev){
    var t = ev.target;
    var opt = t.closest('#DBFieldList a[value]');
    if (opt) {
      korder = opt.getAttribute('value').split('$')[0];
      box.querySelector('.sort-default span').textContent = opt.textContent;
      document.getElementById('txt_sug').value = opt.textContent;
      list.querySelectorAll('li').forEach(function(li){ li.classList.remove('cur'); });
      opt.parentNode.classList.add('cur');
      list.style.display = 'none'; ev.preventDefault(); return;
    }
    if (t.closest('#DBFieldBox')) { list.style.display = list.style.display === 'none' ? 'block' : 'none'; return; }
    if (t.closest('.search-form .search-btn')) { ev.preventDefault(); go(); }
  });
  document.getElementById('txt_SearchText').addEventListener('keydown', function(ev){
    if (ev.key === 'Enter') { ev.preventDefault(); go(); } });
  function go(){
    var kw = document.getElementById('txt_SearchText').value.trim();
    if (!kw) return;
    location.href = cfg.result + '?crossids=' + encodeURIComponent(cfg.crossids) + '&korder=' +
      encodeURIComponent(korder) + '&kw=' + encodeURIComponent(kw);
  }
})();
"""


def render_home(links: Links, visitor: Visitor) -> str:
    home = links.www("/")
    login_box = "" if visitor.personal_name else ecp_login_box(links, home, visible=False)
    options = "".join(
        f'<li{" class=cur" if i == 0 else ""} value="{v.split("$")[0]}"><a value="{esc(v)}">{esc(label)}</a></li>'
        for i, (label, v) in enumerate(HOME_FIELDS)
    )
    config = {"result": links.kns("/kns8s/defaultresult/index"), "crossids": CROSSIDS}
    body = (
        '<div class="searchmain"><ul class="search-tab"><li class="on" val="doc">检 索</li></ul>'
        '<div class="search-tab-content search-form cur">'
        '<input type="hidden" id="curdbcode" name="curdbcode" value="SCDB">'
        '<input type="hidden" id="txt_sug" name="txt_sug" value="主题">'
        '<div class="input-box clearfix">'
        '<div class="sort reopt" id="DBFieldBox" style="display: block;">'
        '<div class="sort-default"><span>主题</span><i class="sort-icon">▼</i></div>'
        f'<div id="DBFieldList" class="sort-list" style="display: none;"><ul>{options}</ul></div></div>'
        '<div class="search-input-wrap"><textarea class="search-input" id="txt_SearchText" name="txt_SearchText" '
        'autocomplete="off" placeholder="中文文献、外文文献" maxlength="500" rows="2"></textarea></div>'
        '<div><div class="search-btn"><i class="sprite-icon"></i>检索</div></div></div>'
        '<div class="readvce">'
        f'<a href="{esc(links.kns("/kns8s/AdvSearch"))}" target="_blank" id="highSearch">高级检索 &gt;</a></div>'
        "</div></div>"
        f'<div class="home-login">{login_box}</div>'
        f'<script type="application/json" id="homeConfig">{script_json(config)}</script>'
        f"<script>{_SCRIPT}</script>"
    )
    return page_shell("中国知网", body, visitor, links)
