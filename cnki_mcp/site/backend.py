"""The `SiteBackend` protocol: what the pipeline and the tools ask of CNKI, independent of how
(Playwright against the real site or the simulator, or a fake in component tests).

Every call takes the operation it works for (`SiteOp`): the backend charges its budget before
each request (through the limiter) and hands human steps to the gate under that operation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.models import DetailPage, ExportRecord, GridHead, GridPage, HeaderIdentity, JournalPage

if TYPE_CHECKING:  # selectolax stays out of the start-up path (DESIGN.md "Start-up")
    from cnki_mcp.parse.citations import CitationListPage


class SortOrder(StrEnum):
    RELEVANCE = "relevance"  # sortField FFD
    DATE_DESC = "date_desc"  # PT
    CITED_DESC = "cited_desc"  # CF
    DOWNLOADED_DESC = "downloaded_desc"  # DFR


SORT_FIELDS: dict[SortOrder, str] = {
    SortOrder.RELEVANCE: "FFD",
    SortOrder.DATE_DESC: "PT",
    SortOrder.CITED_DESC: "CF",
    SortOrder.DOWNLOADED_DESC: "DFR",
}


class GridRequest(BaseModel):
    """One page of one search: the compiled `Subject` group replaces the template's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: dict[str, Any]  # {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [...]}
    anchor: str  # first positive leaf value: typed into the real form when the template is captured
    sort: SortOrder = SortOrder.RELEVANCE
    year_from: int | None = None
    year_to: int | None = None
    page: int = Field(default=1, ge=1)
    page_size: int = Field(default=50, ge=1, le=50)
    # The `turnpage` cursor for this page (page > 1), as the previous page's `GridPage.turnpage`
    # gave it, e.g. from a search checkpoint written by another process. The site uses it when
    # its own cache has none and falls back to re-fetching earlier pages if CNKI rejects it.
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class Pacing:
    """How fast the site answers under the request limiter: `interval`, the spacing between
    request starts in force (backoff included), and `latency`, the median time a grid page took
    from its start to its answer (of the last few timed in this process)."""

    interval: float
    latency: float


# What the search asks for the pacing it meets (services: the limiter's `pacing`); None: not known
PacingSource = Callable[[], "Pacing | None"]


# `grid(..., follow=f)`: `f(head)` is called once, as soon as the answered page is known to have
# rows (its head, before the rows are parsed); it returns True when it asked another page, which
# then gets SEND_YIELDS loop turns to leave before the rows are parsed (`FollowOnce.offer`). A
# backend may also never call it: the caller then decides on the parsed page.
GridFollow = Callable[[GridHead], bool]
# Loop turns a page just asked gets before the caller goes on with synchronous work (parsing or
# storing the page before it, ~10-25 ms for 50 rows): one turn leaves the request inside
# Playwright's send path, so it waited for that work; five put it on the wire (growth benchmark,
# 3,000 candidates: from the call to the simulator's arrival, median 23.6 ms with one, 6.9 ms with
# five, 6.7 ms with twenty).
SEND_YIELDS = 5


class FollowOnce:
    """A `GridFollow` called at most once across the retries of one grid call."""

    def __init__(self, follow: GridFollow | None) -> None:
        self._follow = follow
        self.called = False

    @property
    def pending(self) -> bool:
        return self._follow is not None and not self.called

    def __call__(self, head: GridHead) -> bool:
        if not self.pending:
            return False
        self.called = True
        assert self._follow is not None
        return self._follow(head)

    async def offer(self, head: GridHead) -> bool:
        """Give the caller `head` of a page with rows; when it asked another page, let that leave
        (SEND_YIELDS) before the answered page's rows are parsed. True when it was called."""
        if not head.has_rows or not self.pending:
            return False
        if self(head):
            for _ in range(SEND_YIELDS):
                await asyncio.sleep(0)
        return True


class SiteOp(Protocol):
    """The operation a request works for (jobs.OperationContext satisfies it)."""

    @property
    def operation_id(self) -> str: ...

    @property
    def on_verification(self) -> str: ...  # "wait" | "skip"

    def charge(self) -> None: ...

    def awaiting_user(self, message: str) -> None: ...

    def running(self) -> None: ...


class SiteBackend(Protocol):
    async def grid(
        self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None
    ) -> GridPage:
        """One grid page. Raises typed errors (RATE_LIMITED, PAGINATION_MISMATCH, ...). `follow`:
        see `GridFollow`."""
        ...

    async def detail(self, locator: str, op: SiteOp | None = None) -> DetailPage:
        """A detail page by its internal locator URL (LOCATOR_EXPIRED when the token died)."""
        ...

    async def journal(self, url: str, expected_source: str | None = None, op: SiteOp | None = None) -> JournalPage:
        ...

    async def identity(self, op: SiteOp | None = None) -> HeaderIdentity:
        """Who the site says we are (opens the search page if nothing is open)."""
        ...

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> list[ExportRecord]:
        """EndNote export of up to 20 grid rows by their export ids, in one request."""
        ...

    async def close(self) -> None: ...


class CitationBackend(Protocol):
    """The article page's citation JSON API (docs/citation-api.md); `CnkiSite` implements it."""

    async def citation_list(
        self, detail_url: str, kind: str, type_code: str, start: int, op: SiteOp | None = None
    ) -> CitationListPage:
        """One list page (at most 10 items) of one database; LOCATOR_EXPIRED for a dead token."""
        ...

    async def citation_metrics(self, detail_url: str, op: SiteOp | None = None) -> dict[str, int]: ...

    async def grid(self, request: GridRequest, op: SiteOp | None = None) -> GridPage:
        """Used to find a paper's current detail link by its exact title when its token expired."""
        ...
