"""The default request policy (pipeline/policy.py, DESIGN.md "Request policies") in the research
pipeline on a fake clock: channels that search a subset of an exhausted subject channel are not
requested, the boundary enrichment reads fewer detail pages than the reference pool while the top
results stay readable, and a search stopped by its budget continues without repeating a request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline_fakes import SimSite, duplicates

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import (
    JobManager,
    MemorySink,
    OperationContext,
    OperationKind,
    OperationRecord,
    ProgressEvent,
)
from cnki_mcp.operations import OperationStatus, StoreSink, finished_message
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


async def uninterrupted(site: SimSite, data_dir: Path) -> OperationRecord:
    """The default search run whole against `site` (on its own clock) with a store of its own."""
    store = Store.open(data_dir, site.clock)
    try:
        return await search(site.clock, pipeline(site.clock, store, site, DEFAULT_POLICY, 20), live())
    finally:
        store.close()


def live(**options: Any) -> SearchInput:
    return SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live", **options))


async def test_an_exhausted_subject_channel_answers_its_subsets_without_requests(
    clock: FakeClock, store: Store
) -> None:
    site = SubsetSite(clock)
    pipe = pipeline(clock, store, site, DEFAULT_POLICY, 50)
    jobs = JobManager(clock, MemorySink())
    events: list[ProgressEvent] = []

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(live(), PLAN, ctx)

    job = jobs.start(OperationKind.SEARCH, runner, live().budget())
    jobs.subscribe(job.operation_id, events.append)
    [record] = await clock.run_until_complete(job.finish())
    result = record.result
    assert record.status == "completed" and record.message == finished_message(OperationStatus.COMPLETED, 0)
    assert [k for k in site.log if k[0] == "grid"] == [("grid", "q1", 1)]  # nothing else asked
    coverage = {c["channel"]: c for c in result["coverage"]}
    assert coverage["q1"]["exhausted"] and coverage["q1"]["rows"] == 40
    assert coverage["q2"]["stopped"] == coverage["q3"]["stopped"] == "local"
    assert coverage["q2"]["pages"] == coverage["q3"]["pages"] == 0
    feedback = [c for c in result["coverage"] if c["channel"].startswith("feedback")]
    assert feedback and all(c["stopped"] == "local" and c["pages"] == 0 for c in feedback)
    # the feedback stage's message (the search's last stage) says its words were not sent
    assert record.stage == "feedback"
    said = [e.message for e in events if e.stage == "feedback" and e.status == "running"]
    assert said and "不请求知网" in said[-1], said
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
    whole = await uninterrupted(whole_site, tmp_path / "whole")
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
    batches = [s for s in appended if '"e": "enrich"' in s and '"pool": "pool"' in s]
    assert batches and all(len(s.encode()) < 1_000 for s in batches)  # a batch's refs only
    assert len(full) == 7  # the start and the phase ends, never per batch
    stored = store.load_operation(record.operation_id)
    assert stored is not None and stored.checkpoint is not None
    st = SearchState.from_json(stored.checkpoint)
    assert st.finished and len(st.pool) == sum(s.count("rec_") for s in batches)


async def test_the_default_reads_abstracts_by_batch_export_and_the_top_ten_in_full(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock, exports=True)
    record = await search(clock, pipeline(clock, store, site, DEFAULT_POLICY, 20), live())
    assert record.status == "completed"
    assert site.count("detail") == 0
    exports = [k for k in site.log if k[0] == "export"]
    assert exports and all(len(k[1]) <= 20 for k in exports)
    top = record.result["results"][:10]
    assert len(top) == 10
    assert all(r["abstract_read"] and r["quality_known"] and not r["detail_read"] for r in top)
    papers = store.papers_by_refs([r["record_ref"] for r in top])
    assert all(p.abstract and p.keywords and p.export_observed_at for p in papers.values())
    assert record.result["enhanced_count"] >= 10
    # the same search reading detail pages instead: one request per paper, not per 20
    detail_clock = FakeClock()
    detail_site = SimSite(detail_clock, exports=True)
    detail_store = Store.open(store.path.parent / "detail", detail_clock)
    try:
        by_detail = await search(
            detail_clock,
            pipeline(detail_clock, detail_store, detail_site, DEFAULT_POLICY.without("reading"), 20),
            live(),
        )
    finally:
        detail_store.close()
    assert detail_site.count("detail") > 2 * len(exports)
    assert by_detail.requests > record.requests
    assert [r["record_ref"] for r in by_detail.result["results"][:10]] == [r["record_ref"] for r in top]


async def test_a_paper_the_export_leaves_out_is_read_from_its_detail_page(clock: FakeClock, store: Store) -> None:
    missing = set(range(0, 200, 3))
    site = SimSite(clock, exports=True, missing_exports=missing)
    record = await search(clock, pipeline(clock, store, site, DEFAULT_POLICY, 20), live())
    assert record.status == "completed"
    exported = {int(e.split("!")[1].removeprefix("SIM")) for k in site.log if k[0] == "export" for e in k[1]}
    details = [k[1] for k in site.log if k[0] == "detail"]
    assert details and sorted(details) == sorted(exported & missing)  # each left-out paper once
    top = record.result["results"][:10]
    assert all(r["abstract_read"] and r["quality_known"] for r in top)
    assert any(r["detail_read"] for r in top) and not all(r["detail_read"] for r in top)


async def test_a_search_reading_by_export_continues_after_its_budget_without_repeating_a_request(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    whole_site = SimSite(FakeClock(), exports=True)
    whole = await uninterrupted(whole_site, tmp_path / "whole")
    kinds = {k[0] for k in whole_site.log}
    assert {"grid", "export", "journal"} <= kinds
    for cut in range(8, len(whole_site.log), 3):  # cut in retrieval, in exports, in journal pages
        cut_clock = FakeClock()
        site = SimSite(cut_clock, exports=True)
        cut_store = Store.open(tmp_path / f"cut{cut}", cut_clock)
        try:
            pipe = pipeline(cut_clock, cut_store, site, DEFAULT_POLICY, 20)
            jobs = JobManager(cut_clock, MemorySink())
            inp = live(max_requests=cut)
            stopped = await search(cut_clock, pipe, inp, jobs)
            assert stopped.status == "partial" and stopped.errors[0].code == "BUDGET_EXHAUSTED"

            async def runner(ctx: OperationContext, pipe: ResearchPipeline = pipe, inp: SearchInput = inp) -> Any:
                return await pipe.research(inp, PLAN, ctx)

            job = jobs.continue_(stopped.operation_id, runner, additional_requests=400)
            [done] = await cut_clock.run_until_complete(job.finish())
        finally:
            cut_store.close()
        assert done.status == "completed"
        assert duplicates(site.log) == [], cut
        assert sorted(site.log) == sorted(whole_site.log), cut
        assert done.result["selected_count"] == whole.result["selected_count"]


class TimedSite(SimSite):
    """Each request's kind with the fake time it was sent at."""

    def __init__(self, clock: FakeClock, **kw: Any) -> None:
        super().__init__(clock, **kw)
        self.sent: list[tuple[str, float]] = []

    async def _call(self, op: Any, key: tuple[Any, ...]) -> None:
        self.sent.append((key[0], self.clock.monotonic()))
        await super()._call(op, key)


