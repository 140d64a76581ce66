"""Judging a parsed reference against CNKI records (pure): which record it names, if any, and
which of its fields disagree (docs/DESIGN.md §References).

A candidate *fits* an entry when the DOIs agree, when the titles are nearly equal (similarity
>= TITLE_SAME), when the title is close (>= TITLE_CLOSE) and the first author and year agree,
or, for an entry whose title may be garbled, when first author, year and source all agree and
the titles still share much (>= TITLE_LOOSE). Several fitting records that the entry cannot tell
apart (same agreement on every field the entry gives) make it `ambiguous`. The best fit is
compared field by field on what both sides state: a field the entry lacks is never held against
it (a warning says it was not checked), and a field the record lacks is not checked either.
`verified` needs every checked field to agree; otherwise `mismatch` lists the fields."""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz

from cnki_mcp.cite.model import HAN
from cnki_mcp.cite.names import names_agree, spelt_in_pinyin
from cnki_mcp.cite.refparse import ParsedReference
from cnki_mcp.identity import iso_date
from cnki_mcp.script import simplified

Verdict = Literal["verified", "mismatch", "not_found", "ambiguous", "unparsable", "not_a_paper"]
FieldName = Literal["authors", "title", "year", "date", "source", "volume", "issue", "pages", "doi", "type"]

TITLE_SAME = 92.0
TITLE_CLOSE = 80.0
TITLE_LOOSE = 50.0
SOURCE_SAME = 90.0

# CNKI type labels -> the GB/T 7714 type code a correct reference uses.
_TYPE_OF_LABEL: tuple[tuple[str, str], ...] = (
    ("会议", "C"),
    ("博士", "D"),
    ("硕士", "D"),
    ("学位", "D"),
    ("报纸", "N"),
    ("图书", "M"),
    ("年鉴", "M"),
    ("期刊", "J"),
    ("辑刊", "J"),
)


class RecordView(BaseModel):
    """What a CNKI record says (a stored paper, a grid row, an export record)."""

    model_config = ConfigDict(frozen=True)

    record_ref: str
    title: str
    authors: list[str] = Field(default_factory=list)
    source: str | None = None
    year: int | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    doi: str | None = None
    doc_type: str | None = None
    url: str | None = None
    date: str | None = None  # publication date (a newspaper's day), `yyyy-mm-dd…`


class FieldDiff(BaseModel):
    field: FieldName
    entry: str
    record: str


class Judgement(BaseModel):
    verdict: Verdict
    record: RecordView | None = None
    fields: list[FieldName] = Field(default_factory=list)
    diffs: list[FieldDiff] = Field(default_factory=list)
    candidates: list[RecordView] = Field(default_factory=list)  # ambiguous: the records that fit
    warnings: list[str] = Field(default_factory=list)
    title_similarity: float | None = None


def norm_title(text: str) -> str:
    """Title for comparison: NFKC, simplified characters (a list in traditional ones cites CNKI's
    simplified titles: `script.simplified`), lower case, letters and digits (and Han) only."""
    folded = simplified(unicodedata.normalize("NFKC", text)).lower()
    return "".join(ch for ch in folded if ch.isalnum())


def title_similarity(a: str, b: str) -> float:
    na, nb = norm_title(a), norm_title(b)
    if not na or not nb:
        return 0.0
    return float(fuzz.ratio(na, nb))


def _norm_source(text: str) -> str:
    folded = simplified(unicodedata.normalize("NFKC", text)).lower()
    folded = folded.replace("《", "").replace("》", "")
    return "".join(ch for ch in folded if ch.isalnum())


_SOURCE_STOP_WORDS = frozenset({"a", "an", "and", "de", "der", "des", "du", "for", "in", "la", "of", "on", "the"})


def _abbreviates(short: str, full: str) -> bool:
    """An abbreviated journal title (NLM/Vancouver, ISO 4): `J Clean Prod` for `Journal of
    Cleaner Production`, `Proc Natl Acad Sci U S A`: word by word, each abbreviated word starts
    with the full word's first letter and its letters appear in that word in order; the full
    title's short function words are left out."""
    words = re.findall(r"[A-Za-z]+", unicodedata.normalize("NFKC", short).lower())
    target = [w for w in re.findall(r"[A-Za-z]+", unicodedata.normalize("NFKC", full).lower())
              if w not in _SOURCE_STOP_WORDS]  # fmt: skip
    if len(words) < 2 or len(words) != len(target) or words == target:
        return False
    return all(w[0] == t[0] and _in_order(w, t) for w, t in zip(words, target, strict=True))


def _in_order(letters: str, word: str) -> bool:
    rest = iter(word)
    return all(ch in rest for ch in letters)


