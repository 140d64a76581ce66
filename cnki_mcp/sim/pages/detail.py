"""The kcms2 article (abstract) page, 2026 layout, for every document type (2023 on request).

Structure follows `detail-kcms2/pluginsx_detail_kcms2_2026.html`: `div.doc > div.doc-top >
div.top-first > div.top-tip` (source line), `div.brief > div.wx-tit > h1 + h3#authorpart.author +
h3.author` (institutions), `div.row` blocks (摘要 / 关键词 / 基金资助 / `li.top-space` fields),
`div#DownLoadParts.operate` (entries open in new tabs), hidden `param*` inputs, and the 引文网络
block `#refpartdiv` whose `#quoted-*` containers are empty at load and filled lazily by a script
from the citation JSON API, as on the real page (`citation_block.py`, docs/citation-api.md).
The real 2026 capture carries no `citation_*` meta tags, so neither does this page (a record
with `extra["meta_tags"]` gets them, for the parser's meta path); everything a person reads is
in the DOM, as on the site."""

from __future__ import annotations

import re
import zlib
from datetime import date, timedelta
from typing import Literal
from urllib.parse import quote

from ..corpus import Corpus, SimRecord
from ..links import Links, Visitor
from .citation_block import citation_block
from .common import esc, header_html, page_shell, script_json
from .references import render_list

RESOURCE_BY_TYPE: dict[str, str] = {
    "期刊": "JOURNAL",
    "外文期刊": "JOURNAL",
    "博士": "DISSERTATION",
    "硕士": "DISSERTATION",
    "会议": "CONFERENCE",
    "报纸": "NEWSPAPER",
    "年鉴": "YEARBOOK",
    "图书": "BOOK",
}
THESIS_TYPES = ("博士", "硕士")
NEWSPAPER_ROLE = "(文)"  # newspaper bylines carry a role suffix, e.g. 林倩(文)


def offered_entries(record: SimRecord) -> tuple[str, ...]:
    """Which of pdf / caj / html the detail page offers (books read online only, yearbooks CAJ only,
    foreign journal papers none).

    Foreign papers (外文期刊, WWJD): CNKI holds their records, not their files. The saved grid
    `kns8s-grid/pluginsx_shuziwenwu_p1.html` gives every one of its 13 WWJD rows only an
    `a.icon-textlink` 原文链接 (to the record's kcms2 page), 收藏 and 引用, where its 报纸 and 期刊 rows
    carry the 下载 and HTML阅读 entries; the simulator's grid rows did the same while the detail page
    offered PDF and CAJ, a file the site does not give. `extra["formats"]` (a list) overrides the
    defaults."""
    override = record.extra.get("formats")
    if isinstance(override, list | tuple):
        return tuple(str(f) for f in override if f in ("pdf", "caj", "html"))
    if record.type == "外文期刊":
        return ()
    if record.type == "图书":
        return ("html",)
    if record.type == "年鉴":
        return ("caj",)
    if record.type == "报纸":
        return ("pdf", "caj")
    return ("pdf", "caj", "html") if record.fulltext else ("pdf", "caj")


# A byline carries one role: 林倩(文). Names that already end with a role keep theirs.
_HAS_ROLE = re.compile(r"[(（](?:文|著|编|译|主编|编著|编译|撰|撰文|执笔|整理|口述|摄|图|供稿)[)）]$")


def shown_author(record: SimRecord, name: str) -> str:
    if record.type != "报纸" or _HAS_ROLE.search(name):
        return name
    return name + NEWSPAPER_ROLE


def _institutions(record: SimRecord) -> list[str]:
    out: list[str] = []
    for a in record.authors:
        out += [i for i in a.institutions if i not in out]
    return out


def _page_range(record: SimRecord) -> tuple[str, str]:
    if not record.pages:
        return "", ""
    first, _, last = record.pages.partition("-")
    return first.strip(), (last or first).strip()


def _meta(record: SimRecord) -> str:
    tags: list[tuple[str, str]] = [("citation_title", record.title)]
    tags += [("citation_author", shown_author(record, a.name)) for a in record.authors]
    tags += [("citation_author_institution", i) for i in _institutions(record)]
    if record.source:
        if record.type in ("期刊", "外文期刊"):
            tags.append(("citation_journal_title", record.source))
        elif record.type == "会议":
            tags.append(("citation_conference_title", record.source))
        elif record.type in THESIS_TYPES:
            tags.append(("citation_dissertation_institution", record.source))
    # No publication-date meta: the real kcms2 page has none (saved page
    # detail-kcms2/pluginsx_detail_kcms2_2026.html; docs/simulator.md "Dates and meetings").
    # A journal paper's full date is on the grid (td.date); conference, newspaper and
    # thesis dates are labelled rows below.
    if record.volume:
        tags.append(("citation_volume", record.volume))
    if record.issue:
        tags.append(("citation_issue", record.issue))
    first, last = _page_range(record)
    if first:
        tags += [("citation_firstpage", first), ("citation_lastpage", last)]
    if record.doi:
        tags.append(("citation_doi", record.doi))
    return "".join(f'<meta name="{n}" content="{esc(v)}">' for n, v in tags if v)


