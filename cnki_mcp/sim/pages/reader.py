"""The HTML reader: `#XMLContent > #paperRead` with a `.catalogboxs` table of contents.

Heading mapping: the paper title is `.js-prefix h1.Chapter`; a corpus section of level N is an
`h{N+1}` (level 1 -> h2, 2 -> h3, capped at h6); the 参考文献 section is `h3#bibliography`.
Every TOC entry (`.catalogboxs span.tit`) equals the text of one heading.
Modes: `trial` shows the abstract and the first section, then 试读结束 / 购买后阅读全文;
`lazy` puts only two sections in the DOM and appends the rest by script, one per ~150 ms;
`slider` shows the first section then `.read-btn-boxXml .slider-wrapper` (滑动验证); a drag of
≥ 200 px or the fallback button POSTs `returnUrl` to `/verify/solve` and reloads."""

from __future__ import annotations

from ..corpus import SimRecord, SimSection
from ..links import Links, Visitor
from .common import esc, page_shell, script_json

BIBLIOGRAPHY = "参考文献"
LAZY_EAGER = 2
LAZY_STEP_MS = 150
_FIGURE_SVG = (
    "data:image/svg+xml;utf8,"
    "%3Csvg xmlns='http://www.w3.org/2000/svg' width='120' height='60'%3E"
    "%3Crect width='120' height='60' fill='%23dde'/%3E%3Cpath d='M0 60 L40 20 L80 40 L120 0' "
    "stroke='%23336' fill='none'/%3E%3C/svg%3E"
)


def _sections(record: SimRecord) -> list[SimSection]:
    secs = list(record.fulltext)
    if record.references and not any(s.heading.strip() == BIBLIOGRAPHY for s in secs):
        refs = "\n".join(f"[{i}] {r}" for i, r in enumerate(record.references, 1))
        secs.append(SimSection(BIBLIOGRAPHY, 1, refs))
    return secs


def _section_html(index: int, sec: SimSection, references: int = 0) -> str:
    """One section; with a reference list its first paragraph ends in a `<sup>[k]</sup>` note
    marker, and every third section has a MathML formula and a line with sub/superscripts (the
    site writes `V<sub>n+1</sub>`, `H<sub>2</sub>S`, `<sup>1,2</sup>`: docs/simulator.md "Reader")."""
    if sec.heading.strip() == BIBLIOGRAPHY:
        head = f'<h3 id="bibliography">{esc(sec.heading)}</h3>'
    else:
        n = min(max(sec.level, 1) + 1, 6)
        head = f'<h{n} id="sec{index}" class="anchor-tag">{esc(sec.heading)}</h{n}>'
    lines = [line for line in sec.text.split("\n") if line.strip()]
    marker = f"<sup>[{index % references + 1}]</sup>" if references and sec.heading.strip() != BIBLIOGRAPHY else ""
    paras = "".join(f"<p>{esc(line)}{marker if i == 0 else ''}</p>" for i, line in enumerate(lines))
    extra = ""
    if sec.heading.strip() != BIBLIOGRAPHY:
        # Figures and formulas, as real readers have: counted as non-text elements.
        if index % 3 == 1:
            extra = (
                f'<div class="area_img"><img src="{_FIGURE_SVG}" alt="图{index}">'
                f'<p class="imgtitle">图{index}</p></div>'
            )
        elif index % 3 == 2:
            extra = (
                '<p class="formula"><math xmlns="http://www.w3.org/1998/Math/MathML">'
                f"<mi>y</mi><mo>=</mo><msup><mi>x</mi><mn>{index}</mn></msup><mo>+</mo>"
                "<mfrac><mn>1</mn><mrow><mi>n</mi><mo>+</mo><mn>1</mn></mrow></mfrac></math></p>"
                "<p>式中，x<sub>i</sub>为第i个样本的指标值，n为样本量，单位为10<sup>-3</sup>。</p>"
            )
    return f'<div class="p1" data-sec="{index}">{head}{paras}{extra}</div>'


def _catalog(secs: list[SimSection]) -> str:
    items = "".join(
        f'<li><a href="#{"bibliography" if s.heading.strip() == BIBLIOGRAPHY else f"sec{i}"}">'
        f'<span class="tit">{esc(s.heading)}</span></a></li>'
        for i, s in enumerate(secs)
    )
    return f'<div class="catalog-wrap"><div class="catalogboxs"><h4>目录</h4><ul>{items}</ul></div></div>'


def _prefix(record: SimRecord) -> str:
    authors = ";".join(a.name for a in record.authors)
    abstract = f'<div class="abstract"><p>摘要：{esc(record.abstract)}</p></div>' if record.abstract else ""
    return (
        f'<div class="js-prefix"><h1 class="Chapter">{esc(record.title)}</h1>'
        f'<div class="author"><p>{esc(authors)}</p></div>{abstract}</div>'
    )


