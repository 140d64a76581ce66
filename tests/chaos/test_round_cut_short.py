"""A retrieval round cut short (the watchdog ends the operation while one channel's page never
answers) loses no observation: the pages that did answer are in the store and the checkpoint, and
`continue` does not ask CNKI for them again (docs/reliability.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext
from cnki_mcp.operations import BudgetSpec, OperationKind, OperationStatus
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import REFERENCE_POLICY
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store
from tests.pipeline_fakes import SimSite, duplicates, title_of

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])


class StallingSite(SimSite):
    """Channel q2's first page never answers while `stall` is set (a browser await that hangs)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.stall = True
        self._never = asyncio.Event()

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
        name, _ = self.channel(request)
        if name == "q2" and request.page == 1 and self.stall:
            if op is not None:
                op.charge()
            self.log.append(("grid", "q2-unanswered", 1))
            await self._never.wait()
        return await super().grid(request, op)


async def test_a_round_cut_short_keeps_its_answered_pages_and_continue_does_not_refetch_them(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    store = Store.open(tmp_path / "data", clock)
    site = StallingSite(clock)
    # the reference request policy: every channel pages to its limit (the pages this test counts)
    pipe = ResearchPipeline(
        site, store, clock, workers=8, now_year=lambda: 2026, page_size=20, policy=REFERENCE_POLICY
    )
    jobs = JobManager(clock, MemorySink())
    inp = SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live"))

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    try:
        job = jobs.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=600, timeout_seconds=60))
        [first] = await clock.run_until_complete(job.finish())
        assert first.status is OperationStatus.PARTIAL
        assert first.errors[0].code == "BUDGET_EXHAUSTED"
        # q1 and q3 answered: their rows are stored. No round waits for q2, so they paged on to
        # their page limit (5 pages of 20: q3 lists papers 60-159) while q2 never answered.
        assert store.find_by_title_key(title_of(0)) and store.find_by_title_key(title_of(79))
        assert store.find_by_title_key(title_of(159))
        assert not store.find_by_title_key(title_of(160))  # q3's sixth page: beyond max_pages
        answered = [k for k in site.log if k[0] == "grid"]
        assert ("grid", "q1", 1) in answered and ("grid", "q3", 1) in answered
        assert ("grid", "q3", 5) in answered and ("grid", "q3", 6) not in answered
        site.stall = False
        again = jobs.continue_(job.operation_id, runner, additional_seconds=900)
        [done] = await clock.run_until_complete(again.finish())
        assert done.status is OperationStatus.COMPLETED, done.errors
        assert duplicates(site.log) == []  # q1 and q3 page 1 were not asked for again
        assert ("grid", "q2", 1) in site.log  # the page never answered is asked for
    finally:
        await jobs.shutdown()
        store.close()