def _source_line(record: SimRecord, links: Links) -> str:
    src = record.source or ""
    year = str(record.year or "")
    if record.type in ("期刊", "外文期刊") and src:
        jhref = esc(links.journal(src))
        parts = [f'<a target="_blank" href="{jhref}">{esc(src)} .</a>']
        if record.issue or record.volume:
            vol = f" , {esc(record.volume)}" if record.volume else ""
            iss = f" ({esc(record.issue)})" if record.issue else ""
            parts.append(f'<a target="_blank" href="{jhref}">{esc(year)}{vol}{iss}</a>')
        if record.pages:
            parts.append(f"<span>: {esc(record.pages)}</span>")
        parts.append(
            f'<a target="_blank" title="查看该刊数据库收录来源" href="{jhref}">查看该刊数据库收录来源</a>'
        )
        return " ".join(parts)
    if record.type in THESIS_TYPES and src:
        return (
            f'<a target="_blank" href="{esc(links.journal(src))}">{esc(src)} .</a>'
            f'<span class="degree-year">{esc(year)}</span>'
        )
    if record.type in ("会议", "报纸") and src:
        when = record.date or year
        return f'<a target="_blank" href="{esc(links.journal(src))}">{esc(src)} .</a><span>{esc(when)}</span>'
    label = record.publisher or src
    return f'<span class="source">{esc(label)}</span><span>{esc(year)}</span>' if label else ""



def _author_code(name: str, institution: str | None) -> str:
    """The page's hidden author code: one person's (two co-authors sharing a name differ)."""
    return str(zlib.crc32(f"{name}|{institution or ''}".encode()) % 10**12).zfill(12)

def _authors(record: SimRecord, links: Links) -> str:
    insts = _institutions(record)
    spans = []
    for a in record.authors:
        # `时郁婷<sup>1,2</sup>`: the numbers of every institution of the author (saved page
        # detail-kcms2/pluginsx_detail_kcms2_2026.html)
        marks = ",".join(str(insts.index(i) + 1) for i in a.institutions)
        sup = f"<sup>{marks}</sup>" if marks and len(insts) > 1 else ""
        spans.append(
            f'<span><a target="_blank" href="{esc(links.author(a.name, a.institution))}">'
            f"{esc(shown_author(record, a.name))}{sup}</a>"
            f'<input class="authorcode" type="hidden" value="{esc(_author_code(a.name, a.institution))}">'
            "</span>"
        )
    out = f'<h3 class="author" id="authorpart">{"".join(spans)}</h3>'
    if insts:
        numbered = len(insts) > 1
        old_layout = is_layout_2023(record)
        link_class = ' class="author"' if old_layout else ""
        items = "".join(
            f'<span><a{link_class} target="_blank" href="{esc(links.kns("/kcms2/organ/detail?name=" + quote(inst)))}">'
            f"{f'{i}.' if numbered else ''}{esc(inst)}</a></span>"
            for i, inst in enumerate(insts, 1)
        )
        # 2023: a bare `h3` (no class) with `span > a.author`; 2026: `h3.author > span > a`.
        out += f"<h3>{items}</h3>" if old_layout else f'<h3 class="author">{items}</h3>'
    return out


def title_markup(record: SimRecord) -> str:
    """The `h1` content: CNKI prints formulas there as markup (`外施Ca<sup>2+</sup>、ABA及H<sub>3</sub>PO<sub>4</sub>…`,
    the Zotero CNKI translator's kcms2 test page); `extra["title_html"]` is that markup, whose text is
    `title`. Other records' titles are plain text."""
    markup = record.extra.get("title_html")
    return markup if isinstance(markup, str) and markup else esc(record.title)


def is_layout_2023(record: SimRecord) -> bool:
    """`extra["layout"] == "kcms2-2023"` renders the 2023 generation of the article page
    (bare institution `h3`, funds as plain text); every other record gets the 2026 one."""
    return record.extra.get("layout") == "kcms2-2023"