async def test_the_readable_tops_journal_pages_go_out_beside_its_abstracts(tmp_path: Path) -> None:
    """JournalTiming.TOP_WITH_ABSTRACT (the default): the first export step sends the top papers'
    journal pages with it instead of one latency later; the same search reads them after the
    abstracts under the ablation, and both settle the same top ten. (Without JournalPrefetch, whose
    journal pages go out before any export: tests/component/test_journal_prefetch.py.)"""
    firsts: dict[str, tuple[float, float]] = {}
    tops: dict[str, list[str]] = {}
    base = DEFAULT_POLICY.without("journal_prefetch")
    for policy in (base, base.without("journal_timing")):
        clock = FakeClock()
        site = TimedSite(clock, exports=True)
        store = Store.open(tmp_path / policy.name, clock)
        try:
            record = await search(clock, pipeline(clock, store, site, policy, 20), live())
        finally:
            store.close()
        assert record.status == "completed"
        first_export = next(t for kind, t in site.sent if kind == "export")
        first_journal = next(t for kind, t in site.sent if kind == "journal")
        firsts[policy.name] = (first_export, first_journal)
        tops[policy.name] = [r["record_ref"] for r in record.result["results"][:10]]
        assert all(r["abstract_read"] and r["quality_known"] for r in record.result["results"][:10])
    export, journal = firsts[base.name]
    assert journal == export  # the same step
    export, journal = firsts[f"{base.name}-journal_timing"]
    assert journal >= export + site.latency  # after the export's answer
    assert tops[base.name] == tops[f"{base.name}-journal_timing"]
