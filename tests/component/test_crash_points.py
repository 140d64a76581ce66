"""A research search killed at any point continues from what was stored: the checkpoint as the
sink holds it after every write (a full checkpoint or an event appended to it) loads, and a
search cut after its first pages landed, before the engine's next full checkpoint, continues to
`completed` without asking a page it had stored (DESIGN.md "Retrieval without rounds", checkpoints).
A `continue` retries the channels a non-fatal error closed, from the page that failed."""

from __future__ import annotations

import copy
from typing import Any

from pipeline_fakes import SimSite

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import SiteTemporarilyEmpty
from cnki_mcp.jobs import JobManager, OperationContext
from cnki_mcp.models import GridPage
from cnki_mcp.operations import CHECKPOINT_LOG, MemorySink, OperationKind, OperationRecord, OperationStatus
from cnki_mcp.pipeline.models import StructuredSearchInput
from cnki_mcp.pipeline.state import SearchState
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store
from tests.component.test_pipeline import PLAN, make, run_search, search_input


class Snapshots(MemorySink):
    """A MemorySink that keeps (record, stored checkpoint) after every write: each one is what a
    process killed right then would leave in the database."""

    def __init__(self) -> None:
        super().__init__()
        self.cuts: list[tuple[OperationRecord, dict[str, Any]]] = []

    def _keep(self, operation_id: str) -> None:
        stored = self.load(operation_id)
        if stored is not None and isinstance(stored.checkpoint, dict):
            self.cuts.append((stored.model_copy(deep=True), copy.deepcopy(stored.checkpoint)))

    def save(self, record: OperationRecord, **kwargs: Any) -> None:
        super().save(record, **kwargs)
        self._keep(record.operation_id)

    def append_checkpoint(self, operation_id: str, entry: Any) -> None:
        super().append_checkpoint(operation_id, entry)
        self._keep(operation_id)


def page_events(checkpoint: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in checkpoint.get(CHECKPOINT_LOG) or [] if isinstance(e, dict) and "ch" in e]


async def test_the_checkpoint_left_by_a_kill_at_any_write_loads(clock: FakeClock, store: Store) -> None:
    sink = Snapshots()
    record = await run_search(clock, make(clock, store, SimSite(clock)), search_input(freshness="live"), JobManager(clock, sink))
    assert record.status == "completed"
    assert any(not cp.get("coverage") or page_events(cp) for _, cp in sink.cuts)
    for _, checkpoint in sink.cuts:
        st = SearchState.from_json(checkpoint)
        assert {c.channel for c in st.coverage} >= {c.id for c in st.channels}
        if not any(c["pages"] or c["rows"] for c in checkpoint["coverage"]):
            # the first checkpoint as earlier versions wrote it, without coverage
            older = SearchState.from_json({**checkpoint, "coverage": []})
            assert [c.model_dump() for c in older.coverage] == [c.model_dump() for c in st.coverage]


async def test_a_search_killed_after_its_first_pages_continues_without_asking_them_again(
    clock: FakeClock, store: Store
) -> None:
    sink = Snapshots()
    site = SimSite(clock)
    pipe = make(clock, store, site)
    inp = search_input(freshness="live")
    await run_search(clock, pipe, inp, JobManager(clock, sink))
    # the last cut whose pages are only events on the first checkpoint (retrieval under way)
    mid = [(rec, cp) for rec, cp in sink.cuts if page_events(cp) and not any(c["pages"] for c in cp["coverage"])]
    assert mid, "no cut between the first page and the next full checkpoint"
    dead, checkpoint = mid[-1]
    stored_pages = {(e["ch"], e["page"]) for e in page_events(checkpoint)}

    after = MemorySink()
    after.save(dead.model_copy(update={"status": OperationStatus.RUNNING, "checkpoint": checkpoint}, deep=True))
    jobs = JobManager(clock, after)
    assert dead.operation_id in jobs.recover_interrupted()
    site.log.clear()

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    [final] = await clock.run_until_complete(jobs.continue_(dead.operation_id, runner).finish())
    assert final.status == "completed", final.errors
    asked = {(k[1], k[2]) for k in site.log if k[0] == "grid"}
    assert asked and not asked & stored_pages
    assert final.result["candidate_count"] > 0


class Closing(SimSite):
    """SimSite whose `channel` page `page` answers 暂无数据 while `broken` is set."""

    def __init__(self, clock: FakeClock, channel: str, page: int) -> None:
        super().__init__(clock)
        self.where = (channel, page)
        self.broken = True

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        name, _ = self.channel(request)
        if self.broken and (name, request.page) == self.where:
            await self._call(op, ("grid", name, request.page, "empty"))
            raise SiteTemporarilyEmpty()
        return await super().grid(request, op, follow)


async def test_continue_retries_a_channel_an_error_closed_and_drops_its_old_error(
    clock: FakeClock, store: Store
) -> None:
    site = Closing(clock, "q2", 2)
    pipe = make(clock, store, site)
    inp = search_input(freshness="live")
    jobs = JobManager(clock, MemorySink())
    first = await run_search(clock, pipe, inp, jobs)
    assert first.status == "partial"
    assert [(e.code, e.details.get("channel")) for e in first.errors] == [("SITE_TEMPORARILY_EMPTY", "q2")]
    answered = {k for k in site.log if k[0] == "grid" and len(k) == 3}
    read = {k for k in site.log if k[0] in ("detail", "export", "journal")}

    site.broken = False  # the site answers again
    site.log.clear()

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    [done] = await clock.run_until_complete(jobs.continue_(first.operation_id, runner).finish())
    assert done.status == "completed" and done.errors == [], done.errors
    asked = [k for k in site.log if k[0] == "grid"]
    assert ("grid", "q2", 2) in asked and not set(asked) & answered  # the failed page, nothing answered
    coverage = {c["channel"]: c for c in done.result["coverage"]}
    assert not coverage["q2"]["failed"] and coverage["q2"]["pages"] >= 2
    again = [k for k in site.log if k[0] in ("detail", "export", "journal")]
    assert len(again) == len(set(again)) and not set(again) & read  # nothing read twice


async def test_a_channel_that_fails_again_on_continue_reports_one_error(clock: FakeClock, store: Store) -> None:
    site = Closing(clock, "q2", 2)
    pipe = make(clock, store, site)
    inp = search_input(freshness="live")
    jobs = JobManager(clock, MemorySink())
    first = await run_search(clock, pipe, inp, jobs)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    [again] = await clock.run_until_complete(jobs.continue_(first.operation_id, runner).finish())
    assert again.status == "partial"
    assert [(e.code, e.details.get("channel")) for e in again.errors] == [("SITE_TEMPORARILY_EMPTY", "q2")]


async def test_a_structured_search_whose_first_page_failed_continues_once_the_site_answers(
    clock: FakeClock, store: Store
) -> None:
    site = Closing(clock, "native", 1)
    pipe = make(clock, store, site, page_size=50)
    inp = StructuredSearchInput(expression={"field": "authors", "value": "作者"}, limit=20)
    jobs = JobManager(clock, MemorySink())

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    first = await clock.run_until_complete(jobs.start(OperationKind.SEARCH, runner, inp.budget()).finish())
    # no page read: no result of 0 papers (DESIGN.md "A search that read nothing"), its checkpoint kept
    assert first[0].status == "partial" and first[0].result is None
    site.broken = False
    [done] = await clock.run_until_complete(jobs.continue_(first[0].operation_id, runner).finish())
    assert done.status == "completed" and done.errors == []
    assert done.result["candidate_count"] == 50