def online_time(record: SimRecord) -> str | None:
    """The 在线公开时间 row: an online-first paper's online date; a journal paper in an issue
    shows one too, some days after its 发表时间 and with a time of day (saved page
    detail-kcms2/pluginsx_detail_kcms2_2026.html: 2026 (02), grid date 2026-01-20, row
    `2026-01-29 09:01`), fixed per record so pages repeat."""
    if record.online_first:
        return record.date
    if record.type != "期刊" or not record.date:
        return None
    try:
        published = date.fromisoformat(record.date)
    except ValueError:
        return None
    seed = zlib.crc32(("online:" + record.id).encode())
    minute = seed % (14 * 60)
    shown = published + timedelta(days=1 + (seed >> 10) % 20)
    return f"{shown.isoformat()} {8 + minute // 60:02d}:{minute % 60:02d}"


def _row_item(label: str, value: str, p_class: str = "") -> str:
    cls = f' class="{p_class}"' if p_class else ""
    return f'<li class="top-space"><span class="rowtit">{label}</span><p{cls}>{esc(value)}</p></li>'


def _field_rows(record: SimRecord) -> str:
    items: list[str] = []
    ex = record.extra
    if record.doi:
        items.append(_row_item("DOI：", record.doi))
    if ex.get("album"):
        items.append(_row_item("专辑：", str(ex["album"])))
    if ex.get("topic"):
        items.append(_row_item("专题：", str(ex["topic"])))
    if record.classification:
        items.append(_row_item("分类号：", record.classification, "clc-code"))
    if record.type in THESIS_TYPES:
        if record.supervisor:
            items.append(_row_item("导师：", record.supervisor))
        if ex.get("major"):
            items.append(_row_item("学科专业：", str(ex["major"])))
        if record.source:
            items.append(_row_item("学位授予单位：", record.source))
        items.append(_row_item("学位类型：", record.type))
        if record.year:
            items.append(_row_item("学位年度：", str(record.year)))
    if record.type == "会议":
        if record.conference:
            items.append(_row_item("会议名称：", record.conference))
        if record.date:
            items.append(_row_item("会议时间：", record.date))
        if record.place:
            items.append(_row_item("会议地点：", record.place))
    if record.type == "报纸":
        if record.date:
            items.append(_row_item("报纸日期：", record.date))
        if ex.get("edition"):
            items.append(_row_item("版号：", str(ex["edition"])))
    if record.pages and record.type in ("会议", "图书", "年鉴"):
        # Proceedings papers and yearbook/book sections give their pages as a labelled row (the
        # Zotero CNKI translator reads 页码 there); only a journal's source line carries them.
        items.append(_row_item("页码：", record.pages))
    if record.type in ("图书", "年鉴"):
        if record.publisher:
            items.append(_row_item("出版社：", record.publisher))
        if record.year:
            items.append(_row_item("出版时间：", str(record.year)))
    online = online_time(record)
    if online:
        items.append(_row_item("在线公开时间：", f"{online}（知网平台在线公开时间，不代表文献的发表时间）"))
    return f'<div class="row"><ul>{"".join(items)}</ul></div>' if items else ""


def _summary_rows(record: SimRecord, links: Links) -> str:
    out: list[str] = []
    text = record.abstract or ""
    out.append(f'<input type="hidden" id="abstract_text" value="{esc(text)}">')
    if text:
        label = "正文快照：" if record.type == "报纸" else "摘要："
        out.append(
            f'<div class="row"><span class="rowtit">{label}</span>'
            f'<span id="ChDivSummary" name="ChDivSummary" class="abstract-text">{esc(text)}</span></div>'
        )
    if record.keywords:
        kws = "".join(
            f'<a target="_blank" href="{esc(links.kns("/kcms2/keyword/detail?kw=" + quote(k)))}">{esc(k)};</a>'
            for k in record.keywords
        )
        out.append(
            f'<div class="row"><span class="rowtit">关键词：</span><p class="keywords">{kws}</p></div>'
        )
    if record.funds and is_layout_2023(record):
        funds = "".join(f"{esc(f)}；" for f in record.funds)
        out.append(f'<div class="row"><span class="rowtit">基金资助：</span><p class="funds">{funds}</p></div>')
    elif record.funds:
        funds = "".join(f"<span>{esc(f)}；</span>" for f in record.funds)
        out.append(
            f'<div class="row"><span class="rowtit">基金资助：</span><p class="funds"><span>{funds}</span></p></div>'
        )
    out.append(_field_rows(record))
    return "".join(out)


