"""The search phases (site-rules.md §3.4): retrieval (each channel pages on its own under the one
limiter, DESIGN.md "Request policies"), detail pool, enrichment, feedback, feedback enrichment,
finish. Shared by the research search and the structured search; both start from a `SearchState`
whose checkpoint grows by one appended entry per page landed, so `continue` repeats no request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cnki_mcp.clock import Clock
from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import Paper
from cnki_mcp.jobs import OperationContext
from cnki_mcp.models import GridHead, GridPage
from cnki_mcp.pipeline.enrich import (
    Enricher,
    is_fatal,
    record_item_error,
)
from cnki_mcp.pipeline.enrichment_steps import EnrichmentSteps
from cnki_mcp.pipeline.finish import Finish
from cnki_mcp.pipeline.models import SearchSummary
from cnki_mcp.pipeline.overlap import Overlap
from cnki_mcp.pipeline.paper_memo import PaperMemo
from cnki_mcp.pipeline.policy import (
    DEFAULT_POLICY,
    FeedbackRule,
    LocalChannel,
    SearchPolicy,
    SubsetChannels,
)
from cnki_mcp.pipeline.searchlog import PageLog
from cnki_mcp.pipeline.soft_block import SOFT_BLOCK_PAUSE, SoftBlocks
from cnki_mcp.pipeline.state import (
    FEEDBACK,
    RETRIEVAL,
    Channel,
    SearchState,
    failed_event,
    local_event,
    page_event,
)
from cnki_mcp.pipeline.units import Unit
from cnki_mcp.pipeline.units import coverage as _coverage
from cnki_mcp.pipeline.units import units as _units
from cnki_mcp.query.compiler import compile_expression, feedback_expression
from cnki_mcp.rank import (
    Ranker,
    feedback_keywords,
    work_keywords,
)
from cnki_mcp.site.backend import SEND_YIELDS, GridFollow, GridRequest, PacingSource, SiteBackend, SortOrder
from cnki_mcp.store import Store

log = logging.getLogger(__name__)

FEEDBACK_WEIGHT = 0.8
FEEDBACK_REASON = "保留所有必要概念，补充相关论文共同关键词："

class SearchEngine(Overlap, EnrichmentSteps, SoftBlocks, Finish):
    def __init__(
        self,
        backend: SiteBackend,
        store: Store,
        clock: Clock,
        enricher: Enricher,
        ranker: Ranker,
        now_year: Callable[[], int],
        *,
        page_size: int,
        public_origins: tuple[str, ...],
        soft_block_pause: float = SOFT_BLOCK_PAUSE,
        policy: SearchPolicy = DEFAULT_POLICY,
        pacing: PacingSource = lambda: None,
    ) -> None:
        self.soft_block_pause = soft_block_pause
        self.policy = policy
        self.pacing = pacing  # the pacing met, for OverlapDepth.PACED (pipeline/overlap.py)
        self.backend = backend
        self.store = store
        self.clock = clock
        self.enricher = enricher
        self.ranker = ranker
        self.now_year = now_year
        self.page_size = page_size
        self.public_origins = public_origins
        self.page_log = PageLog(store, clock, page_size)  # the search log (DESIGN.md "Search log")
        self.papers = PaperMemo(store)  # each enrichment step ranks every candidate again
        # search id -> its journal pages read beside the last pages (JournalPrefetch.FIRST_LEVEL)
        self.prefetches: dict[str, asyncio.Future[None]] = {}
        # search id -> the first channel of it an error failed in this run, and that error
        self.channel_failures: dict[str, tuple[str, CnkiError]] = {}

    # --- the run ------------------------------------------------------------------------

    async def run(self, st: SearchState, ctx: OperationContext) -> SearchSummary:
        st.ensure_coverage()
        failure: CnkiError | None = None
        try:
            await self._phases_landing_prefetches(st, ctx)
        except CnkiError as exc:
            if not is_fatal(exc):
                raise
            failure = exc
        except asyncio.CancelledError:
            # The operation's watchdog ended its active time (jobs.py): finish with what we have.
            failure = ctx.deadline_error
            if failure is None:
                self._keep_on_cancel(st, ctx)
                raise
        finally:
            first_failed = self.channel_failures.pop(st.search_id, None)
        ctx.checkpoint(st.to_json())
        summary = self.finish(st, ctx, failure)
        unread = not any(entry.pages for entry in st.coverage)
        if failure is None and unread and first_failed is not None:
            # Every channel failed before its first page (DESIGN.md "A search that read nothing"):
            # the first channel's error is the search's, told as one (`failed`, `skipped`...), no
            # longer a `partial` result of 0 papers that read as "nothing on this topic".
            channel, failure = first_failed
            ctx.retract_item_errors(lambda e: e.details.get("channel") == channel)
            failure.details.update(stage="retrieval", channel=channel)
        if failure is not None:
            if not unread:
                ctx.set_result(summary)  # the candidates found before it (status partial)
            raise failure
        return summary

    def _keep_on_cancel(self, st: SearchState, ctx: OperationContext) -> None:
        """A search cancelled by its client (or stopped with the server) keeps what it read: its
        checkpoint, and the ranking of the candidates found so far as its result (status
        `partial`) and as the saved search `search_results` pages (DESIGN.md "A cancelled search
        keeps what it read"). Nothing here awaits, so the cancellation goes on at once after it."""
        try:
            ctx.checkpoint(st.to_json())
            ctx.set_result(self.finish(st, ctx, None, stopped=True))
        except Exception:  # the cancel must still end the operation `cancelled`
            log.exception("search %s: keeping the results read before the cancel failed", st.search_id)

    async def _phases_landing_prefetches(self, st: SearchState, ctx: OperationContext) -> None:
        """`_phases`; the journal pages prefetched beside the last pages (JournalPrefetch, pipeline/
        overlap.py) land before the search ends, and raise nothing. A stopped (cancelled) search
        cancels the prefetches it has not sent; the phases' failure is raised once they landed."""
        try:
            await self._phases(st, ctx)
        except BaseException as exc:
            prefetch = self.prefetches.pop(st.search_id, None)
            if prefetch is not None:
                if isinstance(exc, asyncio.CancelledError):
                    prefetch.cancel()
                await asyncio.gather(prefetch, return_exceptions=True)
            raise
        await self._land_prefetches(st)

    async def _phases(self, st: SearchState, ctx: OperationContext) -> None:
        read = "摘要" if self._reading(st)[1] else "详情"  # what the enrichment reads (progress text)
        self._resume_landed(st, ctx)
        if st.prefetched_journals and not st.finished:  # a resumed search reads what it had decided
            self._prefetch(st, ctx, st.prefetched_journals)
        if not st.retrieved:
            await self._retrieve(st, ctx, label=f"读取{read}与期刊（检索同时进行）")
            st.retrieved = True
            # under Enrichment.BOUNDARY `_pool` decides nothing: keep what the steps beside the last
            # pages decided (EnrichmentStart.LAST_PAGES, pipeline/overlap.py)
            st.pool = self._pool(st, st.refs) or st.pool
            ctx.checkpoint(st.to_json())
        if not st.enriched:
            if self._feedback_when_certain(st):  # FeedbackWhen.CERTAIN (pipeline/overlap.py)
                await self._enrich_with_certain_feedback(st, ctx, label=f"读取{read}与期刊")
            else:
                await self._enrich(st, ctx, st.pool, stage="enrichment", label=f"读取{read}与期刊")
            st.enriched = True
            ctx.checkpoint(st.to_json())
        if not st.feedback_done:
            if self._wants_feedback(st):
                self._decide_feedback(st, ctx)  # unless decided beside retrieval (pipeline/overlap.py)
                await self._run_feedback(st, ctx, stage="feedback")
            st.feedback_done = True
            st.feedback_pool = self._pool(st, st.feedback_refs)
            ctx.checkpoint(st.to_json())
        if not st.finished:
            if not st.feedback_beside:  # else the enrichment phase settled over their candidates
                label = f"读取补充检索结果的{read}与期刊"
                await self._enrich(st, ctx, st.feedback_pool, stage="feedback_enrichment", label=label)
            st.finished = True

    @staticmethod
    def _wants_feedback(st: SearchState) -> bool:
        params = st.input
        return params["mode"] != "precise" and params["metadata"] != "basic" and not st.structured

    def _decide_feedback(self, st: SearchState, ctx: OperationContext, through: int | None = None) -> None:
        """The feedback channels, chosen once (checkpointed): from the ranking of every candidate,
        or of the snapshot through page level `through` (FeedbackStart.WITH_SNAPSHOT)."""
        if st.feedback is not None:
            return
        st.feedback = self._feedback_channels(st, through)
        st.coverage.extend(_coverage(c) for c in st.feedback)
        self._localize(st, st.feedback, always=self.policy.feedback == FeedbackRule.LOCAL)
        ctx.checkpoint(st.to_json())

    async def _run_feedback(
        self, st: SearchState, ctx: OperationContext, *, stage: str, note: str = ""
    ) -> None:
        """The feedback channels' first pages (those landed before ask nothing)."""
        feedback = st.feedback or []
        words = "、".join(c.reason.removeprefix(FEEDBACK_REASON) for c in feedback)
        if feedback and all(st.coverage_of(c.id).stopped == "local" for c in feedback):
            note = "（在已有候选上本地计算，不请求知网）"  # `_localize`
        ctx.set_stage(stage, f"补充检索 {len(feedback)} 个关键词" + (f"：{words}" if words else "") + note)
        await self._run_units(st, ctx, _units(feedback), feedback=True)

    # --- request policies (pipeline/policy.py) ---------------------------------------------

    def _subject(self, st: SearchState) -> Channel | None:
        """The research search's subject channel (q1), whose result set holds every other
        channel's (SubsetChannels.LOCAL); None for a structured search or another policy."""
        if self.policy.subset_channels != SubsetChannels.LOCAL or st.structured:
            return None
        channels = st.channels
        first = next((c for c in channels if c.field == "subject"), None)
        return first if first is not None and len(channels) > 1 else None

    def _gate(self, st: SearchState, unit: Unit, subject: Channel | None, empty_first: bool) -> bool | None:
        """SubsetChannels.LOCAL: another research channel waits for the subject channel's first
        answer. True: ask CNKI; False: answered locally (q1 listed its whole, non-empty result
        set); None: not known yet. An empty first subject page is not trusted alone: the others
        are asked, and their rows make a throttled zero suspect (DESIGN.md "Soft blocks")."""
        if subject is None or unit.channel.id == subject.id or self._pages(st, unit) > 0:
            return True
        entry = st.coverage_of(subject.id)
        if entry.failed or empty_first or subject.queries > 1:
            return True
        if entry.pages == 0:
            return None
        return not (entry.exhausted and entry.rows > 0 and unit.channel.field in ("title", "keywords"))

    def _localize(self, st: SearchState, channels: Sequence[Channel], *, always: bool = False) -> None:
        """Mark `channels` not yet asked as answered locally once the subject channel listed its
        whole (non-empty) result set. An empty subject result is not trusted alone: the other
        channels are asked, so a throttled zero stays detectable (soft-block rule)."""
        subject = self._subject(st)
        if subject is None:
            return
        entry = st.coverage_of(subject.id)
        if not always and (not entry.exhausted or entry.failed or entry.rows == 0):
            return
        known = {x["id"] for x in st.local}
        for channel in channels:
            other = st.coverage_of(channel.id)
            if (
                channel.id == subject.id
                or channel.id in known
                or other.pages
                or other.failed
                or other.stopped
            ):
                continue
            if channel.field not in ("title", "keywords", "subject"):
                continue
            other.stopped = "local"
            phrase = channel.reason.removeprefix(FEEDBACK_REASON) if channel.field == "subject" else ""
            st.local.append(
                {"id": channel.id, "field": channel.field, "weight": channel.weight, "phrase": phrase}
            )

    def _local_channels(self, st: SearchState, *, retrieval_only: bool = False) -> list[LocalChannel]:
        skip = st.feedback_ids if retrieval_only else set()
        rows = [x for x in st.local if x["id"] not in skip]
        return [LocalChannel(x["id"], x["field"], float(x["weight"]), x.get("phrase", "")) for x in rows]

    @staticmethod
    def _pages(st: SearchState, unit: Unit) -> int:
        if unit.channel.queries == 1:
            return st.coverage_of(unit.channel.id).pages
        return st.lanes_of(unit.channel)[unit.lane].pages

    @staticmethod
    def _exhausted(st: SearchState, unit: Unit) -> bool:
        if unit.channel.queries == 1:
            return st.coverage_of(unit.channel.id).exhausted
        return st.lanes_of(unit.channel)[unit.lane].exhausted

    def _request(self, st: SearchState, unit: Unit, page: int, cursor: str | None = None) -> GridRequest:
        params = st.input
        channel = unit.channel
        if cursor is not None:
            pass  # the cursor of a page answered but not stored yet (`_look_ahead`)
        elif channel.queries == 1:
            cursor = st.cursors.get(channel.id)
        else:
            cursor = st.lanes_of(channel)[unit.lane].cursor or None
        return GridRequest(
            subject=channel.subject_at(unit.lane),
            anchor=channel.anchor,
            sort=SortOrder(params["sort"]),
            year_from=params.get("year_from") or None,
            year_to=params.get("year_to") or None,
            page=page,
            page_size=self.page_size,
            cursor=cursor if page > 1 else None,
        )

    def _open(self, st: SearchState, unit: Unit, limit: int) -> bool:
        """The unit may still have a page to fetch (not exhausted, not failed, under its page limit)."""
        entry = st.coverage_of(unit.channel.id)
        return (
            not self._exhausted(st, unit)
            and not entry.failed
            and not entry.stopped
            and self._pages(st, unit) < self._unit_limit(st, unit, limit)
        )

    def _unit_limit(self, st: SearchState, unit: Unit, limit: int) -> int:
        """`limit`, or the policy's page cap for the channels searching subsets of q1."""
        cap = self.policy.subset_pages
        if cap and unit.channel.field in ("title", "keywords") and self._subject(st) is not None:
            return min(limit, cap)
        return limit

    def _needed(
        self, st: SearchState, units: Sequence[Unit], level: int, limit: int, *, feedback: bool
    ) -> bool | None:
        """Whether the pages after `level` are fetched (DESIGN.md "Retrieval without rounds"): the
        decision a search waiting for every channel's page `level` would take, known as soon as it
        is certain. Stop when the candidates first seen on pages <= `level` reach the target; go
        when even every page <= `level` still missing, full, could not reach it; None: not yet known."""
        if level == 0:
            return True
        if feedback:  # a feedback channel reads its first page only
            return False
        target = st.input["candidate_target"]
        seen = st.candidates_through(level)
        if seen >= target:
            return False
        missing = sum(
            min(level, self._unit_limit(st, u, limit)) - self._pages(st, u)
            for u in units
            if self._open(st, u, limit) and self._pages(st, u) < level
        )
        if seen + missing * self.page_size < target:
            return True
        return None

    async def _run_units(
        self,
        st: SearchState,
        ctx: OperationContext,
        units: Sequence[Unit],
        *,
        feedback: bool,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """Every unit pages on its own under the one request limiter: a slow channel never holds
        back a fast one. Pages are merged as they land, in canonical order (state.py), so the pages
        fetched and the candidates' order do not depend on the order pages arrive in."""
        if not units:
            return
        limit = 1 if feedback else st.input["max_pages"]
        stage = FEEDBACK if feedback else RETRIEVAL
        index = {(u.channel.id, u.lane): i for i, u in enumerate(units)}
        changed = asyncio.Event()
        stop: list[BaseException] = []

        def bump() -> None:
            nonlocal changed
            changed.set()
            changed = asyncio.Event()
            if on_change is not None:
                on_change()

        async def wait_change() -> None:
            await changed.wait()

        async def wait() -> bool:
            """Wait for the next change; False once the search stops."""
            if not stop:
                await changed.wait()
            return not stop

        subject = None if feedback else self._subject(st)
        first_answer = {"empty": False}  # the subject channel's first page came back empty

        async def local(unit: Unit) -> bool:
            """Wait for the policy gate; True when the unit is answered locally (recorded)."""
            go = self._gate(st, unit, subject, first_answer["empty"])
            while go is None and not stop:
                await wait_change()
                go = self._gate(st, unit, subject, first_answer["empty"])
            if go is not False or stop or st.coverage_of(unit.channel.id).stopped:
                return go is False
            event = local_event(unit.channel, "")
            st.apply(event)
            ctx.checkpoint_append(event)
            return True

        async def run(unit: Unit) -> None:
            # the unit's next page, asked before the page just answered was stored (`_look_ahead`)
            ahead: tuple[GridRequest, asyncio.Task[GridPage]] | None = None
            # ... or, by a backend that calls `follow`, before its rows were parsed (by page number)
            followed: dict[int, tuple[GridRequest, asyncio.Task[GridPage]]] = {}
            fetch: Awaitable[GridPage]

            def follow_for(asked: GridRequest) -> GridFollow:
                def follow(head: GridHead) -> bool:
                    if stop:
                        return False
                    nxt = self._look_ahead(st, ctx, units, unit, asked, head, limit, feedback=feedback, follow=follow_for)
                    if nxt is not None:
                        followed[asked.page + 1] = nxt
                    return nxt is not None

                return follow

            try:
                if await local(unit):
                    return
                while True:
                    if ahead is not None:
                        request, fetch = ahead  # a page in flight is landed even after a stop
                        ahead = None
                    else:
                        if stop or not self._open(st, unit, limit):
                            return
                        level = self._pages(st, unit)
                        go = self._needed(st, units, level, limit, feedback=feedback)
                        while go is None and not stop:
                            await wait_change()
                            go = self._needed(st, units, level, limit, feedback=feedback)
                        if not go or stop:
                            return
                        request = self._request(st, unit, level + 1)
                        fetch = self.backend.grid(request, op=ctx, follow=follow_for(request))
                    try:
                        answer = await fetch
                        if subject is not None and unit.channel.id == subject.id and not answer.rows:
                            first_answer["empty"] = first_answer["empty"] or request.page == 1
                            bump()
                        grid = await self._confirm_zero(
                            st, ctx, unit, request, answer, wait, feedback=feedback
                        )
                    except CnkiError as exc:
                        if is_fatal(exc):
                            raise
                        event = failed_event(unit.channel.id, exc.message)
                        st.apply(event)
                        ctx.checkpoint_append(event)
                        record_item_error(ctx, exc, None, "retrieval", channel=unit.channel.id)
                        self.channel_failures.setdefault(st.search_id, (unit.channel.id, exc))
                        return
                    if grid is None:  # the search stopped before an empty page could be judged
                        return
                    ahead = followed.pop(request.page + 1, None)  # asked on the head: already left
                    if ahead is None and not stop:
                        ahead = self._look_ahead(
                            st, ctx, units, unit, request, GridHead.of(grid), limit, feedback=feedback, follow=follow_for
                        )
                        for _ in range(SEND_YIELDS if ahead is not None else 0):
                            await asyncio.sleep(0)  # let it leave before this page is stored
                    self._land(st, ctx, unit, index[(unit.channel.id, unit.lane)], stage, request.page, grid)
                    self._report(st, ctx, units, limit, feedback=feedback)
                    bump()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                stop.append(exc)
            finally:
                for _, task in [*([ahead] if ahead is not None else []), *followed.values()]:
                    task.cancel()  # only when this task itself is cancelled or failed
                bump()

        if not feedback:
            self._report(st, ctx, units, limit, feedback=False, before=True)
        await asyncio.gather(*(run(u) for u in units))
        if stop:
            raise stop[0]
        if not feedback:
            self._report(st, ctx, units, limit, feedback=False)

    def _look_ahead(
        self,
        st: SearchState,
        ctx: OperationContext,
        units: Sequence[Unit],
        unit: Unit,
        request: GridRequest,
        head: GridHead,
        limit: int,
        *,
        feedback: bool,
        follow: Callable[[GridRequest], GridFollow],
    ) -> tuple[GridRequest, asyncio.Task[GridPage]] | None:
        """The unit's next page, asked at once when the page just answered (not stored yet; its
        head alone when the backend calls `follow`) leaves it certain: the page has rows and a
        cursor, is not the last, and the stop rule goes on even if this page, still counted as
        missing, came back full of new papers. The same page the loop would ask once this one is
        stored, one store write and progress tick earlier (DESIGN.md "Retrieval without rounds")."""
        if feedback or not head.has_rows or head.exhausted or not head.turnpage:
            return None
        if request.page >= self._unit_limit(st, unit, limit):
            return None
        if self._needed(st, units, request.page, limit, feedback=False) is not True:
            return None
        nxt = self._request(st, unit, request.page + 1, cursor=head.turnpage)
        return nxt, asyncio.ensure_future(self.backend.grid(nxt, op=ctx, follow=follow(nxt)))

    def _report(
        self,
        st: SearchState,
        ctx: OperationContext,
        units: Sequence[Unit],
        limit: int,
        *,
        feedback: bool,
        before: bool = False,
    ) -> None:
        if feedback:
            return
        live = [self._pages(st, u) for u in units if self._open(st, u, limit)]
        level = min(live) if live else max(self._pages(st, u) for u in units)
        if before:
            ctx.set_stage("retrieval", f"第 {level + 1} 轮检索中，已有候选 {len(st.refs)} 篇")
        else:
            ctx.set_stage("retrieval", f"第 {max(level, 1)} 轮检索，已有候选 {len(st.refs)} 篇")
        # pages come whole, so the candidates may pass the target: the total never falls below them
        ctx.progress(len(st.refs), max(st.input["candidate_target"], len(st.refs)), "candidates")

    def _land(
        self,
        st: SearchState,
        ctx: OperationContext,
        unit: Unit,
        index: int,
        stage: int,
        page: int,
        grid: GridPage,
    ) -> None:
        """One answered page, committed when observed: the rows to the store, the page's event to
        the state and appended to the checkpoint (O(new rows)), so a search cut short (the watchdog,
        a crash) loses no observation and `continue` does not ask for the page again."""
        kept, papers = self._kept_papers(st, grid)
        # the search log counts the answer as an attempt, then its merge (store/searchlog.py)
        self.page_log.write(st, unit.channel, unit.lane, page, grid, len(kept), merged=False)
        self.page_log.write(st, unit.channel, unit.lane, page, grid, len(kept), merged=True)
        refs = [(i, paper.record_ref) for (i, _), paper in zip(kept, papers, strict=True)]
        event = page_event(
            unit.channel,
            unit.lane if unit.channel.queries > 1 else 0,
            index,
            stage,
            page,
            refs,
            len(grid.rows),
            grid.total,
            grid.exhausted or not grid.rows,
            grid.turnpage,
        )
        st.apply(event)
        ctx.checkpoint_append(event)

    def _resume_landed(self, st: SearchState, ctx: OperationContext) -> None:
        """Pages a checkpoint written before retrieval ran without rounds kept unmerged (`landed`):
        merged now, so `continue` does not ask for them again."""
        if not st.landed:
            return
        feedback = st.retrieved
        units = _units(st.feedback or []) if feedback else _units(st.channels)
        for i, unit in enumerate(units):
            key = unit.channel.id if unit.channel.queries == 1 else f"{unit.channel.id}#{unit.lane}"
            landed = st.landed.get(key)
            if landed is not None and landed.get("page") == self._pages(st, unit) + 1:
                grid = GridPage.model_validate(landed["grid"])
                self._land(st, ctx, unit, i, FEEDBACK if feedback else RETRIEVAL, landed["page"], grid)
        st.landed.clear()
        ctx.checkpoint(st.to_json())

    def _kept_papers(self, st: SearchState, grid: GridPage) -> tuple[list[tuple[int, Any]], list[Paper]]:
        y0, y1 = st.input.get("year_from") or 0, st.input.get("year_to") or 0
        kept: list[tuple[int, Any]] = []
        for i, row in enumerate(grid.rows):
            if (y0 or y1) and (not row.year or (y0 and row.year < y0) or (y1 and row.year > y1)):
                continue
            kept.append((i, row))
        papers = self.store.upsert_from_grid(
            [row for _, row in kept], self.clock.now(), public_origins=self.public_origins
        )
        return kept, papers

    def _feedback_channels(self, st: SearchState, through: int | None = None) -> list[Channel]:
        """The feedback channels: the concepts AND each shared keyword of the ranking's top (of the
        snapshot through page level `through` when given, pipeline/overlap.py)."""
        ranked, papers, _, copies = self._ranked_states(st, through)  # each work once
        words = feedback_keywords(ranked, work_keywords({r: p.keywords for r, p in papers.items()}, copies), st.groups)
        out: list[Channel] = []
        for i, word in enumerate(words, start=1):
            compiled = compile_expression(feedback_expression(st.groups, word))
            out.append(
                Channel.compiled(f"feedback{i}", "subject", FEEDBACK_WEIGHT, FEEDBACK_REASON + word, compiled)
            )
        return out
