"""Detail and journal enrichment shared by the research search and `get_metadata` (site-rules.md §3.4
"Enrichment", §3.8 TTLs, §3.10 relocation).

A worker pool handles the refs; the limiter inside the backend, not the pool size, sets the
request rate. A detail page fresher than 30 days (same parser version) is reused; a journal page
is fetched once per source key (de-duplicated in flight, then cached in the store with its TTL).
Per-record failures are recorded on the operation with `record_ref`, `title`, `stage`, `cause`
and the batch continues; fatal errors stop it (BUDGET_EXHAUSTED lets requests in flight land)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from cnki_mcp.clock import Clock
from cnki_mcp.errors import (
    RELOCATE_FAILED,
    BudgetExhausted,
    CnkiError,
    DocumentNotFound,
    LocatorExpired,
    SourceIdentityUnconfirmed,
)
from cnki_mcp.identity import Paper, source_key, title_key
from cnki_mcp.jobs import OperationContext
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.models import ExportRecord
from cnki_mcp.parse import PARSER_VERSION
from cnki_mcp.query.compiler import compile_expression, title_lookup_expression
from cnki_mcp.rank import SourceQuality
from cnki_mcp.site.backend import GridRequest, SiteBackend
from cnki_mcp.store import MISMATCH, PRESENT, CachedJournal, Store
from cnki_mcp.store.db import fresh

log = logging.getLogger(__name__)

DETAIL_TTL = timedelta(days=30)
DEFAULT_WORKERS = 8
LOOKUP_PAGE_SIZE = 50
FAILED = "failed"

FATAL_CODES = frozenset(
    {
        "CANCELLED",
        "BROWSER_UNAVAILABLE",
        "BROWSER_PROFILE_IN_USE",
        "DATA_DIRECTORY_IN_USE",
        "BUDGET_EXHAUSTED",
        "RATE_LIMITED",
        "SITE_UNAVAILABLE",
        "VERIFICATION_TIMEOUT",
        "LOGIN_REQUIRED",
        "QUERY_TEMPLATE_UNAVAILABLE",
        "QUERY_TEMPLATE_UNSUPPORTED",
    }
)


def is_fatal(error: BaseException) -> bool:
    """Errors that stop the whole batch (site-rules.md §3.9); anything else fails one record or channel."""
    if isinstance(error, CnkiError):
        return error.fatal or error.code in FATAL_CODES
    return True  # a bug, cancellation: never swallowed


EXPORT_BATCH = 20  # records per batch export request (site-rules.md §9)


async def export_batches(
    backend: SiteBackend, ids: Sequence[str], ctx: OperationContext
) -> AsyncIterator[tuple[list[str], list[ExportRecord] | CnkiError]]:
    """CNKI's batch export of grid rows (their export ids), EXPORT_BATCH per request, the requests
    side by side under the one limiter (it spaces them): each batch in order, with its records or
    the error that failed it. A fatal error (is_fatal) is raised once every other batch has landed
    or failed, so no answer that came back is lost."""
    batches = [list(ids[start : start + EXPORT_BATCH]) for start in range(0, len(ids), EXPORT_BATCH)]
    tasks = [asyncio.ensure_future(backend.export_records(batch, op=ctx)) for batch in batches]
    fatal: CnkiError | None = None
    try:
        for batch, task in zip(batches, tasks, strict=True):
            try:
                records = await task
            except CnkiError as exc:
                if is_fatal(exc):
                    fatal = fatal or exc
                else:
                    yield batch, exc
                continue
            yield batch, records
    finally:
        for task in tasks:  # only when the caller stopped early or was cancelled
            if not task.done():
                task.cancel()
    if fatal is not None:
        raise fatal


def _export_match(paper: Paper, records: Sequence[ExportRecord]) -> ExportRecord | None:
    """The exported record of `paper` among a batch's records: same title key and, when several
    records share it (the same title by different authors), the same first author; None when
    nothing fits alone (the paper's detail page decides then)."""
    want = title_key(paper.title)
    same = [r for r in records if title_key(r.title) == want]
    if len(same) > 1:
        first = paper.authors[0].name if paper.authors else ""
        same = [r for r in same if first and r.authors and r.authors[0] == first]
    return same[0] if len(same) == 1 else None


async def fill_by_export(
    store: Store,
    backend: SiteBackend,
    clock: Clock,
    exports: Mapping[str, str],
    ctx: OperationContext,
    on_error: Callable[[CnkiError], None] | None = None,
) -> list[str]:
    """Batch-export the rows `exports` names (export id -> ref, EXPORT_BATCH per request) and
    fill their papers (`Store.fill_from_export`); the refs the export did not answer (a failed
    request, a record it did not list or that cannot be told apart) are returned. `on_error`
    hears the error of each failed request (not a fatal one: that is raised)."""
    left: list[str] = []
    async for batch, records in export_batches(backend, list(exports), ctx):
        if isinstance(records, CnkiError):
            if on_error is not None:
                on_error(records)
            left += [exports[e] for e in batch]
            continue
        papers = store.papers_by_refs([exports[e] for e in batch])
        for export_id in batch:
            ref = exports[export_id]
            paper = papers.get(ref)
            record = _export_match(paper, records) if paper is not None else None
            if record is None:
                left.append(ref)
            else:
                store.fill_from_export(ref, record, clock.now())
    return left


def is_journal(paper: Paper) -> bool:
    return "期刊" in (paper.doc_type or "") and bool(paper.source) and bool(paper.source_url)


def record_item_error(
    ctx: OperationContext, error: CnkiError, paper: Paper | None, stage: str, **extra: Any
) -> None:
    details: dict[str, Any] = {"stage": stage, "cause": dict(error.details), **extra}
    if paper is not None:
        details["record_ref"] = paper.record_ref
        details["title"] = paper.title
    ctx.add_item_error(error, **details)


class JournalFlight:
    """One journal page being read, and how many readers wait for it (Enricher._journal)."""

    def __init__(self, task: asyncio.Task[None]) -> None:
        self.task = task
        self.readers = 0


def read_in_full(paper: Paper, now: datetime) -> bool:
    """CNKI's full record of `paper` (a detail page or its batch export) was read within
    DETAIL_TTL: its abstract and keywords are known, and a field it lacks, CNKI lacks."""
    return any(
        seen is not None and fresh(seen, now, DETAIL_TTL) for seen in (paper.detail_observed_at, paper.export_observed_at)
    )


class Enricher:
    def __init__(
        self,
        backend: SiteBackend,
        store: Store,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
        public_origins: tuple[str, ...] = (),
    ) -> None:
        self.backend = backend
        self.store = store
        self.clock = clock
        self.workers = max(1, workers)
        self.public_origins = public_origins
        self._journal_flights: dict[str, JournalFlight] = {}
        # record_ref -> the one detail request in flight for it; every operation of the server
        # enriches through this one Enricher (ResearchPipeline), so it is the process's one owner
        self._detail_flights = KeyedLocks()

    # --- freshness and cached evidence --------------------------------------------------

    def detail_fresh(self, ref: str, now: datetime | None = None) -> bool:
        stored = self.store.detail_page(ref)
        if stored is None or stored.parser_version != PARSER_VERSION:
            return False
        return fresh(stored.observed_at, now or self.clock.now(), DETAIL_TTL)

    def abstract_read(self, paper: Paper, now: datetime | None = None) -> bool:
        """Abstract and keywords read within DETAIL_TTL: a detail page or CNKI's batch export."""
        return read_in_full(paper, now or self.clock.now())

    def journal_cached(self, paper: Paper) -> CachedJournal | None:
        key = source_key(paper.source)
        if not key:
            return None
        return self.store.journal_quality(key, self.clock.now(), parser_version=PARSER_VERSION)

    def source_quality(self, paper: Paper) -> SourceQuality | None:
        """Journal evidence that may be scored: present and by the current parser."""
        cached = self.journal_cached(paper)
        if cached is None or cached.state != PRESENT or cached.page is None:
            return None
        page = cached.page
        return SourceQuality(tuple(page.tiers), page.composite_if, page.aggregate_if)

    # --- one paper ----------------------------------------------------------------------

    async def enrich_one(
        self,
        ref: str,
        ctx: OperationContext,
        *,
        quality: bool = True,
        refresh: bool = False,
        detail: bool = True,
    ) -> Paper | None:
        """Detail (unless fresh, or not `detail`), then the journal (journal articles with a source
        URL, when `quality`). Non-fatal failures are recorded on `ctx`; fatal ones raise."""
        paper = self.store.get(ref)
        if paper is None:
            return None
        if self._detail_due(paper, refresh=refresh, detail=detail):
            # One detail request per paper at a time: an operation that waited
            # for another one reading the same page (two clients at once) takes the stored page.
            async with self._detail_flights.hold(ref):
                if not refresh and self.detail_fresh(ref):
                    paper = self.store.get(ref) or paper
                else:
                    try:
                        paper = await self._detail(paper, ctx)
                    except CnkiError as exc:
                        if is_fatal(exc):
                            raise
                        record_item_error(ctx, exc, paper, "detail")
                        return paper
        if self._journal_due(paper, quality=quality):
            await self._journal(paper, ctx)
        return paper

    def _detail_due(self, paper: Paper, *, refresh: bool, detail: bool) -> bool:
        """`enrich_one` fetches the paper's detail page."""
        return detail and (refresh or not self.detail_fresh(paper.record_ref))

    def _journal_due(self, paper: Paper, *, quality: bool) -> bool:
        """`enrich_one` fetches the paper's journal page (once its detail is known)."""
        return quality and is_journal(paper) and self.journal_cached(paper) is None

    def _has_work(self, paper: Paper, *, quality: bool, refresh: bool, detail: bool) -> bool:
        """`enrich_one` would fetch something for `paper` (its detail or its journal page)."""
        return self._detail_due(paper, refresh=refresh, detail=detail) or self._journal_due(paper, quality=quality)

    async def _detail(self, paper: Paper, ctx: OperationContext) -> Paper:
        if not paper.locator:
            paper = await self._relocate(paper, ctx)
        assert paper.locator is not None
        try:
            page = await self.backend.detail(paper.locator, op=ctx)
        except LocatorExpired:
            paper = await self._relocate(paper, ctx)  # once: an expired token
            assert paper.locator is not None
            page = await self.backend.detail(paper.locator, op=ctx)
        return self.store.upsert_from_detail(
            page,
            paper.locator,
            self.clock.now(),
            expected_ref=paper.record_ref,
            parser_version=PARSER_VERSION,
            public_origins=self.public_origins,
        )

    async def _relocate(self, paper: Paper, ctx: OperationContext) -> Paper:
        """Find the paper again by its exact title (one grid request) for a fresh locator."""
        compiled = compile_expression(title_lookup_expression([paper.title]))
        grid = await self.backend.grid(
            GridRequest(subject=compiled.subject, anchor=compiled.anchor, page_size=LOOKUP_PAGE_SIZE), op=ctx
        )
        want = title_key(paper.title)
        rows = [r for r in grid.rows if title_key(r.title) == want]
        for stored in self.store.upsert_from_grid(rows, self.clock.now(), public_origins=self.public_origins):
            if (
                self.store.resolve_ref(stored.record_ref) == self.store.resolve_ref(paper.record_ref)
                and stored.locator
            ):
                return stored
        raise DocumentNotFound("按题名重新定位失败", record_ref=paper.record_ref, title=paper.title, reason=RELOCATE_FAILED)

    async def _journal(self, paper: Paper, ctx: OperationContext) -> None:
        """Read the paper's journal page, once per source in flight: a second reader (another
        operation) awaits the same fetch. The fetch is shielded from a reader's cancellation, so
        the others still get it, and a search stopped by its deadline lets it land (its continue
        repeats no request). When the last reader leaves because its operation was cancelled
        (`operation_control cancel`, the server stopping), the fetch is cancelled too: a
        cancelled operation sends no more journal requests."""
        key = source_key(paper.source)
        flight = self._journal_flights.get(key)
        if flight is None:
            flight = JournalFlight(asyncio.ensure_future(self._fetch_journal(paper, key, ctx)))
            self._journal_flights[key] = flight

            def forget(done: asyncio.Future[None], started: JournalFlight = flight) -> None:
                # a later read of the source must not await a finished (or failed) flight
                if self._journal_flights.get(key) is started:
                    del self._journal_flights[key]
                if not done.cancelled():
                    # its readers already had its error; when they all left (a search stopped by
                    # its deadline lets the fetch land) nobody will, and asyncio would print the
                    # failed flight's traceback as "Task exception was never retrieved"
                    done.exception()

            flight.task.add_done_callback(forget)
        flight.readers += 1
        try:
            await asyncio.shield(flight.task)
        finally:
            flight.readers -= 1
            if flight.readers == 0 and not flight.task.done() and ctx.cancelled:
                # nobody waits for it any more: stop it, and let a later reader start afresh
                if self._journal_flights.get(key) is flight:
                    del self._journal_flights[key]
                flight.task.cancel()

    async def close(self) -> None:
        """Stop the journal reads still in flight (server exit, after the operations ended): a
        read whose search ended by its deadline or an error went on into the closing browser,
        and asyncio printed its failure as "unhandled exception during asyncio.run() shutdown"."""
        flights = list(self._journal_flights.values())
        self._journal_flights.clear()
        for flight in flights:
            flight.task.cancel()
        await asyncio.gather(*(flight.task for flight in flights), return_exceptions=True)

    async def _fetch_journal(self, paper: Paper, key: str, ctx: OperationContext) -> None:
        assert paper.source_url is not None
        try:
            page = await self.backend.journal(paper.source_url, expected_source=paper.source, op=ctx)
        except SourceIdentityUnconfirmed as exc:
            self.store.save_journal(key, None, MISMATCH, self.clock.now(), parser_version=PARSER_VERSION)
            record_item_error(ctx, exc, paper, "journal")
            return
        except CnkiError as exc:
            if is_fatal(exc):
                raise
            # remembered (1 day) so the other papers of this source do not refetch it
            self.store.save_journal(key, None, FAILED, self.clock.now(), parser_version=PARSER_VERSION)
            record_item_error(ctx, exc, paper, "journal")
            return
        self.store.save_journal(key, page, page.state.value, self.clock.now(), parser_version=PARSER_VERSION)

    # --- a batch ------------------------------------------------------------------------

    async def read_abstracts(
        self, refs: Sequence[str], ctx: OperationContext, *, stage: str, label: str
    ) -> None:
        """Abstract and keywords of `refs` not read yet (Reading.EXPORT, DESIGN.md "Reading
        abstracts by batch export"): CNKI's batch export for the rows with an export id, 20 per
        request; a detail page for the others and for those the export did not answer. No journal."""
        papers = self.store.papers_by_refs(refs)
        exports: dict[str, str] = {}
        details: list[str] = []
        for ref in dict.fromkeys(refs):
            paper = papers.get(ref)
            if paper is None or self.abstract_read(paper):
                continue
            if paper.export_id and paper.export_id not in exports:
                exports[paper.export_id] = paper.record_ref
            else:
                details.append(paper.record_ref)
        if exports:
            ctx.set_stage(stage, f"{label}：批量导出 {len(exports)} 篇的摘要与关键词")
            details += await fill_by_export(self.store, self.backend, self.clock, exports, ctx)
        if details:
            await self.run(details, ctx, stage=stage, quality=False, label=label)

    async def run(
        self,
        refs: Sequence[str],
        ctx: OperationContext,
        *,
        stage: str,
        quality: bool = True,
        refresh: bool = False,
        label: str = "读取详情",
        detail: bool = True,
    ) -> None:
        """Enrich `refs` on the worker pool; progress `{done, total}` in papers under `stage`,
        with the message `<label> done/total`. Refs that would send nothing (a fresh detail and a
        cached journal, or no such paper) are left out first, so they report no progress: each
        report is a save of the operation."""
        papers = self.store.papers_by_refs(refs)
        refs = [
            ref
            for ref in refs
            if (paper := papers.get(ref)) is not None
            and self._has_work(paper, quality=quality, refresh=refresh, detail=detail)
        ]
        total = len(refs)
        if total == 0:
            return

        def report(done: int) -> None:
            ctx.set_stage(stage, f"{label} {done}/{total}")
            ctx.progress(done, total, "papers")

        report(0)
        queue = list(refs)
        state = {"next": 0, "done": 0}
        stop: list[BaseException] = []

        async def worker() -> None:
            while not stop and state["next"] < total:
                ref = queue[state["next"]]
                state["next"] += 1
                try:
                    await self.enrich_one(ref, ctx, quality=quality, refresh=refresh, detail=detail)
                except BaseException as exc:
                    if not stop:
                        stop.append(exc)
                    if not isinstance(exc, BudgetExhausted):
                        for t in tasks:
                            if t is not asyncio.current_task():
                                t.cancel()
                    return
                state["done"] += 1
                report(state["done"])

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(total, self.workers))]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        if stop:
            raise stop[0]
        for outcome in results:
            if isinstance(outcome, BaseException):
                raise outcome

