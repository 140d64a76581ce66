"""Answers of the article page's citation JSON API (docs/citation-api.md): one database's list
page, and the six counts. Pure functions, JSON text in, models out."""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.errors import LocatorExpired, ParserUnsupported
from cnki_mcp.parse._html import clean_text, collapse, resolve

PAGE_SIZE = 10  # what the page sends and the most an answer holds (docs/citation-api.md)


class CitationKind(StrEnum):
    REFERENCES = "references"
    CITATIONS = "citations"
    CO_REFERENCES = "co-references"
    CO_CITATIONS = "co-citations"
    SECOND_REFERENCES = "second-references"
    SECOND_CITATIONS = "second-citations"


class CitationType(StrEnum):
    JOURNAL = "journal"
    THESIS = "thesis"
    CONFERENCE = "conference"
    FOREIGN = "foreign"
    BOOK = "book"
    OTHER = "other"


# The 12 databases in the page's order: type code -> what the tools call the type.
TYPE_CODES: dict[str, CitationType] = {
    "CJFDREF": CitationType.JOURNAL,
    "CDFDREF": CitationType.THESIS,
    "CMFDREF": CitationType.THESIS,
    "CPFDREF": CitationType.CONFERENCE,
    "IPFDREF": CitationType.CONFERENCE,
    "CYFDREF": CitationType.OTHER,
    "CCNDREF": CitationType.OTHER,
    "WWJDREF": CitationType.FOREIGN,
    "CBBDREF": CitationType.BOOK,
    "SCPDREF": CitationType.OTHER,
    "SCSDREF": CitationType.OTHER,
    "NLNKREF": CitationType.OTHER,
}


def codes_for(types: list[CitationType] | None) -> list[str]:
    """Type codes of the databases holding `types` (all 12 when None), in the page's order."""
    wanted = set(types) if types else set(CitationType)
    return [code for code, kind in TYPE_CODES.items() if kind in wanted]


class CitationItem(BaseModel):
    """One entry of a citation list. `detail_url` carries the site's token: internal."""

    model_config = ConfigDict(extra="forbid")

    title: str
    authors: list[str] = Field(default_factory=list)
    source: str | None = None
    year: int | None = None
    filename: str | None = None
    dbcode: str | None = None
    dbname: str | None = None
    type: CitationType = CitationType.OTHER
    type_code: str = ""
    cited: int | None = None
    downloads: int | None = None
    detail_url: str | None = None

    @property
    def key(self) -> str:
        """The node identity: CNKI's file name, else the collapsed title (free-text entries)."""
        return (self.filename or "").upper() or "T:" + collapse(self.title).lower()


class CitationListPage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type_code: str
    total: int
    start: int
    items: list[CitationItem] = Field(default_factory=list)


def _cleaned(value: Any) -> Any:
    """Every string of a decoded answer through `clean_text`: JSON may write a lone surrogate
    (`"\\ud83d"`, a title cut inside a UTF-16 pair), which no answer or store can encode (the
    citation list was INTERNAL), and control characters."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_cleaned(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: _cleaned(v) for k, v in value.items()}
    return value


def _envelope(text: str) -> Any:
    try:
        body = _cleaned(json.loads(text))
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:  # nested past the recursion limit
        raise ParserUnsupported("引文接口返回的不是 JSON", reason="not_json") from exc
    if not isinstance(body, dict) or "code" not in body:
        raise ParserUnsupported("引文接口返回结构无法识别", reason="no_envelope")
    if body["code"] != 0:
        # An unknown or expired `v` (docs/citation-api.md): never an empty success.
        raise LocatorExpired("引文接口不接受该详情页链接", site_code=body["code"])
    return body.get("data")


def _int(value: Any) -> int | None:
    text = str(value if value is not None else "").replace(",", "").strip()
    return int(text) if re.fullmatch(r"\d+", text) else None


def _meta(item: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in item.get("metadata") or []:
        if isinstance(pair, dict) and isinstance(pair.get("name"), str):
            out.setdefault(pair["name"], str(pair.get("value") or ""))
    return out


def _detail_url(item: dict[str, Any], base_url: str | None) -> str | None:
    relations = [r for r in item.get("relations") or [] if isinstance(r, dict)]
    for scope in ("ABSTRACT", "ZKABSTRACT"):
        for rel in relations:
            if rel.get("scope") == scope and rel.get("url"):
                return resolve(base_url, str(rel["url"]))
    return None


def _authors(item: dict[str, Any], meta: dict[str, str]) -> list[str]:
    names = [
        collapse(str(a.get("name") or a.get("title") or ""))
        for a in item.get("authors") or []
        if isinstance(a, dict)
    ]
    names = [n for n in names if n]
    if names:
        return names
    return [n for n in (collapse(x) for x in re.split(r"[;；]", meta.get("AU", ""))) if n]


def _item(raw: Any, code: str, base_url: str | None) -> CitationItem | None:
    if not isinstance(raw, dict):
        return None
    meta = _meta(raw)
    source = raw.get("source") if isinstance(raw.get("source"), dict) else {}
    title = collapse(meta.get("TI") or str(source.get("title") or ""))
    if not title:
        return None
    year = _int(meta.get("YE")) or _int(source.get("year"))
    return CitationItem(
        title=title,
        authors=_authors(raw, meta),
        source=collapse(str(source.get("title") or "")) or collapse(meta.get("LY", "")) or None,
        year=year,
        filename=meta.get("FN") or None,
        dbcode=meta.get("product") or None,
        dbname=meta.get("TB") or meta.get("TN") or None,
        type=TYPE_CODES.get(code, CitationType.OTHER),
        type_code=code,
        cited=_int(meta.get("CF")),
        downloads=_int(meta.get("DFR")),
        detail_url=_detail_url(raw, base_url),
    )


def parse_citation_list(text: str, type_code: str, base_url: str | None = None) -> CitationListPage:
    """One list answer. An answer without a list object is PARSER_UNSUPPORTED; `code` != 0 is
    LOCATOR_EXPIRED (the token the request carried is dead)."""
    data = _envelope(text)
    if data is None:
        return CitationListPage(type_code=type_code, total=0, start=1)
    if not isinstance(data, dict) or not isinstance(data.get("data", []), list):
        raise ParserUnsupported("引文列表结构无法识别", reason="no_list")
    items = [i for i in (_item(raw, type_code, base_url) for raw in data.get("data") or []) if i]
    total = _int(data.get("total"))
    if total is None:
        total = len(items)
    return CitationListPage(type_code=type_code, total=total, start=_int(data.get("start")) or 1, items=items)


def parse_citation_metrics(text: str) -> dict[str, int]:
    """The six counts (`references`, `citations`, …); a missing name counts 0."""
    data = _envelope(text)
    if not isinstance(data, list):
        raise ParserUnsupported("引文计数结构无法识别", reason="no_metrics")
    counts = {k.value: 0 for k in CitationKind}
    for entry in data:
        if isinstance(entry, dict) and entry.get("name") in counts:
            counts[entry["name"]] = _int(entry.get("value")) or 0
    return counts