def _operate(record: SimRecord, links: Links) -> str:
    offered = offered_entries(record)
    extend = ""
    if "html" in offered:
        extend = f'<li class="btn-html"><a target="_blank" href="{esc(links.reader(record.id))}"><i></i>HTML阅读</a></li>'
    dl = ""
    if "caj" in offered:
        dl += (
            '<li class="btn-dlcaj"><a target="_blank" id="cajDown" name="cajDown" '
            f'href="{esc(links.download(record.id, "caj"))}"><i></i>CAJ下载</a></li>'
        )
    if "pdf" in offered:
        dl += (
            '<li class="btn-dlpdf"><a target="_blank" id="pdfDown" name="pdfDown" '
            f'href="{esc(links.download(record.id, "pdf"))}"><i></i>PDF下载</a></li>'
        )
    return (
        '<div><div class="operate" id="DownLoadParts"><div class="operate-left"><ul class="operate-btn">'
        f'<div class="extend-btns">{extend}</div><div class="download-btns">{dl}</div>'
        "</ul></div></div></div>"
    )


def _hidden_params(record: SimRecord) -> str:
    values = {
        "paramdbcode": record.dbcode,
        "paramdbname": record.dbname,
        "paramfilename": record.native_filename,
        "param-dbcode": record.dbcode,
        "param-dbname": record.dbname,
        "param-filename": record.native_filename,
        "paramresource": RESOURCE_BY_TYPE.get(record.type, "JOURNAL"),
        "paramcitingtimes": str(record.cited),
        "params-nvsmkeywors": "".join(f"{k};" for k in record.keywords),
    }
    return "".join(f'<input type="hidden" id="{k}" name="{k}" value="{esc(v)}">' for k, v in values.items())


def _body(record: SimRecord, corpus: Corpus, links: Links) -> str:
    head_time = (
        f'<span class="head-time-title">网络首发时间：</span><span>{esc(record.date)}</span>'
        if record.online_first and record.date
        else ""
    )
    first_tip = '<b class="marktip">网络首发</b>' if record.online_first else ""
    collect = (
        '<ul class="other-btns"><li id="addfavtokpc" class="btn-collect" title="收藏">'
        f'<a href="javascript:void(0)" data-dbcode="{esc(record.dbcode)}" data-dbname="{esc(record.dbname)}" '
        f'data-filename="{esc(record.native_filename)}"><i></i></a></li></ul>'
    )
    return (
        '<div class="wrapper"><div class="main"><div class="container" id="mainArea"><div class="doc">'
        '<div class="doc-top"><div class="top-first">'
        f'<div class="top-tip"><span>{_source_line(record, links)}</span>{first_tip}</div>'
        '<div class="other-versions"></div></div></div>'
        f'<div class="top-second"><div class="head-time">{head_time}</div>'
        f'<div class="optsfun"><div class="btn-tool">{collect}</div></div></div>'
        '<div><div class="brief"><div class="wx-tit">'
        f'<h1>{title_markup(record)}<span id="corr-video" class="type" style="display: none">附视频</span></h1>'
        f"{_authors(record, links)}</div></div>"
        f"{_summary_rows(record, links)}</div>"
        '<div class="stats-moudle"><p class="stats-item download"><span class="stats-sprites dfr-num"></span>'
        f'<span class="num">{record.downloads}</span></p></div>'
        f"{_operate(record, links)}"
        "</div>"
        f"{_hidden_params(record)}"
        f"{citation_block(record, links)}"
        "</div></div></div>"
    )


def render_detail(
    record: SimRecord, corpus: Corpus, links: Links, visitor: Visitor, *, script_rendered: bool = False
) -> str:
    """The detail page. `script_rendered=True`: raw HTML is an empty `div#root` with a generic
    title and no meta; a script fills in the whole page (header included) 200 ms after load."""
    title = f"{record.title} - 中国知网"
    body = _body(record, corpus, links)
    if not script_rendered:
        head = _meta(record) if record.extra.get("meta_tags") else ""
        return page_shell(title, body, visitor, links, head_extra=head)
    data = {"title": title, "body": header_html(visitor, links) + body}
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>中国知网</title></head>'
        '<body><div id="root"></div><script>(function(){var d='
        + script_json(data)
        + ";setTimeout(function(){document.title=d.title;"
        "document.getElementById('root').innerHTML=d.body;},200);})();</script></body></html>"
    )


def render_references_fragment(
    record: SimRecord, corpus: Corpus, links: Links, which: Literal["references", "citing"]
) -> str:
    """The grouped list alone (what the page's lazy `quoted-*` request would return)."""
    return render_list(record, corpus, links, which)
