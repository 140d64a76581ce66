"""The soft-block rule of the search engine (DESIGN.md "Soft blocks") on a fake clock: a zero the
search itself contradicts (a later page, or a subject channel whose title/keywords siblings found
rows) is asked once more after a pause; still zero, the search stops with SITE_UNAVAILABLE and
keeps the channel open so `continue` asks for the same page. A plausible zero is taken as it is."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline_fakes import SimSite

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.models import GridPage
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import DEFAULT_POLICY, REFERENCE_POLICY, SearchPolicy
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])


class BlockingSite(SimSite):
    """Answers chosen (channel, page) requests with a confident zero, `times` times each."""

    def __init__(self, clock: FakeClock, blocked: dict[tuple[str, int], int]) -> None:
        super().__init__(clock)
        self.blocked = Counter(blocked)
        self.sleeps_before: list[float] = []

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        name, _ = self.channel(request)
        key = (name, request.page)
        if self.blocked[key] > 0:
            self.blocked[key] -= 1
            await self._call(op, ("grid", name, request.page))
            return GridPage(rows=[], total=0, page=request.page, page_count=1, zero_results=True)
        return await super().grid(request, op)


def pipeline(
    clock: FakeClock, store: Store, site: SimSite, policy: SearchPolicy = REFERENCE_POLICY
) -> ResearchPipeline:
    """The reference request policy (all channels asked together) unless told otherwise."""
    return ResearchPipeline(
        site, store, clock, workers=8, now_year=lambda: 2026, page_size=20, policy=policy
    )


INPUT = SearchInput(
    query="自动驾驶 产品责任",
    options=SearchOptions(freshness="live", max_pages=3, metadata="basic", candidate_target=500),
)


async def search(
    clock: FakeClock, pipe: ResearchPipeline, jobs: JobManager, continue_of: str | None = None
) -> OperationRecord:
    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(INPUT, PLAN, ctx)

    if continue_of is None:
        job = jobs.start(OperationKind.SEARCH, runner, INPUT.budget())
    else:
        job = jobs.continue_(continue_of, runner, additional_requests=100)
    [record] = await clock.run_until_complete(job.finish())
    return record


def grid_calls(site: SimSite, name: str) -> list[int]:
    return [k[2] for k in site.log if k[:2] == ("grid", name)]


def coverage(record: OperationRecord, channel: str) -> dict[str, Any]:
    return next(c for c in record.result["coverage"] if c["channel"] == channel)


async def test_an_empty_later_page_is_asked_again_after_a_pause(clock: FakeClock, store: Store) -> None:
    site = BlockingSite(clock, {("q1", 2): 1})
    pipe = pipeline(clock, store, site)
    before = clock.monotonic()
    record = await search(clock, pipe, JobManager(clock, MemorySink()))
    assert record.status == "completed" and record.errors == []
    assert grid_calls(site, "q1") == [1, 2, 2, 3]  # page 2 once more, then on to page 3
    assert coverage(record, "q1")["pages"] == 3 and coverage(record, "q1")["rows"] == 60
    assert clock.monotonic() - before >= pipe.engine.soft_block_pause  # the re-check waited


async def test_an_empty_later_page_that_stays_empty_stops_the_search_and_continue_asks_again(
    clock: FakeClock, store: Store
) -> None:
    site = BlockingSite(clock, {("q1", 2): 2})
    jobs = JobManager(clock, MemorySink())
    stopped = await search(clock, pipeline(clock, store, site), jobs)
    assert [e.code for e in stopped.errors] == ["SITE_UNAVAILABLE"]
    assert stopped.errors[0].details["reason"] == "soft_block"
    q1 = coverage(stopped, "q1")
    assert q1["pages"] == 1 and not q1["exhausted"] and not q1["failed"]  # never stored as exhausted
    assert grid_calls(site, "q1") == [1, 2, 2]

    healthy = SimSite(clock)
    done = await search(clock, pipeline(clock, store, healthy), jobs, continue_of=stopped.operation_id)
    assert done.status == "completed"
    assert grid_calls(healthy, "q1") == [2, 3]  # the same page again, nothing before it
    assert coverage(done, "q1")["rows"] == 60


async def test_an_empty_subject_channel_beside_title_hits_is_suspect(clock: FakeClock, store: Store) -> None:
    site = BlockingSite(clock, {("q1", 1): 2})
    record = await search(clock, pipeline(clock, store, site), JobManager(clock, MemorySink()))
    assert [e.code for e in record.errors] == ["SITE_UNAVAILABLE"]
    assert grid_calls(site, "q1") == [1, 1]
    assert not coverage(record, "q1")["exhausted"]


async def test_an_empty_title_channel_beside_subject_hits_is_taken_as_it_is(
    clock: FakeClock, store: Store
) -> None:
    site = BlockingSite(clock, {("q2", 1): 1})  # titles need not hold what subjects match
    record = await search(clock, pipeline(clock, store, site), JobManager(clock, MemorySink()))
    assert record.status == "completed" and record.errors == []
    assert grid_calls(site, "q2") == [1]
    assert coverage(record, "q2")["exhausted"] and coverage(record, "q2")["rows"] == 0


async def test_an_empty_subject_page_lets_its_siblings_go_and_is_judged_beside_them(
    clock: FakeClock, store: Store
) -> None:
    # The default policy holds the title and keyword channels until the subject channel's first
    # answer; an empty one proves nothing alone, so they go ahead and their rows make it suspect.
    site = BlockingSite(clock, {("q1", 1): 2})
    pipe = pipeline(clock, store, site, DEFAULT_POLICY)
    record = await search(clock, pipe, JobManager(clock, MemorySink()))
    assert [e.code for e in record.errors] == ["SITE_UNAVAILABLE"]
    assert grid_calls(site, "q1") == [1, 1]  # the zero, then once more after the pause
    assert grid_calls(site, "q2")[:1] == [1] and grid_calls(site, "q3")[:1] == [1]  # asked, not local
    assert not coverage(record, "q1")["exhausted"]


async def test_a_subject_page_that_recovers_beside_its_siblings_completes_the_search(
    clock: FakeClock, store: Store
) -> None:
    site = BlockingSite(clock, {("q1", 1): 1})
    record = await search(clock, pipeline(clock, store, site, DEFAULT_POLICY), JobManager(clock, MemorySink()))
    assert record.status == "completed" and record.errors == []
    assert grid_calls(site, "q1")[:2] == [1, 1]
    assert coverage(record, "q1")["rows"] > 0
