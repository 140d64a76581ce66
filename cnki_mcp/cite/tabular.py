"""Data formats: CSV (formula-injection guarded), JSON, CSL-JSON and Markdown."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

from cnki_mcp.identity import doi_url

from .gbt7714 import type_code
from .model import CiteRecord, DocKind
from .names import parse_name

# --- CSV ------------------------------------------------------------------------------

CSV_COLUMNS: tuple[str, ...] = ("title", "authors", "source", "year", "volume", "issue", "pages", "doi", "url")
_FORMULA_START = ("=", "+", "-", "@")
_CONTROL_START = ("\t", "\r", "\n")


def csv_guard(value: str) -> str:
    """Prefix `'` to a cell a spreadsheet would run as a formula: one starting with
    `=`, `+`, `-`, `@`, a tab or a carriage return (also after leading blanks)."""
    if value.startswith(_CONTROL_START) or value.lstrip(" \t\r\n").startswith(_FORMULA_START):
        return "'" + value
    return value


def _csv_row(rec: CiteRecord) -> list[str]:
    year = rec.effective_year
    values = [rec.title, "; ".join(rec.authors), rec.source or "", str(year) if year is not None else "",
              rec.volume or "", rec.issue or "", rec.pages or "", rec.doi or "", rec.url or ""]
    return [csv_guard(v) for v in values]


def to_csv(records: list[CiteRecord]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(CSV_COLUMNS)
    for rec in records:
        writer.writerow(_csv_row(rec))
    return buf.getvalue()


# --- JSON -----------------------------------------------------------------------------


def to_json(records: list[CiteRecord]) -> str:
    out: list[dict[str, Any]] = []
    for rec in records:
        data = rec.model_dump(mode="json")
        data["kind"] = rec.kind.value
        data["type_code"] = type_code(rec)
        data["language"] = rec.lang
        out.append(data)
    return json.dumps(out, ensure_ascii=False, indent=2)


# --- CSL-JSON -------------------------------------------------------------------------

CSL_TYPES: dict[DocKind, str] = {
    DocKind.JOURNAL: "article-journal",
    DocKind.CONFERENCE: "paper-conference",
    DocKind.PHD_THESIS: "thesis",
    DocKind.MASTERS_THESIS: "thesis",
    DocKind.THESIS: "thesis",
    DocKind.NEWSPAPER: "article-newspaper",
    DocKind.BOOK: "book",
    DocKind.YEARBOOK: "chapter",  # an article in the yearbook (container-title)
    DocKind.STANDARD: "standard",
    DocKind.PATENT: "patent",
    DocKind.REPORT: "report",
}

_GENRES: dict[DocKind, tuple[str, str]] = {
    DocKind.PHD_THESIS: ("博士学位论文", "Doctoral dissertation"),
    DocKind.MASTERS_THESIS: ("硕士学位论文", "Master's thesis"),
    DocKind.THESIS: ("学位论文", "Thesis"),
}


def csl_name(raw: str) -> dict[str, str]:
    name = parse_name(raw)
    if name.literal:
        return {"literal": name.family}
    # Not a surname and a given name: an organisation (课题组, 编委会) or a name with a middle dot
    # (阿卜杜·热合曼), which has no surname; a Chinese personal name has at most four characters.
    if name.cjk and (len(name.full) > 4 or "·" in name.full):
        return {"literal": name.full}
    return {"family": name.family, "given": name.given}


def csl_item(rec: CiteRecord, index: int = 1) -> dict[str, Any]:
    kind = rec.kind
    item: dict[str, Any] = {
        "id": rec.record_ref or f"item-{index}",
        "type": CSL_TYPES.get(kind, "document"),
        "title": rec.title,
        "language": "zh-CN" if rec.lang == "zh" else "en",
    }
    if rec.authors:
        item["author"] = [csl_name(a) for a in rec.authors]
    parts = rec.date_parts
    if parts:
        # Journal and newspaper dates keep month and day (the grid's 发表时间); other types cite a year.
        full = kind in (DocKind.NEWSPAPER, DocKind.JOURNAL)
        item["issued"] = {"date-parts": [parts if full else parts[:1]]}
    if kind in _GENRES:
        zh, en = _GENRES[kind]
        item["genre"] = zh if rec.lang == "zh" else en
        if rec.source:
            item["publisher"] = rec.source
    elif kind is DocKind.BOOK:
        if rec.publisher or rec.source:
            item["publisher"] = rec.publisher or rec.source
    else:
        if rec.source:
            item["container-title"] = rec.source
        if rec.publisher:
            item["publisher"] = rec.publisher
    if kind is DocKind.CONFERENCE:
        if rec.conference:
            item["event-title"] = rec.conference
        if rec.event_place:
            item["event-place"] = rec.event_place
        if rec.event_date_parts:
            item["event-date"] = {"date-parts": rec.event_date_parts}
    optional = {
        "publisher-place": rec.place, "volume": rec.volume, "issue": rec.issue, "page": rec.pages,
        "DOI": rec.doi, "URL": rec.url, "abstract": rec.abstract,
        "keyword": ", ".join(rec.keywords) if rec.keywords else None,
    }
    item.update({k: v for k, v in optional.items() if v})
    return item


def to_csl_json(records: list[CiteRecord]) -> str:
    return json.dumps([csl_item(r, i) for i, r in enumerate(records, 1)], ensure_ascii=False, indent=2)


# --- Markdown -------------------------------------------------------------------------


def md_escape(text: str) -> str:
    """Markdown punctuation backslash-escaped; `~` too: GitHub's Markdown (cmark-gfm) strikes
    through between single tildes, and CNKI titles write ranges so (`2~3岁与5~6岁`)."""
    return re.sub(r"([\\\[\]*_`<>~])", r"\\\1", text)


def md_url(url: str) -> str:
    return re.sub(r"\s", "%20", url).replace("(", "%28").replace(")", "%29")


def markdown_line(rec: CiteRecord) -> str:
    title = md_escape(rec.title) or "\\[题名未取得\\]"
    # the DOI's resolver link first, as the styles and link_references give it (lasting); a record
    # from CNKI has no other stable URL (its kcms2 link expires and is dropped)
    link = doi_url(rec.doi) or rec.url
    head = f"[{title}]({md_url(link)})" if link else title
    year = rec.effective_year
    tail = ", ".join(p for p in ("; ".join(rec.authors), rec.source or "", str(year) if year else "") if p)
    return f"- {head}" + (f" — {md_escape(tail)}" if tail else "")


def to_markdown(records: list[CiteRecord]) -> str:
    return "\n".join(markdown_line(r) for r in records) + ("\n" if records else "")


RENDERERS: dict[str, Callable[[list[CiteRecord]], str]] = {
    "csv": to_csv, "json": to_json, "csl_json": to_csl_json, "markdown": to_markdown,
}
