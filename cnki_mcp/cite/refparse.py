"""Reference strings as people paste them -> entries -> fields (pure).

`split_entries(text)` cuts a pasted reference list into entries: numbered `[1]` `［1］` `1.`
`1、` `(1)` `（1）` `①`, bulleted `•` `-` `*`, or one entry per line; a line that starts with none
of these while the list is numbered continues the previous entry (a wrapped line) unless that
entry already ended with a full stop.

`parse_reference(text)` reads one entry in the three shapes Chinese reference lists take:

* GB/T 7714: `作者, 作者, 等. 题名[J]. 刊名, 2019, 41(3): 12-20. DOI:…` (also `[D]` theses with
  `地点: 学校, 年`, `[C]//会议录` and `[M]` books), with full-width or half-width punctuation;
* APA: `作者. (2019). 题名. 刊名, 41(3), 12–20.` and `Zhang, S., & Li, M. (2019). Title. …`;
* free Chinese style: `作者：《题名》，《刊名》2019年第3期（第12-20页）。`

A field that is not there stays None: missing parts are never treated as evidence of anything
(docs/DESIGN.md §References). An entry without a readable title is `unparsable` with a reason.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

RefStyle = Literal["gbt7714", "apa", "free", "plain"]
TYPE_CODES = ("J", "D", "C", "M", "N", "P", "S", "R", "G", "A", "Z", "EB", "DB", "CP")

# Full-width forms people type in Chinese lists -> ASCII, for structure only (the title keeps
# its own characters: 《》 and Chinese punctuation inside a title are not touched there).
_FULLWIDTH = str.maketrans(
    {"．": ".", "，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "［": "[", "］": "]",
     "／": "/", "－": "-", "—": "-", "–": "-", "～": "-", "〜": "-", "　": " ", "＂": '"'}
)
_MARKER = re.compile(
    r"^\s*(?:[\[［]\s*\d{1,3}\s*[\]］]|[(（]\s*\d{1,3}\s*[)）]|\d{1,3}\s*[.．、](?!\d)|[①-⑳]|[•·\-*▪◦])\s*"
)
_DOI = re.compile(r"(?:doi\s*[:：]?\s*|https?://(?:dx\.)?doi\.org/)(10\.\d{4,9}/[^\s,，;；。]+)", re.I)
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")
_TYPE = re.compile(r"\[\s*(" + "|".join(TYPE_CODES) + r")(?:\s*/\s*OL)?\s*\]", re.I)


class ParsedReference(BaseModel):
    """One entry as read; None where the entry does not say."""

    model_config = ConfigDict(frozen=True)

    raw: str
    style: RefStyle | None = None
    authors: list[str] = Field(default_factory=list)
    title: str | None = None
    source: str | None = None  # journal, school, proceedings, publisher or newspaper
    year: int | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    doi: str | None = None
    type_code: str | None = None  # J D C M N ... as written, upper case
    unparsable: str | None = None  # the reason, when no title could be read


def split_entries(text: str) -> list[str]:
    """The entries of a pasted list (see the module docstring)."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return []
    marked = [bool(_MARKER.match(ln)) for ln in lines]
    if not any(marked):
        return [ln.strip() for ln in lines]
    entries: list[str] = []
    for line, is_marker in zip(lines, marked, strict=True):
        # An unmarked line continues the previous entry (a wrapped line) unless that entry
        # already ended like a finished reference (a final full stop).
        ended = bool(entries) and entries[-1].rstrip().endswith((".", "。", "．"))
        if is_marker or not entries or ended:
            entries.append(_MARKER.sub("", line, count=1).strip())
        else:
            joiner = "" if _is_cjk_end(entries[-1]) and _is_cjk_start(line.strip()) else " "
            entries[-1] = entries[-1] + joiner + line.strip()
    return [e for e in entries if e]


def _is_cjk_end(text: str) -> bool:
    return bool(text) and unicodedata.east_asian_width(text[-1]) in ("W", "F")


def _is_cjk_start(text: str) -> bool:
    return bool(text) and unicodedata.east_asian_width(text[0]) in ("W", "F")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).translate(_FULLWIDTH)).strip()


