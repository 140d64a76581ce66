"""read_online_html without the browser: the body cache, paging and the public result.

* Cache (site-rules.md §3.8): complete bodies are kept 30 minutes, at most 16, keyed by record_ref.
  A trial or partial body is never kept, so the next call reads the reader again. A complete body
  is also kept in the store (its text in `library_texts`, its sections and coverage in
  `reader_pages`) and paged from there for `STORED_TTL` when memory has none (after a restart,
  past 30 minutes): the reader's visit costs 4 requests for the same text.
* Paging: by character `offset` + `max_characters` (default 20,000, at most 200,000), over the
  whole text or over one `section` (title, ignoring case and extra spaces, or 0-based index into
  `sections`); a section's slice includes its subsections.
* `complete_article`: False when the body is known to be incomplete (trial, or catalogue
  headings missing / text lost in extraction); None otherwise: CNKI never proves completeness.
* The public result never carries the reader URL (its invoice/nonce are short-lived secrets).

`ReadingService` ties it together over a `ReaderBackend` (site/reading.py implements it)."""

from __future__ import annotations

import re
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from cnki_mcp.clock import Clock
from cnki_mcp.errors import ContentPartial, DocumentNotFound, HtmlEntryNotFound, InvalidInput
from cnki_mcp.identity import Paper
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.models import DetailPage, ReaderPage, ReaderScope, Section
from cnki_mcp.parse import PARSER_VERSION
from cnki_mcp.store.reader_pages import READER_PAGES_KEPT, StoredReaderPage

CACHE_TTL_SECONDS = 30 * 60
STORED_TTL = READER_PAGES_KEPT  # a stored complete body: read by the current parser version within 30 days
CACHE_MAX_ENTRIES = 16
DEFAULT_MAX_CHARACTERS = 20_000
MAX_CHARACTERS = 200_000
CONTENT_PARTIAL = ContentPartial.code  # a warning, never raised (errors.WARNING_CODES)
_WS = re.compile(r"\s+")


def complete_article(page: ReaderPage) -> bool | None:
    """False: known incomplete (trial or partial); None: cannot be confirmed either way."""
    if page.trial or page.coverage.scope in (ReaderScope.TRIAL, ReaderScope.PARTIAL):
        return False
    if page.coverage.missing_catalog_headings:
        return False
    return None


def cacheable(page: ReaderPage) -> bool:
    return complete_article(page) is not False


@dataclass(frozen=True, slots=True)
class Stamp:
    """When something was kept, on both clocks: its age is the larger of the two. The monotonic
    clock stops while a laptop sleeps (Linux, macOS), so "30 minutes" on it alone lasted the
    night; the wall clock alone would follow a clock put back."""

    mono: float
    wall: datetime

    @classmethod
    def now(cls, clock: Clock) -> Stamp:
        return cls(clock.monotonic(), clock.now())

    def age(self, clock: Clock) -> float:
        return max(clock.monotonic() - self.mono, (clock.now() - self.wall).total_seconds())


@dataclass(frozen=True, slots=True)
class CachedBody:
    record_ref: str
    page: ReaderPage
    observed_at: datetime
    stored: Stamp


