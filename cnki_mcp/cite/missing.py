"""Which fields each format needs, the `missing_fields` report, and the placeholders
written in their place (`missing="mark"`, the default, as the tool contract says)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .model import CiteRecord, DocKind
from .names import Name, parse_names

MissingMode = Literal["mark", "omit"]
"""`mark`: missing authors/source/year appear as [作者未取得] / [来源未取得] / [年份未取得].
`omit`: they are left out, as the citation standards (and the CSL styles) do."""

PLACEHOLDERS: dict[str, str] = {
    "authors": "[作者未取得]",
    "source": "[来源未取得]",
    "year": "[年份未取得]",
    "title": "[题名未取得]",
}

_TEXT = ("title", "authors", "source", "year")
REQUIRED: dict[str, tuple[str, ...]] = {
    "gbt7714": _TEXT, "apa": _TEXT, "mla": _TEXT, "chicago": _TEXT, "vancouver": _TEXT,
    "bibtex": _TEXT, "ris": _TEXT, "endnote": _TEXT, "csl_json": _TEXT, "csv": _TEXT,
    "custom": _TEXT, "markdown": ("title",), "json": ("title",),
}


def missing_of(rec: CiteRecord, fmt: str) -> list[str]:
    present = {
        "title": bool(rec.title),
        "authors": bool(rec.authors),
        "source": bool(rec.source or (rec.kind is DocKind.BOOK and rec.publisher)),
        "year": rec.effective_year is not None,
    }
    return [f for f in REQUIRED.get(fmt, _TEXT) if not present.get(f, True)]


@dataclass(frozen=True, slots=True)
class View:
    """The values a formatted style prints, after the missing-field policy."""

    names: list[Name]
    title: str
    source: str
    year: str
    placeholder_author: bool


def view(rec: CiteRecord, mode: MissingMode) -> View:
    mark = mode == "mark"
    names = parse_names(rec.authors)
    placeholder = False
    if not names and mark:
        names = [Name(PLACEHOLDERS["authors"], literal=True)]
        placeholder = True
    year = rec.effective_year
    return View(
        names=names,
        title=rec.title or (PLACEHOLDERS["title"] if mark else ""),
        source=rec.source or (PLACEHOLDERS["source"] if mark else ""),
        year=str(year) if year is not None else (PLACEHOLDERS["year"] if mark else ""),
        placeholder_author=placeholder,
    )