def _authors(segment: str) -> list[str]:
    seg = re.sub(r"\s*(?:,\s*)?(?:等|et\s+al\.?)\s*\.?$", "", segment.strip().rstrip(".:："), flags=re.I)
    seg = re.sub(r"\s*[(（]?(?:主编|编著|编|著|译)[)）]?$", "", seg)
    if not seg:
        return []
    if re.search(r"[A-Za-z]", seg) and not re.search(r"[\u4e00-\u9fff]", seg):
        # APA-style Latin names: "Zhang, S., & Li, M." -> ["Zhang, S.", "Li, M."]
        seg = seg.replace("&", ",").replace(" and ", ",")
        parts = [p.strip() for p in seg.split(",") if p.strip()]
        names: list[str] = []
        i = 0
        while i < len(parts):
            if i + 1 < len(parts) and re.fullmatch(r"[A-Z]\.?(?:\s*-?\s*[A-Z]\.?)*", parts[i + 1]):
                initials = parts[i + 1] if parts[i + 1].endswith(".") else parts[i + 1] + "."
                names.append(f"{parts[i]}, {initials}")
                i += 2
            else:
                names.append(parts[i])
                i += 1
        return names
    return [p.strip() for p in re.split(r"[,;、，；]|\s{2,}", seg) if p.strip()]


_RANGE = r"\d{1,5}\s*-\s*\d{1,5}|\d{1,5}\+\d{1,5}|\d{1,5}"


def _volume_issue_pages(tail: str) -> tuple[str | None, str | None, str | None]:
    """`41(3): 12-20` (GB/T), `41(3), 12-20` (APA), `2019年第3期，第12-20页` (free style)."""
    volume = issue = pages = None
    m = re.search(r"(?<![\d(-])(\d{1,4})?\s*\(\s*([A-Za-z]?\d{1,3}[A-Za-z]?(?:\s*[-/]\s*\d{1,3})?)\s*\)", tail)
    if m:
        volume, issue = m.group(1), m.group(2).replace(" ", "")
        if volume is not None and _YEAR.fullmatch(volume):
            volume = None  # `2020(2)`: a journal without volumes, year and issue
    m = re.search(r"第\s*(\d{1,3})\s*期", tail)
    if m and issue is None:
        issue = m.group(1)
    m = re.search(r"第\s*(\d{1,4})\s*卷", tail)
    if m and volume is None:
        volume = m.group(1)
    for pattern in (
        rf":\s*({_RANGE})\s*(?:\.|$|[,;])",  # GB/T: after the colon
        rf"第\s*({_RANGE})\s*页",  # free style
        rf"\)\s*,\s*({_RANGE})\s*(?:\.|$|[,;])",  # APA: after "41(3),"
        r"\bpp?\.\s*(\d{1,5}\s*-\s*\d{1,5}|\d{1,5})",
    ):
        m = re.search(pattern, tail)
        if m:
            pages = re.sub(r"\s+", "", m.group(1))
            break
    return volume, issue, pages


def _year(text: str) -> int | None:
    years = _YEAR.findall(text)
    return int(years[0]) if years else None


def _parse_gbt(raw: str, text: str, code_match: re.Match[str]) -> ParsedReference | None:
    head, tail = text[: code_match.start()], text[code_match.end() :]
    # head: "作者, 作者, 等. 题名"; the title is after the first ". " that ends the author list.
    m = re.match(r"^(?P<authors>[^.]{1,200}?)\.\s*(?P<title>.+)$", head.strip())
    if m and not re.search(r"\d", m.group("authors")):
        authors, title = _authors(m.group("authors")), m.group("title").strip()
    else:
        authors, title = [], head.strip()
    code = code_match.group(1).upper()
    tail = tail.lstrip(" .")
    if tail.startswith("//"):
        tail = tail[2:]
    source = None
    if code == "D":
        m = re.match(r"^(?:(?P<place>[^:,.]{1,20}):\s*)?(?P<school>[^,.]+)", tail)
        source = m.group("school").strip() if m else None
    elif code in ("M", "C") and ":" in tail.split(",")[0]:
        m = re.match(r"^(?:(?P<proc>[^.]+)\.\s*)?(?P<place>[^:,.]{1,20}):\s*(?P<pub>[^,.]+)", tail)
        source = (m.group("proc") or m.group("pub")).strip() if m else None
    else:
        m = re.match(r"^([^,.]+?)\s*(?=,|\.|$)", tail)
        source = m.group(1).strip() if m else None
    volume, issue, pages = _volume_issue_pages(tail)
    if code == "N":  # newspapers: 年-月-日(版次); the parenthesis is the page, not an issue
        m = re.search(r"\d{4}-\d{1,2}-\d{1,2}\s*\(\s*(\d{1,3})\s*\)", tail)
        volume, issue, pages = None, None, (m.group(1) if m else None)
    return ParsedReference(
        raw=raw,
        style="gbt7714",
        authors=authors,
        title=title.rstrip(".") or None,
        source=source or None,
        year=_year(tail),
        volume=volume,
        issue=issue,
        pages=pages,
        doi=_doi(text),
        type_code=code,
    )


