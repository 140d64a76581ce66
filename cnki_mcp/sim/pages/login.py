"""The standalone login page (login.cnki.net-like).

No real capture of login.cnki.net exists; the page shows the ECP personal login box seen embedded
in real pages (`#ecpAccountLogin` 账号登录 / `#ecpSmsLogin`, `input.ecp_userName`, a password
input, `.ecp_loginErrMsg`), visible, as a form POSTing `username`, `password`, `returnUrl` to
`/login/submit`."""

from __future__ import annotations

from ..links import Links
from .common import ecp_login_box, esc


def render_login(return_url: str, links: Links, *, error: str | None = None) -> str:
    box = ecp_login_box(links, return_url, visible=True, error=error, standalone=True)
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>登录 - 中国知网</title></head>'
        '<body><div class="login-page"><div class="login-header">'
        f'<a class="cnkihome" href="{esc(links.www("/"))}"><i class="img-logo">中国知网</i></a>'
        "<span>用户登录</span></div>"
        f'<div class="login-main">{box}</div></div></body></html>'
    )