class BodyCache:
    """In-memory LRU of complete reader bodies (never trial or partial ones, unless
    `keep_partial`: the cache continuations page a trial or partial body from)."""

    def __init__(
        self,
        clock: Clock,
        *,
        ttl: float = CACHE_TTL_SECONDS,
        max_entries: int = CACHE_MAX_ENTRIES,
        keep_partial: bool = False,
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self._max = max_entries
        self._keep_partial = keep_partial
        self._items: OrderedDict[str, CachedBody] = OrderedDict()

    def __len__(self) -> int:
        self._expire()
        return len(self._items)

    def __contains__(self, record_ref: object) -> bool:
        return isinstance(record_ref, str) and self.get(record_ref) is not None

    def _expire(self) -> None:
        for ref in [r for r, e in self._items.items() if e.stored.age(self._clock) >= self._ttl]:
            del self._items[ref]

    def get(self, record_ref: str) -> CachedBody | None:
        self._expire()
        entry = self._items.get(record_ref)
        if entry is not None:
            self._items.move_to_end(record_ref)
        return entry

    def put(self, record_ref: str, page: ReaderPage, observed_at: datetime) -> bool:
        """Keep `page` unless it is trial or partial (kept anyway with `keep_partial`); returns
        whether it was kept."""
        if not self._keep_partial and not cacheable(page):
            self._items.pop(record_ref, None)
            return False
        self._items[record_ref] = CachedBody(record_ref, page, observed_at, Stamp.now(self._clock))
        self._items.move_to_end(record_ref)
        while len(self._items) > self._max:
            self._items.popitem(last=False)
        return True

    def drop(self, record_ref: str) -> None:
        self._items.pop(record_ref, None)

    def clear(self) -> None:
        self._items.clear()


class PublicCoverage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    container: str
    dom_characters: int
    extracted_characters: int
    missing_catalog_headings: list[str]
    non_text_elements: int
    scope: ReaderScope


class SelectedSection(BaseModel):
    index: int
    level: int
    title: str
    offset: int  # in the whole text
    length: int


class ReadResult(BaseModel):
    """What read_online_html returns. No reader URL, ever."""

    model_config = ConfigDict(extra="forbid")

    record_ref: str
    title: str | None
    text: str
    sections: list[Section]  # offsets in the whole text
    section: SelectedSection | None = None
    offset: int  # within the whole text, or within the selected section
    next_offset: int | None
    total_characters: int  # of the whole text, or of the selected section
    trial: bool
    coverage: PublicCoverage
    complete_article: bool | None
    source: Literal["reader", "cache"]
    observed_at: datetime
    warnings: list[str] = []


def _norm(title: str) -> str:
    """A section title as compared: NFKC (full-width （一） is (一), CO₂ is CO2, as a client types
    them), extra spaces and case ignored."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", title)).strip().casefold()


def find_section(sections: list[Section], wanted: str | int) -> tuple[int, Section]:
    """The section named `wanted` (case and extra spaces ignored; a unique containing title
    also matches) or at 0-based index `wanted`. INVALID_ARGUMENT lists the titles, or, when several
    titles contain the name, the matching ones with their indexes."""
    titles = [s.title for s in sections]
    if isinstance(wanted, int) or (
        isinstance(wanted, str)
        and wanted.strip().isdigit()
        and not any(_norm(t) == _norm(wanted) for t in titles)
    ):
        index = int(wanted)
        if 0 <= index < len(sections):
            return index, sections[index]
        raise InvalidInput("章节序号超出范围", section=wanted, sections=len(sections))
    key = _norm(wanted)
    if not key:
        raise InvalidInput("章节名为空")
    for i, s in enumerate(sections):
        if _norm(s.title) == key:
            return i, s
    containing = [(i, s) for i, s in enumerate(sections) if key in _norm(s.title)]
    if len(containing) == 1:
        return containing[0]
    if containing:
        # Several sections contain the name: none is chosen; the caller picks one by its index.
        matches = [{"index": i, "title": s.title} for i, s in containing]
        raise InvalidInput("章节名不唯一，请用 matches 中的序号", section=wanted, matches=matches)
    raise InvalidInput("未找到该章节", section=wanted, available=titles)


def page_body(
    page: ReaderPage,
    record_ref: str,
    *,
    observed_at: datetime,
    source: Literal["reader", "cache"],
    section: str | int | None = None,
    offset: int = 0,
    max_characters: int = DEFAULT_MAX_CHARACTERS,
) -> ReadResult:
    """One page of the body (or of one section) as the public result."""
    if not 1 <= max_characters <= MAX_CHARACTERS:
        raise InvalidInput("max_characters 须在 1 到 200000 之间", max_characters=max_characters)
    if offset < 0:
        raise InvalidInput("offset 不能为负数", offset=offset)
    scope_text = page.text
    selected: SelectedSection | None = None
    if section is not None and section != "":
        index, sec = find_section(page.sections, section)
        scope_text = page.text[sec.offset : sec.offset + sec.length]
        selected = SelectedSection(index=index, level=sec.level, title=sec.title, offset=sec.offset,
                                   length=sec.length)  # fmt: skip
    total = len(scope_text)
    if offset > total:
        raise InvalidInput("offset 超出正文长度", offset=offset, total_characters=total)
    end = min(total, offset + max_characters)
    cov = page.coverage
    warnings = [CONTENT_PARTIAL] if cov.scope is ReaderScope.PARTIAL else []
    return ReadResult(
        record_ref=record_ref,
        title=page.title,
        text=scope_text[offset:end],
        sections=list(page.sections),
        section=selected,
        offset=offset,
        next_offset=end if end < total else None,
        total_characters=total,
        trial=page.trial,
        coverage=PublicCoverage(
            container=cov.container,
            dom_characters=cov.dom_characters,
            extracted_characters=cov.extracted_characters,
            missing_catalog_headings=list(cov.missing_catalog_headings),
            non_text_elements=cov.non_text_elements,
            scope=cov.scope,
        ),
        complete_article=complete_article(page),
        source=source,
        observed_at=observed_at,
        warnings=warnings,
    )


# --- the service --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReaderCapture:
    """What the browser side hands back: the parsed reader and the detail page it came from."""

    page: ReaderPage
    detail: DetailPage
    detail_url: str  # internal (may carry an expiring token); never shown
    same_tab: bool = False  # the reader replaced the detail tab instead of opening a new one
    waited_seconds: float = 0.0


class ReaderBackend(Protocol):
    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture: ...


class PaperStore(Protocol):
    def get(self, record_ref: str) -> Paper | None: ...

    def resolve_ref(self, record_ref: str) -> str: ...

    def upsert_from_detail(
        self,
        detail: DetailPage,
        locator: str | None,
        observed_at: datetime,
        expected_ref: str | None = None,
        **kwargs: Any,
    ) -> Paper: ...

    def save_fulltext(
        self, record_ref: str, kind: Literal["html", "pdf"], text: str, observed_at: datetime, *, complete: bool = True
    ) -> bool: ...

    def save_reader_page(
        self, record_ref: str, page: ReaderPage, observed_at: datetime, *, parser_version: int
    ) -> None: ...

    def reader_page(self, record_ref: str, now: datetime, *, parser_version: int) -> StoredReaderPage | None: ...


class ReadingService:
    """read_online_html for one record: cache first, else the reader through `backend`."""

    def __init__(
        self, store: PaperStore, backend: ReaderBackend, clock: Clock, cache: BodyCache | None = None
    ):
        self._store = store
        self._backend = backend
        self._clock = clock
        self.cache = cache or BodyCache(clock)
        # The trial or partial body a call read, for the calls that page on through it (offset > 0):
        # each page opened the reader again, through the HTML阅读 order URL, and cut its page from
        # another capture. A call from offset 0 still reads again (a complete body may come now).
        self.paging = BodyCache(clock, keep_partial=True)
        self._reads = KeyedLocks()  # one reader visit per paper at a time
        # record_ref -> when its detail page was seen without an HTML reader entry (`Stamp`: both clocks):
        # asked again only after the body cache's TTL, so repeated calls cost no 1-3 requests each
        self._no_entry: dict[str, tuple[Stamp, dict[str, Any]]] = {}  # ref -> (when, the error's details)

    async def read(
        self,
        record_ref: str,
        *,
        section: str | int | None = None,
        offset: int = 0,
        max_characters: int = DEFAULT_MAX_CHARACTERS,
        op: Any = None,
    ) -> ReadResult:
        # argument errors before any site work
        if not 1 <= max_characters <= MAX_CHARACTERS:
            raise InvalidInput("max_characters 须在 1 到 200000 之间", max_characters=max_characters)
        if offset < 0:
            raise InvalidInput("offset 不能为负数", offset=offset)
        ref = self._store.resolve_ref(record_ref)
        seen = self._no_entry.get(ref)
        if seen is not None:
            if seen[0].age(self._clock) < CACHE_TTL_SECONDS:
                raise HtmlEntryNotFound(**{**seen[1], "record_ref": record_ref, "remembered": True})
            del self._no_entry[ref]
        hit = self._cached(ref, offset)
        if hit is None:
            # Two calls for one paper at once (two clients): the second waits for the first and
            # pages its body from the cache instead of opening the reader again.
            async with self._reads.hold(ref):
                hit = self._cached(ref, offset)
                if hit is None:
                    return await self._read_site(record_ref, ref, section, offset, max_characters, op)
        return page_body(hit.page, ref, observed_at=hit.observed_at, source="cache", section=section,
                         offset=offset, max_characters=max_characters)  # fmt: skip

    def forget_incomplete(self) -> None:
        """Someone logged in (wherever: `IdentityMemory.on_access`): the trial or partial bodies kept for continuations
        were read without that access, so a continuation reads the reader again (the whole body
        may come now). It paged the trial body for up to 30 minutes after the login."""
        self.paging.clear()

    def _cached(self, ref: str, offset: int) -> CachedBody | None:
        """The complete body read within the cache time, else the one the store keeps; for a
        continuation (offset > 0) also the trial or partial body the call before it read."""
        hit = self.cache.get(ref)
        if hit is None and offset > 0:
            hit = self.paging.get(ref)
        if hit is None:
            hit = self._stored(ref)
        return hit

    def _stored(self, ref: str) -> CachedBody | None:
        """The complete body the store keeps for `ref`, read by this parser version within
        STORED_TTL (`Store.reader_page` judges version and age before it reads the row), put back
        in the memory cache."""
        stored = self._store.reader_page(ref, self._clock.now(), parser_version=PARSER_VERSION)
        if stored is None or not cacheable(stored.page):
            return None
        self.cache.put(ref, stored.page, stored.observed_at)
        return self.cache.get(ref)

    async def _read_site(
        self, record_ref: str, ref: str, section: str | int | None, offset: int, max_characters: int, op: Any
    ) -> ReadResult:
        paper = self._store.get(ref)
        if paper is None:
            raise DocumentNotFound.unknown_ref(record_ref)
        try:
            capture = await self._backend.read(paper, op)
        except HtmlEntryNotFound as exc:
            # expired entries go as new ones come, so the map holds only the last 30 minutes'
            self._no_entry = {
                r: seen for r, seen in self._no_entry.items() if seen[0].age(self._clock) < CACHE_TTL_SECONDS
            }
            self._no_entry[ref] = (Stamp.now(self._clock), dict(exc.details))  # the files the page offered are said again
            raise
        now = self._clock.now()
        # stored as the enrichment stores it: a page of another version is read again by get_metadata
        self._store.upsert_from_detail(
            capture.detail, capture.detail_url, now, expected_ref=ref, parser_version=PARSER_VERSION
        )
        if self.cache.put(ref, capture.page, now):
            self.paging.drop(ref)
        else:
            self.paging.put(ref, capture.page, now)
        # Kept in the store too (bounded, DESIGN.md §Library search) so search_library finds it;
        # a trial or partial body never replaces a complete one.
        complete = cacheable(capture.page)
        if self._store.save_fulltext(ref, "html", capture.page.text, now, complete=complete) and complete:
            self._store.save_reader_page(ref, capture.page, now, parser_version=PARSER_VERSION)
        return page_body(capture.page, ref, observed_at=now, source="reader", section=section,
                         offset=offset, max_characters=max_characters)  # fmt: skip
