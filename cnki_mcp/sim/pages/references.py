"""Reference / citing lists as the kcms2 知网节 shows them: grouped by database with a type code.

Each group: `div.essayBox > div.dbTitle` (database name + `共<span name="pcount">N</span>条`) and
`ul.ebBox > li` entries `<em>[n]</em><a href=…>题名</a>[J].作者.来源.年(期)`."""

from __future__ import annotations

from typing import Literal

from ..corpus import Corpus, SimRecord
from ..links import Links
from .common import esc

# Document type -> (database title shown by CNKI, GB/T 7714 type code, product code).
DB_GROUPS: dict[str, tuple[str, str, str]] = {
    "期刊": ("中国学术期刊网络出版总库", "J", "CJFQ"),
    "博士": ("中国博士学位论文全文数据库", "D", "CDFD"),
    "硕士": ("中国优秀硕士学位论文全文数据库", "D", "CMFD"),
    "会议": ("中国重要会议论文全文数据库", "C", "CPFD"),
    "报纸": ("中国重要报纸全文数据库", "N", "CCND"),
    "年鉴": ("中国年鉴网络出版总库", "M", "CYFD"),
    "图书": ("图书", "M", "CBBD"),
    "外文期刊": ("外文题录数据库", "J", "WWJD"),
}
_GROUP_ORDER = list(DB_GROUPS)
OTHER_GROUP = "其他来源文献"


def type_code(record: SimRecord) -> str:
    return DB_GROUPS.get(record.type, ("", "J", ""))[1]


def _tail(record: SimRecord) -> str:
    """The part after `[X].`: authors, source and date in CNKI's list style."""
    authors = ",".join(a.name for a in record.authors)
    parts = [authors] if authors else []
    if record.type == "期刊" or record.type == "外文期刊":
        when = f"{record.year or ''}"
        if record.issue:
            when += f"({record.issue})"
        parts += [record.source or "", when]
    elif record.type == "报纸":
        parts += [record.source or "", record.date or f"{record.year or ''}"]
    elif record.type in ("图书", "年鉴"):
        parts += [record.publisher or record.source or "", f"{record.year or ''}"]
    else:
        parts += [record.source or record.conference or "", f"{record.year or ''}"]
    return ".".join(p for p in parts if p)


def entry_html(n: int, record: SimRecord, links: Links) -> str:
    return (
        f'<li><em>[{n}]</em><a target="_blank" href="{esc(links.detail(record.id))}">{esc(record.title)}</a>'
        f"[{type_code(record)}].{esc(_tail(record))}</li>"
    )


def _group_box(title: str, code: str, items: list[str]) -> str:
    return (
        f'<div class="essayBox"><div class="dbTitle">{esc(title)}'
        f'<b class="titleTotle">共<span name="pcount" id="pc_{esc(code)}">{len(items)}</span>条</b></div>'
        f'<ul class="ebBox">{"".join(items)}</ul></div>'
    )


def render_list(
    record: SimRecord, corpus: Corpus, links: Links, which: Literal["references", "citing"]
) -> str:
    """Grouped entries (numbered per group, as CNKI does); unresolved reference strings go last."""
    if which == "references":
        known = [corpus.by_id[r] for r in record.references if r in corpus.by_id]
        unresolved = [r for r in record.references if r not in corpus.by_id]
    else:
        known = corpus.citing(record.id)
        unresolved = []
    groups: dict[str, list[SimRecord]] = {}
    for rec in known:
        groups.setdefault(rec.type if rec.type in DB_GROUPS else "期刊", []).append(rec)
    boxes: list[str] = []
    for kind in _GROUP_ORDER:
        recs = groups.get(kind)
        if not recs:
            continue
        title, _, code = DB_GROUPS[kind]
        boxes.append(_group_box(title, code, [entry_html(i, r, links) for i, r in enumerate(recs, 1)]))
    if unresolved:
        items = [f"<li><em>[{i}]</em>{esc(text)}</li>" for i, text in enumerate(unresolved, 1)]
        boxes.append(_group_box(OTHER_GROUP, "OTHER", items))
    return "".join(boxes)