def _parse_apa(raw: str, text: str, year_match: re.Match[str]) -> ParsedReference:
    authors = _authors(text[: year_match.start()])
    rest = text[year_match.end() :].lstrip(" .")
    m = re.match(r"^(?P<title>.+?[^A-Z])\.\s+(?P<tail>.*)$", rest)
    title, tail = (m.group("title"), m.group("tail")) if m else (rest.rstrip("."), "")
    source = None
    sm = re.match(r"^([^,.]+?)\s*(?=,|\.|$)", tail)
    if sm and not re.match(r"^https?:|^doi", sm.group(1), re.I):
        source = sm.group(1).strip()
    volume, issue, pages = _volume_issue_pages(tail)
    return ParsedReference(
        raw=raw,
        style="apa",
        authors=authors,
        title=title.strip() or None,
        source=source,
        year=int(year_match.group(1)),
        volume=volume,
        issue=issue,
        pages=pages,
        doi=_doi(text),
    )


def _parse_free(raw: str, text: str) -> ParsedReference | None:
    titles = re.findall(r"《([^《》]+)》", raw)
    if not titles:
        return None
    before = raw[: raw.index("《")]
    authors = _authors(re.sub(r"[:：,，]\s*$", "", before.strip()))
    tail = _norm(raw[raw.index(titles[0]) + len(titles[0]) + 1 :])
    source = titles[1] if len(titles) > 1 else None
    volume, issue, pages = _volume_issue_pages(tail)
    return ParsedReference(
        raw=raw,
        style="free",
        authors=authors,
        title=titles[0].strip(),
        source=source,
        year=_year(tail),
        volume=volume,
        issue=issue,
        pages=pages,
        doi=_doi(raw),
    )


def _doi(text: str) -> str | None:
    m = _DOI.search(text)
    return m.group(1).rstrip(".").lower() if m else None


def parse_reference(entry: str) -> ParsedReference:
    """The fields of one entry (see the module docstring)."""
    raw = entry.strip()
    if not raw:
        return ParsedReference(raw=entry, unparsable="空条目")
    text = _norm(_MARKER.sub("", raw, count=1))
    free = _parse_free(raw, text) if "《" in raw else None
    if free is not None:
        return free
    code = _TYPE.search(text)
    if code is not None:
        parsed = _parse_gbt(raw, text, code)
        if parsed is not None and parsed.title:
            return parsed
    year = re.search(r"\(\s*(19[5-9]\d|20[0-4]\d)[a-z]?(?:\s*,[^)]*)?\s*\)", text)
    if year is not None and year.start() > 0:
        return _parse_apa(raw, text, year)
    # Plain: "作者. 题名. 来源, 年" without a type code.
    parts = [p.strip() for p in re.split(r"\.\s+|\.(?=[\u4e00-\u9fff])", text) if p.strip()]
    if len(parts) >= 2 and not re.search(r"\d", parts[0]) and len(parts[0]) <= 60:
        volume, issue, pages = _volume_issue_pages(" ".join(parts[2:]))
        source_part = parts[2] if len(parts) > 2 else None
        return ParsedReference(
            raw=raw,
            style="plain",
            authors=_authors(parts[0]),
            title=parts[1],
            source=source_part.split(",")[0].strip() if source_part else None,
            year=_year(" ".join(parts[2:])),
            volume=volume,
            issue=issue,
            pages=pages,
            doi=_doi(text),
        )
    return ParsedReference(raw=raw, unparsable="读不出题名：既没有文献类型标识 [J]/[D]/…，也没有《题名》或 (年份)")


def parse_references(text: str | None = None, references: list[str] | None = None) -> list[ParsedReference]:
    """Entries from a pasted list or from a list of strings (one entry each)."""
    entries = list(references) if references is not None else split_entries(text or "")
    return [parse_reference(e) for e in entries]
