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


# GB/T 7714-2015 §8.8.2 (and every other style) locates a journal article by 年, 卷(期): 页码.
# A list row has none of them. Reported only while reading can fill them: not for an
# online-first article (none yet) or one whose detail page or export was read (CNKI has none).
LOCATORS = ("issue", "pages")


def missing_of(rec: CiteRecord, fmt: str) -> list[str]:
    """The fields `fmt` needs that `rec` lacks: the texts of REQUIRED, then for a journal article
    (not online-first, full record not read) in any format that needs more than its title, `issue`
    (no volume and no issue) and `pages`: get_metadata reads those from CNKI's batch export."""
    present = {
        "title": bool(rec.title),
        "authors": bool(rec.authors),
        "source": bool(rec.source or (rec.kind is DocKind.BOOK and rec.publisher)),
        "year": rec.effective_year is not None,
    }
    needed = REQUIRED.get(fmt, _TEXT)
    gaps = [f for f in needed if not present.get(f, True)]
    if needed == _TEXT and rec.kind is DocKind.JOURNAL and not (rec.online_first or rec.full_record_read):
        located = {"issue": bool(rec.volume or rec.issue), "pages": bool(rec.pages)}
        gaps += [f for f in LOCATORS if not located[f]]
    return gaps


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
