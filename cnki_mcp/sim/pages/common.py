"""Shared pieces of the simulated pages: escaping, the kns/ecp header, the ECP login box, the shell.

Header facts (2026 captures `home-login/*`, `detail-kcms2/*`): identity lives in
`#headerBox .ecp_header_login_area`; an anonymous visitor sees 机构登录 / 个人登录 (and 注册);
a personal account shows `.ecp_header_personalName_loginbg > .ecp_header_personalName`; an
institution shows its name in `.ecp_header_unitName`. The ECP login modal
(`div.ecp_personalLoginBox`, hidden) sits inside the header, so its `h1` (自动登录) comes BEFORE
the page's real title in document order, as on real pages."""

from __future__ import annotations

import base64
import html
import json
import struct
import zlib

from ..links import Links, Visitor

# Marker substituted in the browser with the current page URL (see `_RETURN_SCRIPT`).
RETURN_PLACEHOLDER = "__SIM_RETURN_URL__"


def esc(text: object) -> str:
    """Escape text for element content and quoted attribute values."""
    return html.escape("" if text is None else str(text), quote=True)


def script_json(value: object) -> str:
    """JSON safe to embed inside a <script> element (no `</script>`, no HTML-significant chars)."""
    raw = json.dumps(value, ensure_ascii=True)
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def tiny_png(width: int, height: int, rgb: tuple[int, int, int], stripe: tuple[int, int, int]) -> bytes:
    """A small valid PNG (solid colour with a diagonal stripe); used for captcha/vericode images."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            rows.extend(stripe if abs(x - y * width // max(height, 1)) < 3 else rgb)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def png_data_url(width: int, height: int, rgb: tuple[int, int, int], stripe: tuple[int, int, int]) -> str:
    return "data:image/png;base64," + base64.b64encode(tiny_png(width, height, rgb, stripe)).decode("ascii")


# Replaces RETURN_PLACEHOLDER in login links / hidden returnUrl fields with the page's own URL,
# so a header rendered without knowing the current URL still returns the visitor to it.
_RETURN_SCRIPT = (
    "<script>(function(){var p=" + script_json(RETURN_PLACEHOLDER) + ",u=location.href;"
    "document.querySelectorAll('a[data-sim-return]').forEach(function(a){"
    "a.href=a.href.split(encodeURIComponent(p)).join(encodeURIComponent(u)).split(p).join(encodeURIComponent(u));});"
    "document.querySelectorAll('input[data-sim-return]').forEach(function(i){i.value=u;});"
    "})();</script>"
)


def ecp_login_box(
    links: Links, return_url: str, *, visible: bool, error: str | None = None, standalone: bool = False
) -> str:
    """The ECP personal/institution login modal; a real form posting to `/login/submit`.

    Fields: `username`, `password`, `returnUrl`. With `return_url == RETURN_PLACEHOLDER` the
    hidden returnUrl is filled with `location.href` by the header script."""
    style = "" if visible else ' style="display: none;"'
    ret_attr = " data-sim-return" if return_url == RETURN_PLACEHOLDER else ""
    action = esc(links.kns("/login/submit"))
    err = esc(error or "")
    err_style = "" if error else ' style="display: none;"'
    box_class = "ecp_personalLoginBox ecp_loginPage" if standalone else "ecp_personalLoginBox"
    return (
        f'<div class="{box_class}"{style}>'
        "<p>个人登录</p>"
        '<div class="ecp-login-register"><span>立即注册</span></div>'
        '<div class="ecp_personalLoginCenter">'
        '<div class="ecp-menu">'
        '<span id="ecpAccountLogin" class="ecp-menu-active" '
        "onclick=\"simEcpTab(this,'account')\">账号登录</span>"
        '<span id="ecpSmsLogin" onclick="simEcpTab(this,\'sms\')">短信登录</span>'
        "</div>"
        f'<div class="ecp_loginErrMsg"{err_style}>{err}</div>'
        f'<form class="ecp_loginAccountBox" method="post" action="{action}">'
        f'<input type="hidden" name="returnUrl" value="{esc(return_url)}"{ret_attr}>'
        '<div class="ecp-account-login">'
        '<div class="ecp_userNameBox"><div class="ecp_user_icon ecp_sprite_img"></div>'
        '<input type="text" tabindex="1" placeholder="请输入用户名" class="ecp_userName" name="username" '
        'autocomplete="username"></div>'
        '<div class="ecp_passwordBox"><div class="ecp_pwd_icon ecp_sprite_img"></div>'
        '<input type="password" placeholder="请输入密码" tabindex="2" class="ecp_passWord" name="password" '
        'autocomplete="current-password"></div>'
        "</div>"
        '<div class="ecp-sms-login" style="display: none;">'
        '<div class="ecp_phoneBox"><input type="text" placeholder="请输入手机号码" maxlength="11" '
        'class="ecp_phone"></div>'
        '<div class="ecp_codeBox"><input type="text" maxlength="6" placeholder="请输入验证码" '
        'class="ecp_code"><p class="ecp-text-btn">发送验证码</p></div>'
        "</div>"
        '<div class="ecp_loginArea">'
        '<input tabindex="3" type="checkbox" id="ecpAutoLogin" class="ecp_checkedutoLogin">'
        '<h1><label for="ecpAutoLogin">自动登录</label></h1><h3 tabindex="4">找回密码</h3>'
        "</div>"
        '<button type="submit" class="ECP_UserLOgin ecp-account-login" tabindex="8">登录</button>'
        "</form>"
        "</div></div>"
        "<script>function simEcpTab(el,which){var box=el.closest('.ecp_personalLoginCenter');"
        "box.querySelectorAll('.ecp-menu span').forEach(function(s){s.classList.remove('ecp-menu-active');});"
        "el.classList.add('ecp-menu-active');"
        "box.querySelector('.ecp-account-login').style.display=which==='account'?'':'none';"
        "box.querySelector('.ecp-sms-login').style.display=which==='sms'?'':'none';}</script>"
    )


def _identity_area(visitor: Visitor, links: Links) -> str:
    login_href = esc(links.login(RETURN_PLACEHOLDER))
    parts: list[str] = ['<div class="ecp_header_login_status ecp_header_login_status1">']
    if visitor.institution:
        parts.append(
            '<div class="ecp_header_unit_loginbg" style="display: none">机构登录</div>'
            f'<div class="ecp_header_unitName" id="Ecp_top_orgName" title="{esc(visitor.institution)}">'
            f"{esc(visitor.institution)}</div>"
        )
    else:
        parts.append(
            f'<div class="ecp_header_unit_loginbg"><a href="{login_href}" data-sim-return>机构登录</a></div>'
            '<div class="ecp_header_unitName" style="display: none"></div>'
        )
    if visitor.personal_name:
        parts.append(
            '<div class="ecp_header_personal_loginbg" style="display: none;">个人登录</div>'
            '<div class="ecp_header_personalName_loginbg">'
            '<div class="ecp_header_personalName_icon"></div>'
            f'<div class="ecp_header_personalName" title="{esc(visitor.personal_name)}">'
            f"{esc(visitor.personal_name)}</div></div>"
            f'<a class="ecp_header_logout" href="{esc(links.kns("/login/logout"))}">退出登录</a>'
        )
    else:
        parts.append(
            f'<div class="ecp_header_personal_loginbg"><a class="ecp_header_login_link" href="{login_href}" '
            "data-sim-return>登录</a></div>"
            '<div class="ecp_header_personalName_loginbg" style="display: none;"></div>'
            f'<a class="ecp_header_register" href="{esc(links.www("/register"))}">注册</a>'
        )
    parts.append("</div>")
    return "".join(parts)


def _member_layer(visitor: Visitor) -> str:
    """The account drop-down every real header carries, hidden, logged in or not (saved pages
    `kns8s-grid/kaffu_waam_p1.html` anonymous with an empty name, `home-login/*` with one)."""
    name = esc(visitor.personal_name or "")
    title = f' title="{name}"' if name else ""
    return (
        '<div id="Ecp_top_logout_layer" class="tn-topmenulist tn-topmenulist-a tn-topmenulist-a-user" '
        'style="background: none; display: none"><div class="Ecp_members_wrap"><div class="Ecp_members_userinfo">'
        f'<div class="Ecp_info_right"><p class="Ecp_members_username"{title}>{name}</p></div></div></div></div>'
    )


def header_html(visitor: Visitor, links: Links) -> str:
    """The kns/ecp page header: navigation, identity area and the (hidden) ECP login modal."""
    nav = "".join(
        f'<li><a href="{esc(links.kns(path))}" target="_blank"><span title="{label}">{label}</span></a></li>'
        for label, path in (
            ("总库", "/kns8s/search"),
            ("学术期刊", "/kns8s/search?classid=YSTT4HG0"),
            ("学位论文", "/kns8s/search?classid=LSTPFY1C"),
            ("会议", "/kns8s/search?classid=JUP3MUPD"),
            ("报纸", "/kns8s/search?classid=MPMFIG1A"),
        )
    )
    return (
        '<div id="ModuleHeader"><header>'
        '<div class="nxgpheader">'
        f'<a class="cnkihome" id="cnki-logo" href="{esc(links.www("/"))}"><i class="img-logo">中国知网</i></a>'
        f'<div class="nxgphome-l"><ul id="headResourceHomePage">{nav}</ul></div>'
        f'<div class="nxgphome-r"><a class="nxgp-title" href="{esc(links.kns("/kns8s/AdvSearch"))}">高级检索</a></div>'
        "</div>"
        '<div id="headerBox"><div class="ecp_header_container"><div class="ecp_header_right">'
        '<div class="ecp_header_login_area">'
        f"{_identity_area(visitor, links)}"
        f"{ecp_login_box(links, RETURN_PLACEHOLDER, visible=False)}"
        f"{_member_layer(visitor)}"
        "</div></div></div></div>"
        "</header></div>"
        f"{_RETURN_SCRIPT}"
    )


def page_shell(title: str, body_html: str, visitor: Visitor, links: Links, *, head_extra: str = "") -> str:
    """A full document: `title` is plain text (escaped here); `body_html` and `head_extra` are markup."""
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title>{head_extra}</head>"
        f"<body>{header_html(visitor, links)}{body_html}</body></html>"
    )