def same_source(entry: str, record: str) -> bool:
    """The entry's source names the record's: nearly the same text, or its abbreviation."""
    return fuzz.ratio(_norm_source(entry), _norm_source(record)) >= SOURCE_SAME or _abbreviates(entry, record)


def _num(text: str | None) -> str | None:
    """`03` -> `3`, `S2` stays (`s2` is `S2`, `z1` CNKI's `Z1`), None/empty -> None."""
    if not text:
        return None
    value = unicodedata.normalize("NFKC", text).strip().upper()
    return re.sub(r"^0+(?=\d)", "", value) or None


def _page_ends(pages: str | None) -> tuple[str, str] | None:
    if not pages:
        return None
    numbers = re.findall(r"\d+", unicodedata.normalize("NFKC", pages))
    if not numbers:
        return None
    first = numbers[0].lstrip("0") or "0"
    last = numbers[1].lstrip("0") or "0" if len(numbers) > 1 else first
    if len(last) < len(first) and int(last) < int(first):
        last = first[: len(first) - len(last)] + last  # `101–12`, `2909–18`: the end abbreviated
    return first, last


def type_code_of(doc_type: str | None) -> str | None:
    label = doc_type or ""
    for key, code in _TYPE_OF_LABEL:
        if key in label:
            return code
    return None


def _first_author_agrees(entry: ParsedReference, rec: RecordView) -> bool | None:
    if not entry.authors or not rec.authors:
        return None
    return names_agree(entry.authors[0], rec.authors[0])


def _agreement(entry: ParsedReference, rec: RecordView) -> tuple[int, ...]:
    """Per field the entry gives: 1 agrees, 0 cannot tell (the record lacks it, or names its source
    in another script), -1 disagrees (for ranking fits). A record that lacks a field must not tie
    with the one that confirms it: the entry naming 41(3): 12-20 is the record holding them."""
    diffs, unchecked = compare(entry, rec)
    wrong = {d.field for d in diffs}
    unknown = set(unchecked)
    if entry.source and rec.source and other_script_source(entry.source, rec.source):
        unknown.add("source")
    given = _given_fields(entry)
    return tuple(-1 if f in wrong else 0 if f in unknown else 1 for f in sorted(given))


def _authors_agree(entry: ParsedReference, theirs: list[str]) -> bool:
    """Every listed author names the record's author in that place, and the list is complete
    unless it ends with 等 / et al. (GB/T 7714-2015 §8.1.1: leaving authors out needs 等)."""
    listed = entry.authors
    if len(listed) > len(theirs) or (len(listed) < len(theirs) and not entry.authors_truncated):
        return False
    return all(names_agree(mine, their) for mine, their in zip(listed, theirs, strict=False))


def _given_fields(entry: ParsedReference) -> set[FieldName]:
    given: set[FieldName] = {"title"}
    if entry.authors:
        given.add("authors")
    for name in ("year", "date", "source", "volume", "issue", "pages", "doi"):
        if getattr(entry, name) is not None:
            given.add(name)  # type: ignore[arg-type]
    if entry.type_code or entry.degree:
        given.add("type")
    return given


def fits(entry: ParsedReference, rec: RecordView) -> bool:
    if entry.doi and rec.doi and entry.doi.lower() == rec.doi.lower():
        return True
    sim = title_similarity(entry.title or "", rec.title)
    if sim >= TITLE_SAME:
        return True
    author = _first_author_agrees(entry, rec)
    year = entry.year is not None and rec.year is not None and entry.year == rec.year
    if sim >= TITLE_CLOSE and author and year:
        return True
    source = entry.source is not None and rec.source is not None and same_source(entry.source, rec.source)
    return bool(sim >= TITLE_LOOSE and author and year and source)


def other_script_source(entry: str, record: str) -> bool:
    """The entry names a Chinese journal in Latin letters (its English title: an English-language
    list) or a Latin-named one in Chinese: a different name that cannot be compared. A pinyin
    name is compared with the record's (`Faxue Yanjiu` is 法学研究, not 法商研究)."""
    return bool(HAN.search(entry)) != bool(HAN.search(record)) and spelt_in_pinyin(entry, record) is None


def _sources_agree(entry: str, record: str) -> bool:
    spelt = spelt_in_pinyin(entry, record)
    return spelt if spelt is not None else same_source(entry, record)