def _slider(links: Links) -> str:
    solve = script_json(links.kns("/verify/solve"))
    return (
        '<div class="read-btn-boxXml"><p class="read-tip">继续阅读全文需完成滑动验证</p>'
        '<div class="slider-wrapper" style="position:relative;width:320px;height:40px;background:#eee;">'
        '<div class="slider-track-text" style="line-height:40px;text-align:center;">滑动验证，继续阅读全文</div>'
        '<div class="slider-handle" style="position:absolute;left:0;top:0;width:40px;height:40px;'
        'background:#36c;cursor:pointer;"></div></div>'
        '<button type="button" class="slider-fallback">继续阅读全文</button></div>'
        "<script>(function(){var url=" + solve + ";"
        "function solve(){fetch(url,{method:'POST',credentials:'include',"
        "headers:{'Content-Type':'application/x-www-form-urlencoded'},"
        "body:'returnUrl='+encodeURIComponent(location.href)}).then(function(){location.reload();});}"
        "var box=document.querySelector('.read-btn-boxXml'),h=box.querySelector('.slider-handle'),x0=null;"
        "h.addEventListener('mousedown',function(e){x0=e.clientX;e.preventDefault();});"
        "document.addEventListener('mousemove',function(e){if(x0===null)return;"
        "h.style.left=Math.max(0,Math.min(280,e.clientX-x0))+'px';});"
        "document.addEventListener('mouseup',function(e){if(x0===null)return;var dx=e.clientX-x0;x0=null;"
        "if(dx>=200){solve();}else{h.style.left='0px';}});"
        "box.querySelector('.slider-fallback').addEventListener('click',solve);})();</script>"
    )


def _lazy_script(pending: list[str]) -> str:
    return (
        "<script>(function(){var parts=" + script_json(pending) + ",i=0;"
        "var host=document.getElementById('paperRead');"
        "function next(){if(i>=parts.length)return;var box=document.createElement('div');"
        "box.innerHTML=parts[i++];while(box.firstChild){host.appendChild(box.firstChild);}"
        f"setTimeout(next,{LAZY_STEP_MS});}}"
        f"setTimeout(next,{LAZY_STEP_MS});}})();</script>"
    )


def render_reader(
    record: SimRecord, links: Links, visitor: Visitor, *, trial: bool, lazy: bool, slider: bool
) -> str:
    secs = _sections(record)
    blocks = [_section_html(i, s, len(record.references)) for i, s in enumerate(secs)]
    tail = ""
    scripts = ""
    if trial:
        shown = blocks[:1]
        shown.append(
            '<div class="trial-end"><p class="trial-tip">试读结束，购买后阅读全文</p>'
            f'<a class="trial-buy" target="_blank" href="{esc(links.download(record.id, "pdf"))}">购买后阅读全文</a></div>'
        )
    elif slider:
        shown = blocks[:1]
        tail = _slider(links)
    elif lazy:
        shown = blocks[:LAZY_EAGER]
        scripts = _lazy_script(blocks[LAZY_EAGER:]) if len(blocks) > LAZY_EAGER else ""
    else:
        shown = blocks
    body = (
        '<div class="main-wrap">'
        f"{_catalog(secs)}"
        f'<div id="XMLContent"><div id="paperRead">{_prefix(record)}{"".join(shown)}</div>{tail}</div>'
        f"</div>{scripts}"
    )
    head = f'<meta name="citation_title" content="{esc(record.title)}">'
    return page_shell(f"{record.title} - HTML阅读 - 中国知网", body, visitor, links, head_extra=head)


def render_reader_paywall(record: SimRecord, links: Links) -> str:
    """The bar.cnki.net HTML阅读 entry when the account may not read the paper: 200, a tip page
    naming the file, 【绑定账户】账户余额不足，请充值或开通会员后下载全文。 and buttons, no article
    (saved page reader/pluginsx_bar_htmlread_paywall_2026.html; docs/simulator.md "Reader")."""
    authors = "".join(f"{esc(a.name)};" for a in record.authors)
    order = esc(links.download(record.id, "pdf"))
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>中国知网</title></head><body>'
        f'<div class="herder"><div class="header-content"><a href="{esc(links.www("/"))}">中国知网</a></div></div>'
        '<div class="tip-box"><div class="tip-main"><div class="tip-header clearfix"><div class="tip-info">'
        f'<div class="tip-title caj">{esc(record.title)}.caj</div>'
        f'<div class="tip-inter-box"><div class="tip-author">{authors}</div>'
        f'<div class="tip-org">·《{esc(record.source or "")}》,{esc(record.year or "")}年</div></div>'
        '<a href="javascript:void(0)" class="tip-download"> 作者本人免费下载 &gt; </a></div></div>'
        '<div class="tip-body o-style2"><div class="tip-intro">'
        '<span class="organizationTip">【绑定账户】账户余额不足，请充值或开通会员后下载全文。</span>'
        "<span>继续阅读：</span></div>"
        f'<a class="tip-btn tip-btn2 htmlReadLogin" href="{order}"> 请使用个人账号下载阅读 &gt; </a>'
        "</div></div></div></body></html>"
    )
