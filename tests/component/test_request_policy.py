"""The default request policy (pipeline/policy.py, DESIGN.md "Request policies") in the research
pipeline on a fake clock: channels that search a subset of an exhausted subject channel are not
requested, the boundary enrichment reads fewer detail pages than the reference pool while the top
results stay readable, and a search stopped by its budget continues without repeating a request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline_fakes import SimSite, duplicates

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.operations import StoreSink
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import DEFAULT_POLICY, REFERENCE_POLICY, SearchPolicy
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.state import SearchState
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.store import Store

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])


class SubsetSite(SimSite):
    """q1 lists papers 0-39 (one page of 50); q2, q3 and feedback list subsets of them, as on CNKI."""

    def channel(self, request: GridRequest) -> tuple[str, list[int]]:
        name, papers = super().channel(request)
        subsets = {"q1": range(0, 40), "q2": range(0, 25), "q3": range(10, 40)}
        if name.startswith("feedback:"):
            return name, list(range(5, 25))  # the same concepts AND one more phrase
        return (name, list(subsets[name])) if name in subsets else (name, papers)


def pipeline(clock: FakeClock, store: Store, site: SimSite, policy: SearchPolicy, page_size: int) -> ResearchPipeline:
    return ResearchPipeline(
        site, store, clock, workers=8, now_year=lambda: 2026, page_size=page_size, policy=policy
    )


async def search(
    clock: FakeClock, pipe: ResearchPipeline, inp: SearchInput, jobs: JobManager | None = None
) -> OperationRecord:
    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = (jobs or JobManager(clock, MemorySink())).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    return record


def live(**options: Any) -> SearchInput:
    return SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live", **options))


async def test_an_exhausted_subject_channel_answers_its_subsets_without_requests(
    clock: FakeClock, store: Store
) -> None:
    site = SubsetSite(clock)
    pipe = pipeline(clock, store, site, DEFAULT_POLICY, 50)
    record = await search(clock, pipe, live())
    result = record.result
    assert record.status == "completed"
    assert [k for k in site.log if k[0] == "grid"] == [("grid", "q1", 1)]  # nothing else asked
    coverage = {c["channel"]: c for c in result["coverage"]}
    assert coverage["q1"]["exhausted"] and coverage["q1"]["rows"] == 40
    assert coverage["q2"]["stopped"] == coverage["q3"]["stopped"] == "local"
    assert coverage["q2"]["pages"] == coverage["q3"]["pages"] == 0
    feedback = [c for c in result["coverage"] if c["channel"].startswith("feedback")]
    assert feedback and all(c["stopped"] == "local" and c["pages"] == 0 for c in feedback)
    assert result["candidate_count"] == 40
    # the local title channel's hits are evidence like any other channel's
    evidence = store.search_results(result["search_id"], "all", 0, 100).items
    assert any("q2" in e.channels for e in evidence) and all("q1" in e.channels for e in evidence)


async def test_the_same_search_under_the_reference_asks_every_channel(clock: FakeClock, store: Store) -> None:
    site = SubsetSite(clock)
    record = await search(clock, pipeline(clock, store, site, REFERENCE_POLICY, 50), live())
    asked = {k[1] for k in site.log if k[0] == "grid"}
    assert {"q1", "q2", "q3"} <= asked and any(a.startswith("feedback") for a in asked)
    assert record.result["candidate_count"] == 40  # the subsets added no candidate


async def test_boundary_enrichment_reads_fewer_details_and_the_top_ten_in_full(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    reference_site = SimSite(FakeClock())
    ref_clock = reference_site.clock
    ref_store = Store.open(tmp_path / "ref", ref_clock)
    try:
        reference = await search(
            ref_clock, pipeline(ref_clock, ref_store, reference_site, REFERENCE_POLICY, 20), live()
        )
    finally:
        ref_store.close()
    site = SimSite(clock)
    record = await search(clock, pipeline(clock, store, site, DEFAULT_POLICY, 20), live())
    assert record.status == reference.status == "completed"
    assert site.count("detail") < reference_site.count("detail")
    top = record.result["results"][:10]
    assert len(top) == 10 and all(r["detail_read"] and r["quality_known"] for r in top)


async def test_budget_exhaustion_and_continue_repeat_no_request_under_the_default(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    whole_site = SimSite(FakeClock())
    whole_store = Store.open(tmp_path / "whole", whole_site.clock)
    try:
        whole = await search(
            whole_site.clock, pipeline(whole_site.clock, whole_store, whole_site, DEFAULT_POLICY, 20), live()
        )
    finally:
        whole_store.close()
    site = SimSite(clock)
    pipe = pipeline(clock, store, site, DEFAULT_POLICY, 20)
    jobs = JobManager(clock, MemorySink())
    inp = live(max_requests=30)
    stopped = await search(clock, pipe, inp, jobs)
    assert stopped.status == "partial" and stopped.errors[0].code == "BUDGET_EXHAUSTED"

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.continue_(stopped.operation_id, runner, additional_requests=400)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status == "completed"
    assert duplicates(site.log) == []
    assert done.requests == whole.requests == len(site.log)
    assert done.result["selected_count"] == whole.result["selected_count"]


async def test_enrichment_batches_are_appended_to_the_checkpoint_not_rewritten(
    clock: FakeClock, store: Store
) -> None:
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        site = SimSite(clock)
        jobs = JobManager(clock, StoreSink(store))
        record = await search(clock, pipeline(clock, store, site, DEFAULT_POLICY, 20), live(), jobs)
        assert record.status == "completed"
    finally:
        store._conn.set_trace_callback(None)
    appended = [s for s in statements if s.startswith("INSERT INTO operation_log")]
    full = [s for s in statements if s.startswith("INSERT OR REPLACE INTO operations")]
    batches = [s for s in appended if '"e": "enrich"' in s]
    assert batches and all(len(s.encode()) < 1_000 for s in batches)  # a batch's refs only
    assert len(full) == 7  # the start and the phase ends, never per batch
    stored = store.load_operation(record.operation_id)
    assert stored is not None and stored.checkpoint is not None
    st = SearchState.from_json(stored.checkpoint)
    assert st.finished and len(st.pool) == sum(s.count("rec_") for s in batches)
