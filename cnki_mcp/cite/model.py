"""The record that every citation format renders: `CiteRecord`.

A plain, format-neutral description of one document. `from_paper` builds it from a
plain dict (the store's Paper dumped with `model_dump()`, a grid row, a detail page or
a hand-written dict), so the rest of the package never depends on the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .places import institution_city

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

Language = Literal["zh", "en"]


class DocKind(StrEnum):
    """What a document is, decided from CNKI's type label (first match wins)."""

    CONFERENCE = "conference"
    PHD_THESIS = "phd_thesis"
    MASTERS_THESIS = "masters_thesis"
    THESIS = "thesis"
    NEWSPAPER = "newspaper"
    JOURNAL = "journal"
    BOOK = "book"
    YEARBOOK = "yearbook"
    STANDARD = "standard"
    PATENT = "patent"
    REPORT = "report"
    OTHER = "other"


# Checked in order on the CNKI type label; the first contained key wins.
_KIND_KEYS: tuple[tuple[str, DocKind], ...] = (
    ("会议", DocKind.CONFERENCE),
    ("博士", DocKind.PHD_THESIS),
    ("硕士", DocKind.MASTERS_THESIS),
    ("学位", DocKind.THESIS),
    ("论文", DocKind.THESIS),
    ("报纸", DocKind.NEWSPAPER),
    ("期刊", DocKind.JOURNAL),
    ("辑刊", DocKind.JOURNAL),
    ("图书", DocKind.BOOK),
    ("年鉴", DocKind.YEARBOOK),
    ("标准", DocKind.STANDARD),
    ("专利", DocKind.PATENT),
    ("成果", DocKind.REPORT),
    ("报告", DocKind.REPORT),
)

_KIND_ALIASES: dict[str, DocKind] = {
    "journal": DocKind.JOURNAL, "article": DocKind.JOURNAL, "conference": DocKind.CONFERENCE,
    "phd": DocKind.PHD_THESIS, "doctoral": DocKind.PHD_THESIS, "master": DocKind.MASTERS_THESIS,
    "masters": DocKind.MASTERS_THESIS, "thesis": DocKind.THESIS, "newspaper": DocKind.NEWSPAPER,
    "book": DocKind.BOOK, "yearbook": DocKind.YEARBOOK, "standard": DocKind.STANDARD,
    "patent": DocKind.PATENT, "report": DocKind.REPORT,
}


THESIS_KINDS = (DocKind.PHD_THESIS, DocKind.MASTERS_THESIS, DocKind.THESIS)

# A date inside a 会议时间 value: 2016-07-13, 2016.7.13, 2016年7月13日, 1990-10, 2016.
_EVENT_DATE = re.compile(r"(?<!\d)(\d{4})(?:\s*[-./年]\s*(\d{1,2})(?:\s*[-./月]\s*(\d{1,2}))?)?")


def doc_kind(doc_type: str | None) -> DocKind:
    label = (doc_type or "").strip()
    for key, kind in _KIND_KEYS:
        if key in label:
            return kind
    return _KIND_ALIASES.get(label.lower(), DocKind.OTHER)


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = re.sub(r"\s+", " ", str(value)).strip()
    return text or None


