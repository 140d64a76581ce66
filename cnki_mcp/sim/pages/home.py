"""The www.cnki.net home page: header identity, search box, and the ECP login box."""

from __future__ import annotations

from ..links import Links, Visitor
from .common import ecp_login_box, esc, page_shell


def render_home(links: Links, visitor: Visitor) -> str:
    home = links.www("/")
    login_box = "" if visitor.personal_name else ecp_login_box(links, home, visible=False)
    body = (
        '<div class="index-wrapper"><div class="search-main">'
        f'<form id="searchForm" method="get" action="{esc(links.kns("/kns8s/defaultresult/index"))}">'
        '<div class="search-input"><input type="text" id="txt_SearchText" name="kw" '
        'placeholder="中文文献、外文文献" autocomplete="off">'
        '<input type="submit" class="search-btn" value="检索"></div></form>'
        f'<a class="adv-search" href="{esc(links.kns("/kns8s/AdvSearch"))}">高级检索</a></div>'
        f'<div class="home-login">{login_box}</div></div>'
    )
    return page_shell("中国知网", body, visitor, links)
