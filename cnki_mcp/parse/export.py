"""CNKI's EndNote (Refer) export -> records (pure): the answer of the batch export
`POST /dm8/api/ShowExport` (`<ul class='literature-list'><li>%0 …<br>%A …</li>…</ul>`) and the
plain text a user saves from the export page (records separated by blank lines).

Tags (site-rules.md §9): `%0` type, `%A` one author each, `%+` institutions (`;`), `%T` title,
`%J` journal or newspaper, `%D` year (or date), `%V` volume, `%N` issue, `%P` pages, `%K`
keywords (`;;`), `%X` abstract, `%@` ISSN, `%L` CN, `%R` DOI, `%U` URL, `%I` school or publisher,
`%9` thesis level, `%Y` supervisor, `%B` proceedings, `%C` place, `%W` database. Values are
trimmed; an empty tag (`%V <br>`) is absent. A record without `%T` is skipped.

A line that starts no tag continues the tag before it: CNKI writes a thesis abstract's later
paragraphs on lines of their own, blank lines between them, and sometimes the whole abstract on
the lines after a bare `%X` (saved capture `export/cmsax_endnote_refer.txt`). So saved text is
cut into records where a `%0` line starts, never at blank lines."""

from __future__ import annotations

import html
import re

from cnki_mcp.models import ExportRecord
from cnki_mcp.parse._html import clean_text

_LI = re.compile(r"<li[^>]*>(.*?)</li>", re.S | re.I)
_MARKUP = re.compile(r"<[^<>]*>")
# Formatting a value may still carry once decoded (`CO<sub>2</sub>`): these tags only. Any other
# `<…>` is text: `血糖<7.0 mmol/L与>10 mmol/L`, `(P<0.05)，年龄>60岁` in an abstract.
_INLINE_TAG = re.compile(r"</?(?:sub|sup|i|b|em|strong|u|font|span|br)(?:\s[^<>]*)?/?>", re.I)
_TAG = re.compile(r"^\s*%([0-9A-Z@+~#!$&()*^>\[\]])\s?(.*)$")
_RECORD_START = re.compile(r"^[ \t]*%0(?:\s|$)", re.M)


def _records_text(text: str) -> list[str]:
    if re.search(r"<li[\s>]", text, re.I):
        # the markup goes before the text is decoded: an escaped `&lt;` is the record's own `<`
        items = [re.sub(r"<br\s*/?>", "\n", m, flags=re.I) for m in _LI.findall(text)]
        return [clean_text(html.unescape(_MARKUP.sub("", m))) for m in items]
    text = clean_text(text.replace("\r\n", "\n"))
    starts = [m.start() for m in _RECORD_START.finditer(text)]
    if not starts:
        return [chunk for chunk in re.split(r"\n\s*\n", text) if chunk.strip()]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


# After the abstract CNKI writes only these tags, in this order (the saved exports and the
# ShowExport captures: `%X … %P … %@ … %L … %U … %R … %W CNKI`); the tags before it never follow it.
_AFTER_ABSTRACT = {"P": 0, "@": 1, "L": 2, "U": 3, "R": 4, "W": 5}
_BEFORE_ABSTRACT = frozenset("0A+TJI9YDVNKBCX")


def _abstract_end(lines: list[str]) -> int:
    """Index of the first of the record's own closing tags (`%P … %W`) after its abstract: a
    line of the abstract that starts like a tag (`%R 10.9999/x`, a paragraph starting `%P`) is
    the abstract's text, or it would replace the DOI or the pages written after it. Walking back
    from the end, closing tags in CNKI's order are the record's; any other line ends them."""
    start = next((i for i, line in enumerate(lines) if (m := _TAG.match(line)) and m.group(1) == "X"), None)
    end = len(lines)
    if start is None:
        return end
    rank = len(_AFTER_ABSTRACT)
    for i in range(len(lines) - 1, start, -1):
        m = _TAG.match(lines[i])
        if m is None:
            if lines[i].strip():
                break
            continue
        tag = m.group(1)
        if tag in _BEFORE_ABSTRACT or _AFTER_ABSTRACT.get(tag, rank - 1) >= rank:
            break
        rank = _AFTER_ABSTRACT.get(tag, rank)
        end = i
    return end


def _tag_values(chunk: str) -> dict[str, list[str]]:
    """Tag -> its values in order; continuation lines join their tag's value with a newline, and
    every line between `%X` and the closing tags is the abstract's (`_abstract_end`)."""
    lines: list[tuple[str, list[str]]] = []
    raw = chunk.split("\n")
    abstract_end = _abstract_end(raw)
    in_abstract = False
    for i, line in enumerate(raw):
        m = _TAG.match(line)
        if in_abstract and i < abstract_end:
            m = None  # the abstract's own line, even one starting `%X`
        elif m and m.group(1) == "X":
            in_abstract = True
        text = _INLINE_TAG.sub("", m.group(2) if m else line).strip()
        if m:
            lines.append((m.group(1), [text] if text else []))
        elif text and lines:
            lines[-1][1].append(text)
    tags: dict[str, list[str]] = {}
    for tag, parts in lines:
        if parts:
            tags.setdefault(tag, []).append("\n".join(parts))
    return tags


def _one(chunk: str) -> ExportRecord | None:
    tags = _tag_values(chunk)

    def first(tag: str) -> str | None:
        return tags.get(tag, [None])[0]

    title = first("T")
    if not title:
        return None
    date = first("D")
    year_match = re.search(r"(1[89]\d\d|20\d\d)", date or "")
    institutions = [p.strip() for v in tags.get("+", []) for p in re.split(r"[;；]", v) if p.strip()]
    keywords = [k.strip() for v in tags.get("K", []) for k in re.split(r";;|[;；]", v) if k.strip()]
    ref_type = first("0")
    source = first("J") or first("B")
    if source is None and ref_type and "thesis" in ref_type.lower():
        source = first("I")
    doi = first("R")
    return ExportRecord(
        ref_type=ref_type,
        title=title,
        authors=[a.rstrip(";；,，").strip() for a in tags.get("A", []) if a.strip(" ;；,，")],
        institutions=institutions,
        source=source,
        year=int(year_match.group(1)) if year_match else None,
        date=date,
        volume=first("V"),
        issue=first("N"),
        pages=first("P"),
        keywords=keywords,
        abstract=first("X"),
        issn=first("@"),
        cn=first("L"),
        doi=doi.lower() if doi else None,
        url=(first("U") or "").replace("https: //", "https://") or None,
        publisher=first("I"),
        thesis_level=first("9"),
        place=first("C"),
    )


def parse_export(text: str) -> list[ExportRecord]:
    """Every record of an EndNote export answer, in the order CNKI listed them."""
    out: list[ExportRecord] = []
    for chunk in _records_text(text):
        record = _one(chunk)
        if record is not None:
            out.append(record)
    return out