class CiteRecord(BaseModel):
    """One document to cite. Empty strings are normalised to None."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    record_ref: str = ""
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    doc_type: str | None = None  # CNKI label: 期刊 / 博士 / 硕士 / 会议 / 报纸 / 图书 / 外文期刊 ...
    source: str | None = None  # journal / school / proceedings / newspaper / publisher
    year: int | None = None
    date: str | None = None  # ISO-ish yyyy[-mm[-dd]]
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    doi: str | None = None
    url: str | None = None
    publisher: str | None = None
    place: str | None = None
    conference: str | None = None  # the meeting's name (会议名称); `source` is the proceedings
    event_place: str | None = None  # 会议地点, as CNKI prints it (`中国北京`)
    event_date: str | None = None  # 会议时间: `2016-07-13`, `1990-10`, or a range of two dates
    keywords: list[str] = Field(default_factory=list)
    abstract: str | None = None
    language: Language | None = None  # None: decided from the title (Han characters -> zh)
    online_first: bool = False  # 网络首发: no volume, issue or pages exist yet
    full_record_read: bool = False  # a detail page or CNKI's export was read: what it lacks, CNKI lacks

    @field_validator("title", "record_ref", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return _clean(v) or ""

    @field_validator("doc_type", "source", "date", "volume", "issue", "pages", "doi", "url", "publisher",
                     "place", "conference", "event_place", "event_date", "abstract", mode="before")
    @classmethod
    def _opt_text(cls, v: Any) -> str | None:
        return _clean(v)

    @field_validator("authors", "keywords", mode="before")
    @classmethod
    def _names(cls, v: Any) -> list[str]:
        if v is None:
            return []
        if isinstance(v, str):
            v = re.split(r"[;；]", v)
        out: list[str] = []
        for item in v:
            name = item.get("name") if isinstance(item, Mapping) else item
            text = _clean(name)
            if text:
                out.append(text)
        return out

    @field_validator("authors")
    @classmethod
    def _persons(cls, v: list[str]) -> list[str]:
        # an author list written as one author (`Smith, J. and Jones, K.`) is its persons
        from .names import joined_persons  # names imports this module

        return [person for name in v for person in joined_persons(name)]

    @field_validator("year", mode="before")
    @classmethod
    def _year(cls, v: Any) -> int | None:
        if v is None or v == "":
            return None
        m = re.search(r"\d{4}", str(v))
        return int(m.group()) if m else None

    @model_validator(mode="before")
    @classmethod
    def _thesis_place(cls, data: Any) -> Any:
        """A thesis's place of publication is its institution's city (CNKI never shows it):
        looked up in the packaged table (places.py) when the record carries none."""
        if not isinstance(data, Mapping) or _clean(data.get("place")):
            return data
        if doc_kind(data.get("doc_type")) not in THESIS_KINDS:
            return data
        city = institution_city(_clean(data.get("source")))
        return {**data, "place": city} if city else data

    @property
    def kind(self) -> DocKind:
        return doc_kind(self.doc_type)

    @property
    def lang(self) -> Language:
        if self.language:
            return self.language
        # the language the work is written in: an English paper in 中国人口·资源与环境 is English
        # (`et al.`, `Chen, J.`); the source decides only for a record without a title
        return "zh" if HAN.search(self.title or self.source or "") else "en"

    @property
    def effective_year(self) -> int | None:
        if self.year is not None:
            return self.year
        parts = self.date_parts
        return parts[0] if parts else None

    @property
    def date_parts(self) -> list[int]:
        """[year, month?, day?] from `date` (falls back to [year]). A date of another year
        than `year` (the issue's year, which the citation gives) is not used."""
        if self.date:
            nums = [int(n) for n in re.findall(r"\d+", self.date)[:3]]
            valid = nums and nums[0] >= 1000 and (len(nums) < 2 or 1 <= nums[1] <= 12)
            if valid and (self.year is None or nums[0] == self.year):
                return nums
        return [self.year] if self.year is not None else []

    @property
    def event_date_parts(self) -> list[list[int]]:
        """The meeting date as CSL date parts: one [y, m?, d?], or two for a range."""
        if not self.event_date:
            return []
        out: list[list[int]] = []
        for m in _EVENT_DATE.finditer(self.event_date):
            parts = [int(g) for g in m.groups() if g]
            if len(parts) > 1 and not 1 <= parts[1] <= 12:
                parts = parts[:1]
            out.append(parts)
        return out[:2]

    @property
    def first_page(self) -> str | None:
        return split_pages(self.pages)[0]

    @property
    def last_page(self) -> str | None:
        return split_pages(self.pages)[1]


def split_pages(pages: str | None) -> tuple[str | None, str | None]:
    """`"51-66"` -> ("51", "66"); `"7"` -> ("7", None). Accepts -, –, —, ~ and + ranges' first part."""
    if not pages:
        return None, None
    parts = [p.strip() for p in re.split(r"\s*[-–—~]+\s*", pages, maxsplit=1)]
    start = parts[0] or None
    end = parts[1] if len(parts) > 1 and parts[1] else None
    return start, end


_FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "source": ("source", "journal", "container_title", "degree_place"),
    "doc_type": ("doc_type", "type", "resource_type"),
    "url": ("url", "detail_url"),
    "pages": ("pages", "page"),
    "place": ("place", "publisher_place"),
    # not `online_date`: 在线公开时间 is "不代表文献的发表时间" unless the paper is online-first,
    # which only the stored paper knows (cite.sources.cite_source puts that date in `date`)
    "date": ("date",),
    "event_place": ("event_place", "conference_place"),
    "event_date": ("event_date", "conference_date"),
}


def from_paper(data: Mapping[str, Any] | BaseModel) -> CiteRecord:
    """Build a CiteRecord from a plain dict (or a pydantic model, dumped first).

    Authors may be name strings or `{"name": ...}` objects. Unknown keys are ignored.
    """
    raw: Mapping[str, Any] = data.model_dump() if isinstance(data, BaseModel) else data
    values: dict[str, Any] = dict(raw)
    for field, names in _FIELD_ALIASES.items():
        if not values.get(field):
            for name in names:
                if raw.get(name):
                    values[field] = raw[name]
                    break
    return CiteRecord.model_validate(values)


def to_records(items: Iterable[CiteRecord | Mapping[str, Any] | BaseModel]) -> list[CiteRecord]:
    return [it if isinstance(it, CiteRecord) else from_paper(it) for it in items]
