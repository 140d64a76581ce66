"""Citation export: 13 formats over `CiteRecord`s. Pure: no clock or environment; the only I/O is
reading the packaged institution -> city table once (places.py).

    from cnki_mcp.cite import export, from_paper
    result = export([from_paper(paper_dict)], "gbt7714")
    result.text, result.count, result.missing_fields

Saving to a file and the 512 KiB reply limit belong to the caller (the tool layer).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, Field

from ..errors import FormatUnavailable
from . import csl_styles, custom, gbt7714, tabular, tagged
from .missing import MissingMode, missing_of
from .model import CiteRecord, DocKind, doc_kind, from_paper, to_records

Format = Literal[
    "gbt7714", "apa", "mla", "chicago", "vancouver", "bibtex", "ris", "endnote",
    "csl_json", "json", "csv", "markdown", "custom",
]
FORMATS: Final[tuple[Format, ...]] = get_args(Format)

ALIASES: Final[dict[str, Format]] = {
    "": "gbt7714", "gbt": "gbt7714", "gbt7714-2015": "gbt7714", "gb/t7714": "gbt7714",
    "gb7714": "gbt7714", "gb/t7714-2015": "gbt7714", "gb7714-2015": "gbt7714", "csl-json": "csl_json", "csljson": "csl_json", "bib": "bibtex",
    "enw": "endnote", "refer": "endnote", "md": "markdown", "国标": "gbt7714", "国家标准": "gbt7714",
}

EXTENSIONS: Final[dict[Format, str]] = {
    "gbt7714": "txt", "apa": "txt", "mla": "txt", "chicago": "txt", "vancouver": "txt",
    "bibtex": "bib", "ris": "ris", "endnote": "enw", "csl_json": "json", "json": "json",
    "csv": "csv", "markdown": "md", "custom": "txt",
}

ENTRY_SEPARATOR: Final = "\n\n"


class ExportResult(BaseModel):
    format: Format
    text: str
    count: int
    missing_fields: dict[str, list[str]] = Field(default_factory=dict)
    extension: str = "txt"


def normalize_format(fmt: str | None) -> Format:
    # `GB/T 7714-2015`, `CSL JSON`: spaces do not count; full-width forms and the Chinese dash
    # (`ＧＢ／Ｔ 7714—2015`) are read as ASCII
    key = "".join(unicodedata.normalize("NFKC", fmt or "").split()).lower().replace("—", "-").replace("–", "-")
    if key in FORMATS:
        return key  # type: ignore[return-value]
    if key in ALIASES:
        return ALIASES[key]
    raise FormatUnavailable(f"不支持的导出格式：{fmt}", format=fmt, supported=list(FORMATS))


def _styled(fmt: Format, records: list[CiteRecord], missing: MissingMode) -> str:
    if fmt == "gbt7714":
        entries = gbt7714.render(records, missing)
    else:
        render = csl_styles.STYLES[fmt]
        entries = [render(r, i, missing) for i, r in enumerate(records, 1)]
    return ENTRY_SEPARATOR.join(entries)


def export(
    records: Iterable[CiteRecord | Mapping[str, Any] | BaseModel],
    fmt: str | None = "gbt7714",
    *,
    template: str | None = None,
    missing: MissingMode = "mark",
    key_scope: Iterable[CiteRecord | Mapping[str, Any] | BaseModel] | None = None,
    keys: Mapping[str | None, str] | None = None,
) -> ExportResult:
    """Render `records` in `fmt`.

    `missing="mark"` (default) writes [作者未取得] / [来源未取得] / [年份未取得] where a
    formatted style needs a value it does not have; `"omit"` leaves them out as the
    standards do. The `missing_fields` report is the same either way.
    `key_scope`: the whole set `records` is one part of (a search's scope exported with
    offset/limit); BibTeX keys are made unique over it, so each part gives a paper the key the
    whole export would and parts put together repeat no key. `keys`: those keys made before
    (`tagged.scope_key_map` of the scope), used instead when they hold every record.
    Raises FormatUnavailable (FORMAT_UNAVAILABLE) and InvalidTemplate (INVALID_TEMPLATE).
    """
    name = normalize_format(fmt)
    recs = to_records(records)
    if name == "custom":
        compiled = custom.compile_template(template)
        text = custom.render(compiled, recs, missing)
    elif name in ("gbt7714", "apa", "mla", "chicago", "vancouver"):
        text = _styled(name, recs, missing)
    elif name == "bibtex":
        text = tagged.bibtex(recs, to_records(key_scope) if key_scope is not None else None, keys)
    elif name in tagged.RENDERERS:
        text = tagged.RENDERERS[name](recs)
    else:
        text = tabular.RENDERERS[name](recs)
    report: dict[str, list[str]] = {}
    for i, rec in enumerate(recs, 1):
        gaps = missing_of(rec, name)
        if gaps:
            report[rec.record_ref or f"#{i}"] = gaps
    return ExportResult(format=name, text=text, count=len(recs), missing_fields=report,
                        extension=EXTENSIONS[name])


__all__ = [
    "ALIASES",
    "EXTENSIONS",
    "FORMATS",
    "CiteRecord",
    "DocKind",
    "ExportResult",
    "Format",
    "MissingMode",
    "doc_kind",
    "export",
    "from_paper",
    "normalize_format",
]