def compare(entry: ParsedReference, rec: RecordView) -> tuple[list[FieldDiff], list[str]]:
    """Field differences between the entry and the record, and what could not be checked."""
    diffs: list[FieldDiff] = []
    unchecked: list[str] = []

    def diff(name: FieldName, mine: object, theirs: object) -> None:
        diffs.append(FieldDiff(field=name, entry=str(mine), record=str(theirs)))

    if entry.title and norm_title(entry.title) != norm_title(rec.title):
        diff("title", entry.title, rec.title)
    if entry.authors:
        if not rec.authors:
            unchecked.append("authors")
        else:
            if not _authors_agree(entry, rec.authors):
                diff("authors", "; ".join(entry.authors), "; ".join(rec.authors))
    checks: list[tuple[FieldName, object, object]] = [
        ("year", entry.year, rec.year),
        ("volume", _num(entry.volume), _num(rec.volume)),
        ("issue", _num(entry.issue), _num(rec.issue)),
        ("doi", (entry.doi or "").lower() or None, (rec.doi or "").lower() or None),
        ("date", entry.date, (iso_date(rec.date) or "")[:10] or None),  # a stored 2004/06/29 too
    ]
    for name, mine, theirs in checks:
        if mine is None:
            continue
        if theirs is None:
            unchecked.append(name)
        elif mine != theirs:
            diff(name, mine, theirs)
    if entry.source:
        if not rec.source:
            unchecked.append("source")
        elif other_script_source(entry.source, rec.source):
            pass  # `Studies in Law and Business` for 法商研究: no translation to compare with (judge's warning)
        elif not _sources_agree(entry.source, rec.source):
            diff("source", entry.source, rec.source)
    if entry.pages:
        mine_pages, their_pages = _page_ends(entry.pages), _page_ends(rec.pages)
        if their_pages is None:
            unchecked.append("pages")
        elif mine_pages != their_pages:
            diff("pages", entry.pages, rec.pages)
    if entry.type_code:
        code = type_code_of(rec.doc_type)
        if code is None:
            unchecked.append("type")
        elif code != entry.type_code:
            diff("type", f"[{entry.type_code}]", f"[{code}]（{rec.doc_type}）")
    level = (rec.doc_type or "").strip()
    if entry.degree and level in ("博士", "硕士") and entry.degree != level and not any(d.field == "type" for d in diffs):
        # a master's thesis cited as a doctoral dissertation (or the reverse): [D] alone agrees
        diff("type", f"{entry.degree}学位论文", f"{level}学位论文")
    return diffs, unchecked


def judge(entry: ParsedReference, candidates: list[RecordView]) -> Judgement:
    """The verdict for one entry against every record the searches returned."""
    if entry.not_a_paper:  # a law, standard or classic by its name: never looked up (refshapes)
        return Judgement(verdict="not_a_paper")
    if entry.unparsable or not (entry.title or entry.doi):  # a line holding only a DOI is judged by it
        return Judgement(verdict="unparsable", warnings=[entry.unparsable or "没有题名"])
    unique = {c.record_ref: c for c in candidates}
    fitting = [c for c in unique.values() if fits(entry, c)]
    if not fitting:
        best = max(unique.values(), key=lambda c: title_similarity(entry.title or "", c.title), default=None)
        sim = title_similarity(entry.title or "", best.title) if best else None
        return Judgement(verdict="not_found", title_similarity=sim)
    ranked = sorted(
        fitting,
        key=lambda c: (sum(_agreement(entry, c)), title_similarity(entry.title or "", c.title)),
        reverse=True,
    )
    top = ranked[0]
    ties = [
        c
        for c in ranked
        if _agreement(entry, c) == _agreement(entry, top)
        and norm_title(c.title) == norm_title(top.title)
    ]
    if len(ties) > 1:
        return Judgement(verdict="ambiguous", candidates=ties, warnings=_missing_warnings(entry))
    warnings = _missing_warnings(entry, top)
    diffs, unchecked = compare(entry, top)
    if unchecked:
        warnings.append("知网记录缺少以下字段，未核对：" + "、".join(unchecked))
    if entry.source and top.source and other_script_source(entry.source, top.source):
        warnings.append(f"来源写作另一种文字（{entry.source}；知网：{top.source}），未核对")
    return Judgement(
        verdict="mismatch" if diffs else "verified",
        record=top,
        fields=[d.field for d in diffs],
        diffs=diffs,
        warnings=warnings,
        title_similarity=title_similarity(entry.title or "", top.title),
    )


def _missing_warnings(entry: ParsedReference, rec: RecordView | None = None) -> list[str]:
    """The fields the entry leaves out, except those the matched record has none of either (a
    yearbook article without an author: the entry is right to give none)."""
    missing = [
        label
        for label, value, on_record in (
            ("作者", entry.authors, rec is None or bool(rec.authors)),
            ("年份", entry.year, rec is None or rec.year is not None),
            ("来源", entry.source, rec is None or bool(rec.source)),
            ("文献类型标识", entry.type_code if entry.style == "gbt7714" else True, True),
        )
        if not value and on_record
    ]
    return ["条目缺少" + "、".join(missing) + "（缺项不等于伪造，只是无法核对）"] if missing else []
