"""Enrichment beside retrieval (DESIGN.md "Enrichment beside retrieval"): under
`EnrichmentStart.LAST_PAGES` the research search's enrichment steps start while its last pages are
still being fetched, deciding on a snapshot of the pages landed so far, so the limiter, idle
between one query's dependent pages, reads what the top needs; under `FeedbackStart.WITH_SNAPSHOT`
the feedback pages follow, from the snapshot's top. A retrieval too short for that reads the
journal pages of its first level's readable top beside its last pages (`JournalPrefetch.FIRST_LEVEL`,
`_decide_prefetch`). Under `FeedbackWhen.CERTAIN` a search whose
feedback waits for the enrichment asks its pages as soon as the settled words are certain
(`_enrich_with_certain_feedback`). A mixin of `SearchEngine`.

The snapshot is the candidates and hits of every page <= level L, taken once every paging unit has
L pages (or closed), at the first level L after which the stop rule is certain to fetch at most
`overlap_pages` more levels of pages (`remaining_levels`, which falls by at most one a level, so
a retrieval that starts longer meets it with exactly `overlap_pages` to come), provided it is
certain of at least half as many: a shorter retrieval is not overlapped. Under
`OverlapDepth.PACED` the depth is the levels the snapshot's reads need beside them at the pacing
met (`paced_depth`), the reads sized under `SnapshotReads.JOURNALS` from the unread journals of
the snapshot's top (`snapshot_reads`), decided once and checkpointed with the level it was
decided at (the depth also depends on the journal cache then, so it is recorded, not computed
again). Everything else the snapshot depends on is fixed once those pages have landed, whatever
later pages have landed meanwhile, so an interrupted search continued takes the same decisions
and `continue` repeats no request."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import Paper, source_key
from cnki_mcp.jobs import OperationContext
from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.pipeline.policy import (
    EnrichmentStart,
    FeedbackRule,
    FeedbackStart,
    FeedbackWhen,
    JournalPrefetch,
    LocalChannel,
    OverlapDepth,
    RefState,
    SearchPolicy,
    SnapshotReads,
    feedback_words_certain,
    unread_journals,
)
from cnki_mcp.pipeline.state import Channel, SearchState, depth_event, enrich_event
from cnki_mcp.pipeline.units import Unit
from cnki_mcp.pipeline.units import units as _units
from cnki_mcp.rank import Ranked, work_keywords
from cnki_mcp.site.backend import Pacing, PacingSource

log = logging.getLogger(__name__)

def remaining_levels(target: int, seen: int, open_units: int, page_size: int, cap: int) -> int:
    """Levels of pages the stop rule is certain still to fetch: each page adds at most `page_size`
    candidates to the `seen`, and pages go on while fewer than `target` are seen; at most `cap`
    (the open units' page limit less the level). 0 when no unit is open."""
    if open_units <= 0 or seen >= target or cap <= 0:
        return 0
    return min(cap, math.ceil((target - seen) / (page_size * open_units)))


# Requests the snapshot's steps and its feedback send beside the last pages: 27-30 at the growth
# benchmark's 1,000 and 3,000 candidates (exports, journal pages, two feedback pages; timelines)
SNAPSHOT_READS = 32
# SnapshotReads.JOURNALS: reads per unread journal source among the snapshot's top 2 x watch_depth.
# The search reads each such journal, about as many more for candidates that rise into the top
# later, and exports beside them (`diverse` at 3,000: 27 sources, 55 journal pages, 8 exports);
# 3 rather than 2 because the steps' reads wait on one another and leave some slots unused
# (docs/benchmarks.md "The snapshot's depth from its journals")
READS_PER_SOURCE = 3
# the deepest snapshot, in multiples of `overlap_pages` (64 levels: 64 reads at 500 ms)
DEPTH_CAP = 4


def reads_per_level(pacing: Pacing) -> float:
    """Requests besides the page chain the limiter can start while one page of the chain is out:
    latency / interval - 1, and at least one: with fewer, one read between two pages stretches
    the chain to two spacings a page (what the growth benchmark's timelines show at 500 ms)."""
    if pacing.interval <= 0:
        return math.inf
    return max(1.0, pacing.latency / pacing.interval - 1.0)


def snapshot_reads(open_sources: int) -> int:
    """SnapshotReads.JOURNALS: the reads a snapshot whose top holds `open_sources` unread journal
    sources is expected to send beside the last pages, at least `SNAPSHOT_READS`."""
    return max(SNAPSHOT_READS, READS_PER_SOURCE * open_sources)


def paced_depth(base: int, pacing: Pacing | None, reads: int = SNAPSHOT_READS) -> int:
    """OverlapDepth.PACED: the levels of pages `reads` need beside them at `pacing`, between
    `base` and `DEPTH_CAP` x `base`; `base` when the pacing is not known. Never deeper than the
    reads need: a snapshot taken earlier decides on fewer candidates and leaves the closing
    snapshot more to read after the last pages (docs/benchmarks.md "Growth at stop 25")."""
    if pacing is None:
        return base
    levels = math.ceil(round(reads / reads_per_level(pacing), 6))  # 0.6 / 0.2 is 2.999...
    return min(DEPTH_CAP * base, max(base, levels))


class Overlap:
    """Mixed into `SearchEngine`, whose paging rules and enrichment steps it uses."""

    policy: SearchPolicy
    page_size: int
    pacing: PacingSource

    enricher: Enricher
    prefetches: dict[str, asyncio.Future[None]]

    if TYPE_CHECKING:  # provided by SearchEngine and EnrichmentSteps; declared for the type checker
        # the engine's paging loop and the enrichment steps (their signatures: engine.py and
        # enrichment_steps.py)
        _run_units: Callable[..., Awaitable[None]]
        _enrich: Callable[..., Awaitable[None]]

        def _reading(self, st: SearchState) -> tuple[bool, bool]: ...

        def _ranked_states(
            self, st: SearchState, through: int | None = None, *, retrieval_only: bool = False
        ) -> tuple[list[Ranked], dict[str, Paper], dict[str, RefState], dict[str, str]]: ...

        def _local_channels(self, st: SearchState, *, retrieval_only: bool = False) -> list[LocalChannel]: ...

        @staticmethod
        def _wants_feedback(st: SearchState) -> bool: ...

        def _subject(self, st: SearchState) -> Channel | None: ...

        def _decide_feedback(
            self, st: SearchState, ctx: OperationContext, through: int | None = None
        ) -> None: ...

        async def _run_feedback(
            self, st: SearchState, ctx: OperationContext, *, stage: str, note: str = ""
        ) -> None: ...

        @staticmethod
        def _pages(st: SearchState, unit: Unit) -> int: ...

        @staticmethod
        def _exhausted(st: SearchState, unit: Unit) -> bool: ...

        def _open(self, st: SearchState, unit: Unit, limit: int) -> bool: ...

        def _unit_limit(self, st: SearchState, unit: Unit, limit: int) -> int: ...

        def _needed(
            self, st: SearchState, units: Sequence[Unit], level: int, limit: int, *, feedback: bool
        ) -> bool | None: ...

    async def _retrieve(self, st: SearchState, ctx: OperationContext, *, label: str) -> None:
        """Every channel's pages (a split channel pages each of its queries like a channel), with the
        enrichment steps beside the last ones under `EnrichmentStart.LAST_PAGES` (module docstring).
        Both land what they sent before a failure is raised; the retrieval's failure first."""
        units = _units(st.channels)
        if not (self._reading(st)[1] and self.policy.enrichment_start == EnrichmentStart.LAST_PAGES):
            await self._run_units(st, ctx, units, feedback=False)
            return
        changed = asyncio.Event()
        over: list[bool] = []  # retrieval ended (done or failed)
        failed: list[bool] = []

        async def retrieval() -> None:
            try:
                await self._run_units(st, ctx, units, feedback=False, on_change=changed.set)
            except BaseException:
                failed.append(True)
                raise
            finally:
                over.append(True)
                changed.set()

        async def reach(level: int) -> bool:
            """Wait until the snapshot at `level` is complete; False when retrieval ended first."""
            while not over and not self._through(st, units, level):
                changed.clear()
                await changed.wait()
            return not failed and self._through(st, units, level)

        async def settle(level: int, closing: bool = False) -> None:
            await self._enrich(
                st,
                ctx,
                st.pool,
                stage="retrieval",
                label=label,
                through=level,
                stop=lambda: bool(failed),
                closing_steps=self.policy.closing_steps if closing else 0,
            )

        async def steps() -> None:
            level = 1
            while True:
                if not await reach(level):
                    return  # retrieval ended before this level: the steps after it take over
                left = self._levels_left(st, units, level)
                if left < (self.policy.overlap_pages + 1) // 2:
                    if left:  # a short retrieval: the steps wait for its last page, the journals not
                        self._decide_prefetch(st, ctx, level)
                    return
                if left <= self._depth(st, ctx, left, level):
                    break
                level += 1
            await settle(level)
            if not failed and self._feedback_beside(st):
                st.feedback_beside = True  # checkpointed with the channels
                self._decide_feedback(st, ctx, through=level)
                await self._run_feedback(st, ctx, stage="retrieval", note="（检索同时进行）")
            # later snapshots: `middle_pages` levels before the end after a deeper first one (its
            # reads end long before the last pages), then `closing_pages`; each reads what the
            # pages landed since brought, while the last come. The closing one reads abstracts in
            # at most `closing_steps` steps (checkpointed), journal pages after them: a next
            # export would follow the last page's answer anyway, so the step after retrieval
            # exports those abstracts with the last pages' candidates, in one request
            marks = [
                (mark, closing)
                for mark, closing in ((self.policy.middle_pages, False), (self.policy.closing_pages, True))
                if 0 < mark < left
            ]
            for mark, closing in marks:
                while True:
                    level += 1
                    if failed or not await reach(level):
                        return
                    left = self._levels_left(st, units, level)
                    if left == 0:
                        return  # the last level: the steps after retrieval take over
                    if left <= mark:
                        await settle(level, closing=closing)
                        break

        outcomes = await asyncio.gather(retrieval(), steps(), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def _decide_prefetch(self, st: SearchState, ctx: OperationContext, level: int) -> None:
        """JournalPrefetch.FIRST_LEVEL: the journals of the snapshot's readable top at `level`
        (`unread_journals`), chosen once and appended to the checkpoint, then read beside the
        last pages (`_prefetch`). The steps do not see them until they propose them
        (`EnrichmentSteps.unproposed_prefetch`), so the steps' decisions do not depend on them."""
        if self.policy.journal_prefetch != JournalPrefetch.FIRST_LEVEL or st.prefetched_journals:
            return
        refs = self._unread_journals(st, level, self.policy.readable_top)
        if not refs:
            return
        event = enrich_event("prefetched_journals", refs)
        st.apply(event)
        ctx.checkpoint_append(event)
        self._prefetch(st, ctx, refs)

    def _prefetch(self, st: SearchState, ctx: OperationContext, refs: list[str]) -> None:
        """Start reading the journal pages of `refs` (those not cached; a page a step asks for
        meanwhile is the same request, `Enricher` reads a source once in flight)."""
        if st.search_id in self.prefetches:
            return
        stage = "enrichment" if st.retrieved else "retrieval"

        async def read() -> None:
            try:
                await self.enricher.run(refs, ctx, stage=stage, quality=True, detail=False, label="预读期刊")
            except CnkiError as exc:  # a budget, a block: the search's own next request meets it too
                log.info("journal prefetch stopped: %s", exc.code)

        self.prefetches[st.search_id] = asyncio.ensure_future(read())

    async def _land_prefetches(self, st: SearchState) -> None:
        """The prefetches land (they raise nothing: a fatal error stops them, and the search's own
        requests meet it; a journal whose read failed is read again only if a step proposes it)."""
        prefetch = self.prefetches.pop(st.search_id, None)
        if prefetch is not None:
            await prefetch

    def _depth(self, st: SearchState, ctx: OperationContext, left: int, level: int) -> int:
        """The snapshot's depth in levels. OverlapDepth.PACED: decided from the pacing met (and,
        under SnapshotReads.JOURNALS, the unread journals of the snapshot at `level`) once at most
        `DEPTH_CAP` x `overlap_pages` levels are certain to come and a page has been timed (or at
        most twice `overlap_pages` come, which a depth from the fixed reads never exceeds), and
        checkpointed with that level before any step depends on it. A level passed over before it
        may have had fewer levels to come than the depth: a resumed search, whatever pacing it
        meets, passes over the levels before the recorded one, so it takes the same snapshot; no
        step has been decided before then."""
        base = self.policy.overlap_pages
        if self.policy.overlap_depth != OverlapDepth.PACED:
            return base
        if st.overlap_depth:
            # a level before the decision was passed over then: so it is now
            return st.overlap_depth if level >= st.overlap_level else base
        if left > DEPTH_CAP * base:
            return base  # not decided yet: deeper than any depth
        pacing = self.pacing()
        if pacing is None and left > 2 * base:
            return base  # not decided yet: no page timed, and no depth from 32 reads reaches this level
        # steps decided before any depth was recorded: a checkpoint of the fixed depth (written
        # before this rule, or under OverlapDepth.FIXED) keeps its snapshot
        reads = SNAPSHOT_READS
        if st.pool or st.feedback_beside:
            levels = base
        else:
            if pacing is not None and self.policy.snapshot_reads == SnapshotReads.JOURNALS:
                sources = len(self._unread_journals(st, level, 2 * self.policy.watch_depth))
                reads = snapshot_reads(sources)
            levels = paced_depth(base, pacing, reads)
        event = depth_event(levels, reads, level)
        st.apply(event)
        ctx.checkpoint_append(event)
        return st.overlap_depth

    def _unread_journals(self, st: SearchState, level: int, depth: int) -> list[str]:
        """One paper per unread journal source among the `depth` best of the snapshot at `level`
        (`unread_journals`): the prefetch's choice, and what a snapshot's depth is sized from."""
        ranked, papers, states, _ = self._ranked_states(st, level)
        sources = {ref: source_key(p.source) for ref, p in papers.items()}
        return unread_journals(ranked, states, sources, depth)

    def _feedback_beside(self, st: SearchState) -> bool:
        """FeedbackStart.WITH_SNAPSHOT applies: feedback is asked (not answered locally at the end):
        the subject channel, when the policy answers subsets of it locally, reports at least the
        target and two pages more, so the stop rule ends retrieval before it is exhausted."""
        policy = self.policy
        if policy.feedback_start != FeedbackStart.WITH_SNAPSHOT or policy.feedback != FeedbackRule.REQUEST:
            return False
        if not self._wants_feedback(st):
            return False
        subject = self._subject(st)
        if subject is None:
            return True
        total = st.coverage_of(subject.id).total
        return total is not None and total >= st.input["candidate_target"] + 2 * self.page_size

    def _feedback_when_certain(self, st: SearchState) -> bool:
        """FeedbackWhen.CERTAIN applies to this search's enrichment phase: the feedback was not
        asked beside retrieval and will be asked (boundary enrichment by batch export, a subject
        channel that listed rows without running out). Fixed once retrieval is done, so a resumed
        search takes the same path."""
        policy = self.policy
        if policy.feedback_when != FeedbackWhen.CERTAIN or policy.feedback != FeedbackRule.REQUEST:
            return False
        if st.feedback_beside or not self._wants_feedback(st):
            return False
        boundary, export = self._reading(st)
        subject = self._subject(st)
        if not (boundary and export) or subject is None:
            return False
        entry = st.coverage_of(subject.id)
        return not entry.exhausted and not entry.failed and entry.rows > 0

    async def _enrich_with_certain_feedback(self, st: SearchState, ctx: OperationContext, *, label: str) -> None:
        """FeedbackWhen.CERTAIN (DESIGN.md "Feedback pages once their words are certain"): before
        each decision, once `feedback_words_certain` holds, the feedback channels are chosen
        (checkpointed: the words the settled ranking gives) and their pages asked beside the
        remaining steps. Every step decides on the retrieval candidates alone, so the decisions,
        the words and the pages are those of a search that waits for the enrichment; a resumed
        search that chose them asks the pages still missing beside its first step. The pages land
        before this returns; the steps' failure is raised first."""
        pages: list[asyncio.Task[None]] = []

        def before_step() -> None:
            if not pages and st.feedback is None:
                ranked, papers, states, copies = self._ranked_states(st, retrieval_only=True)
                keywords = work_keywords({ref: p.keywords for ref, p in papers.items()}, copies)
                if feedback_words_certain(ranked, states, keywords, self._local_channels(st, retrieval_only=True)):
                    self._decide_feedback(st, ctx)
            if not pages and st.feedback is not None:
                note = "（与摘要读取同时进行）"
                pages.append(asyncio.ensure_future(self._run_feedback(st, ctx, stage="enrichment", note=note)))

        try:
            await self._enrich(
                st, ctx, st.pool, stage="enrichment", label=label, before_step=before_step, retrieval_only=True
            )
        finally:
            outcomes = await asyncio.gather(*pages, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def _through(self, st: SearchState, units: Sequence[Unit], level: int) -> bool:
        """Every unit has `level` pages or is closed: the snapshot at `level` is complete."""
        limit = st.input["max_pages"]
        return all(self._pages(st, u) >= level or not self._open(st, u, limit) for u in units)

    def _open_after(self, st: SearchState, unit: Unit, level: int) -> bool:
        """The unit fetches (or may fetch) a page after `level`, as known once `_through(level)`
        whatever later pages have landed: it has one already, or it is still at `level` and
        neither exhausted, stopped, failed nor at its page limit."""
        pages = self._pages(st, unit)
        if pages > level:
            return True
        limit = st.input["max_pages"]
        return pages == level and self._open(st, unit, limit)

    def _levels_left(self, st: SearchState, units: Sequence[Unit], level: int) -> int:
        """`remaining_levels` after the complete snapshot at `level`; 0 when the stop rule ends
        retrieval there."""
        limit = st.input["max_pages"]
        if not self._needed(st, units, level, limit, feedback=False):
            return 0
        open_units = [u for u in units if self._open_after(st, u, level)]
        cap = max((self._unit_limit(st, u, limit) for u in open_units), default=level) - level
        seen = st.candidates_through(level)
        return remaining_levels(st.input["candidate_target"], seen, len(open_units), self.page_size, cap)
