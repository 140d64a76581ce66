"""Verification pages: the kns blockPuzzle slider page and the grid's `vericodeForm` fragment.

Slider page structure from `captcha/pluginsx_verify_blockpuzzle_rendered_2026.html`:
`<title>安全验证</title>`, `div#app div.verifybox`, `.verifybox-top` 请完成安全验证,
`.verify-img-panel img[src^=data:image/png]`, `.verify-bar-area span.verify-msg` 向右滑动完成验证,
`.verify-move-block`. A drag of ≥ 200 px (or the fallback button) submits a POST form with
`returnUrl` (and, for a challenge the site issued, `ident` and `captchaId`) to `/verify/solve`.
A verify URL without a challenge the site issued shows `render_verify_invalid`: no puzzle."""

from __future__ import annotations

from ..links import Links
from .common import esc, png_data_url

SOLVE_DRAG_PX = 200


def render_verify(return_url: str, links: Links, *, ident: str = "", captcha_id: str = "") -> str:
    bg = png_data_url(62, 31, (206, 214, 228), (90, 110, 160))
    piece = png_data_url(9, 31, (120, 140, 190), (60, 70, 120))
    action = esc(links.kns("/verify/solve"))
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>安全验证</title></head><body>'
        '<div id="app"><div class="login-bg"><div class="mask">'
        '<div class="verifybox" style="max-width: 340px;">'
        '<div class="verifybox-top">请完成安全验证</div>'
        '<div class="verifybox-bottom" style="padding: 15px;"><div style="position: relative;">'
        '<div class="verify-img-out" style="height: 160px;"><div class="verify-img-panel" '
        'style="width: 310px; height: 155px;">'
        f'<img src="{bg}" alt="" style="width: 100%; height: 100%; display: block;"></div></div>'
        '<div class="verify-bar-area" style="position: relative; width: 310px; height: 40px; '
        'line-height: 40px; background: #f7f9fa;">'
        '<span class="verify-msg">向右滑动完成验证</span>'
        '<div class="verify-left-bar" style="position: absolute; left: 0; top: 0; width: 40px; height: 40px;">'
        '<div class="verify-move-block" tabindex="0" style="position: absolute; left: 0; top: 0; '
        'width: 40px; height: 40px; background: #fff; cursor: pointer;">'
        f'<div class="verify-sub-block" style="display: none;"><img src="{piece}" alt=""></div>'
        "</div></div></div></div>"
        f'<form class="verify-form" method="post" action="{action}">'
        f'<input type="hidden" name="returnUrl" value="{esc(return_url)}">'
        + (
            f'<input type="hidden" name="ident" value="{esc(ident)}">'
            f'<input type="hidden" name="captchaId" value="{esc(captcha_id)}">'
            '<input type="hidden" name="captchaType" value="blockPuzzle">'
            if captcha_id
            else ""
        )
        + '<button type="submit" class="verify-fallback">无法拖动？点击完成验证</button></form>'
        "</div></div></div></div></div>"
        "<script>(function(){var b=document.querySelector('.verify-move-block'),"
        "f=document.querySelector('.verify-form'),x0=null;"
        "b.addEventListener('mousedown',function(e){x0=e.clientX;e.preventDefault();});"
        "document.addEventListener('mousemove',function(e){if(x0===null)return;"
        "b.style.left=Math.max(0,Math.min(270,e.clientX-x0))+'px';});"
        "document.addEventListener('mouseup',function(e){if(x0===null)return;var dx=e.clientX-x0;x0=null;"
        f"if(dx>={SOLVE_DRAG_PX}){{f.submit();}}else{{b.style.left='0px';}}}});"
        "b.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key==='ArrowRight'){f.submit();}});"
        "})();</script></body></html>"
    )


def render_verify_invalid(links: Links) -> str:
    """The slider page opened without a challenge the site issued (missing or made-up `ident`,
    `captchaId` or `returnUrl`, or one already used): the person cannot solve anything here."""
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>安全验证</title></head><body>'
        '<div id="app"><div class="verifybox"><div class="verifybox-top">请完成安全验证</div>'
        '<p class="verify-error">验证参数错误或已失效，请返回原页面重新操作</p>'
        f'<p><a href="{esc(links.www("/"))}">返回中国知网首页</a></p></div></div></body></html>'
    )


def vericode_fragment(links: Links) -> str:
    """What the grid API returns instead of rows when it wants a code; solving accepts any code.

    The hidden returnUrl defaults to the advanced-search page and is replaced on submit with the
    URL of the page the fragment was inserted into (inline handlers run after innerHTML)."""
    img = png_data_url(60, 24, (240, 240, 232), (40, 40, 40))
    return (
        f'<form name="vericodeForm" method="post" action="{esc(links.kns("/verify/solve"))}" '
        'onsubmit="this.returnUrl.value=location.href">'
        '<div class="verifycode"><p class="verify-tip">检索操作过于频繁，请输入验证码</p>'
        '<input type="text" id="vericode" name="vericode" autocomplete="off" required>'
        f'<img id="vericodeImg" src="{img}" alt="验证码">'
        '<a id="changeVercode" href="javascript:void(0)" '
        "onclick=\"document.getElementById('vericodeImg').src+='';\">看不清，换一张</a></div>"
        f'<input type="hidden" name="returnUrl" value="{esc(links.kns("/kns8s/AdvSearch"))}">'
        '<input type="submit" class="btn-vericode" value="提交"></form>'
    )
