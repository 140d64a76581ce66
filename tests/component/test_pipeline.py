"""The research pipeline against `SimSite` (the reference's backend-level simulator, site-rules.md §10.2)
on a fake clock: request counts, coverage, pool sizes, feedback, caching, budget + continue
without repeated requests, year filter, structured order, metadata location and per-item errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_backend import CorpusBackend
from pipeline_fakes import AMBIGUOUS_TITLE, SimSite, WatchedSegmenter, duplicates, title_of

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import InvalidInput, PaginationMismatch, SearchNotFound
from cnki_mcp.jobs import (
    BudgetSpec,
    JobManager,
    MemorySink,
    OperationContext,
    OperationKind,
    OperationRecord,
    ProgressEvent,
)
from cnki_mcp.models import GridPage
from cnki_mcp.operations import OperationStatus, finished_message
from cnki_mcp.pipeline.models import (
    MetadataInput,
    ResultsInput,
    SearchInput,
    SearchOptions,
    StructuredOptions,
    StructuredSearchInput,
)
from cnki_mcp.pipeline.policy import REFERENCE_POLICY, SearchPolicy
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])


def make(
    clock: FakeClock,
    store: Store,
    site: SimSite,
    page_size: int = 20,
    policy: SearchPolicy = REFERENCE_POLICY,
) -> ResearchPipeline:
    """The pipeline under the reference's request policy, whose counts these tests pin; the
    default policy's rules have their own tests (test_request_policy.py)."""
    return ResearchPipeline(
        site, store, clock, workers=8, now_year=lambda: 2026, page_size=page_size, policy=policy
    )


def search_input(**options: Any) -> SearchInput:
    extra = {k: options.pop(k) for k in ("year_from", "year_to", "mode", "limit") if k in options}
    return SearchInput(query="自动驾驶 产品责任", options=SearchOptions(**options), **extra)


async def run_op(clock: FakeClock, jobs: JobManager, runner: Any, budget: BudgetSpec) -> OperationRecord:
    job = jobs.start(OperationKind.SEARCH, runner, budget)
    [record] = await clock.run_until_complete(job.finish())
    return record


async def run_search(
    clock: FakeClock, pipe: ResearchPipeline, inp: SearchInput, jobs: JobManager | None = None
) -> OperationRecord:
    jobs = jobs or JobManager(clock, MemorySink())

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    return await run_op(clock, jobs, runner, inp.budget())


async def search_with_events(
    clock: FakeClock, pipe: ResearchPipeline, inp: SearchInput
) -> tuple[OperationRecord, list[ProgressEvent]]:
    """The search's record and every progress event it sent."""
    jobs = JobManager(clock, MemorySink())
    events: list[ProgressEvent] = []

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.start(OperationKind.SEARCH, runner, inp.budget())
    jobs.subscribe(job.operation_id, events.append)
    [record] = await clock.run_until_complete(job.finish())
    return record, events


async def test_search_counts_match_the_reference_simulator(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record = await run_search(clock, pipe, search_input(freshness="live"))
    result = record.result
    assert record.status == "completed"
    assert site.count("grid") == 17  # 3 channels x 5 pages + 2 feedback pages
    assert result["candidate_count"] == 200  # 160 + 40 from feedback
    assert len(result["coverage"]) == 5
    assert [c["channel"] for c in result["coverage"]] == ["q1", "q2", "q3", "feedback1", "feedback2"]
    assert site.count("detail") == 100  # pool 60 of 160 + 40 of 40 feedback candidates
    journals = [k for k in site.log if k[0] == "journal"]
    assert len(journals) == len(set(journals)) == 15  # each source once
    assert record.requests == len(site.log) == site.count("grid") + site.count("detail") + len(journals)
    assert result["requests"] == record.requests
    assert result["selected_count"] > 0 and result["quality_source_count"] == 15
    assert result["enhanced_count"] == 100
    assert site.peak >= 3  # rounds and enrichment run concurrently
    assert result["plan"]["channels"][3]["reason"].endswith("算法责任")
    assert sum(result["selection_exclusions"].values()) == 200 - result["selected_count"]


async def test_repeated_search_lists_grids_again_but_reuses_details_and_journals(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    await run_search(clock, pipe, search_input(freshness="live"))
    site.log.clear()
    record = await run_search(clock, pipe, search_input(freshness="live"))
    assert record.status == "completed"
    assert site.count("grid") == 17
    assert site.count("detail") == 0 and site.count("journal") == 0


async def test_completed_search_is_served_from_cache_for_ten_minutes(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    first = await run_search(clock, pipe, search_input())
    site.log.clear()
    hit = pipe.cached(search_input(limit=5), PLAN)
    assert hit is not None
    assert hit.source == "cache" and hit.requests == 0 and site.log == []
    assert hit.search_id == first.result["search_id"]
    assert [r.record_ref for r in hit.results] == [r["record_ref"] for r in first.result["results"][:5]]
    assert pipe.cached(search_input(freshness="live"), PLAN) is None
    assert pipe.cached(search_input(max_pages=4), PLAN) is None  # another key
    await clock.advance(601)
    assert pipe.cached(search_input(), PLAN) is None


async def test_a_cached_one_concept_answer_cuts_its_advice_off_the_event_loop(
    clock: FakeClock, store: Store
) -> None:
    """A cached answer's advice cuts a one-concept query; in a process whose dictionary is not
    loaded yet, `cached_async` loads it in a worker thread first (DESIGN.md "Ranking cost")."""
    import threading

    one = plan_explicit([["自动驾驶"]])
    site = SimSite(clock)
    first = make(clock, store, site)
    inp = SearchInput(query="自动驾驶", options=SearchOptions())

    async def runner(ctx: OperationContext) -> Any:
        return await first.research(inp, one, ctx)

    assert (await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())).status == "completed"

    segmenter = WatchedSegmenter()  # jieba's own dictionary, not loaded yet
    later = ResearchPipeline(SimSite(clock), store, clock, workers=8, now_year=lambda: 2026, segmenter=segmenter)
    hit = await later.cached_async(inp, one)
    assert hit is not None and hit.source == "cache"
    assert hit.advice is not None and hit.advice.reason == "one_concept"
    # loaded by a warm-up off the loop before the advice cut (a cut on the loop loads without it)
    assert segmenter.loaded and segmenter.warmed_in and threading.main_thread().name not in segmenter.warmed_in


async def test_budget_exhaustion_is_partial_and_continue_repeats_no_request(
    clock: FakeClock, store: Store
) -> None:
    reference_site = SimSite(FakeClock())
    async with _isolated(reference_site) as (ref_pipe, ref_clock):
        full = await run_search(ref_clock, ref_pipe, search_input(freshness="live"))
    site = SimSite(clock)
    pipe = make(clock, store, site)
    jobs = JobManager(clock, MemorySink())
    inp = search_input(freshness="live", max_requests=50)
    stopped = await run_search(clock, pipe, inp, jobs)
    assert stopped.status == "partial"
    assert stopped.errors[0].code == "BUDGET_EXHAUSTED"
    assert stopped.requests == 50 and stopped.result["status"] == "partial"

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.continue_(stopped.operation_id, runner, additional_requests=450)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status == "completed"
    assert done.requests == full.requests == len(site.log)
    assert duplicates(site.log) == []
    assert done.result["enhanced_count"] == 100
    assert done.result["candidate_count"] == 200
    assert done.result["search_id"] == stopped.operation_id


class CursorSite(SimSite):
    """A SimSite that pages like CNKI: each page hands out the cursor of the next one, a page > 1
    needs it, and the site's own cursor cache starts empty in every instance (a new process).
    Like `CnkiSite`, it re-fetches the earlier pages to learn a cursor nobody gave it."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.cursors: dict[tuple[str, int], str] = {}
        self.sent: list[str | None] = []

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        name, _ = self.channel(request)
        if name == "lookup" or request.page == 1:
            return self._with_cursor(name, request, await super().grid(request, op))
        cursor = request.cursor or self.cursors.get((name, request.page))
        if cursor is None:
            for page in range(1, request.page):  # walk: the repeated requests we must avoid
                await self.grid(request.model_copy(update={"page": page, "cursor": None}), op)
            cursor = self.cursors[(name, request.page)]
        if cursor != f"{name}#{request.page}":
            raise PaginationMismatch("游标不属于该页", page=request.page)
        self.sent.append(request.cursor)
        return self._with_cursor(name, request, await super().grid(request, op))

    def _with_cursor(self, name: str, request: GridRequest, page: GridPage) -> GridPage:
        cursor = f"{name}#{request.page + 1}"
        self.cursors[(name, request.page + 1)] = cursor
        return page.model_copy(update={"turnpage": cursor})


async def test_search_continued_in_a_new_process_reuses_checkpointed_cursors(
    clock: FakeClock, store: Store
) -> None:
    first = CursorSite(clock)
    jobs = JobManager(clock, MemorySink())
    inp = search_input(freshness="live", max_requests=5)  # stops inside the second round
    stopped = await run_search(clock, make(clock, store, first), inp, jobs)
    assert [e.code for e in stopped.errors] == ["BUDGET_EXHAUSTED"]
    assert first.count("detail") == 0

    fresh = CursorSite(clock)  # new process: empty cursor cache, same store and checkpoint
    pipe = make(clock, store, fresh)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.continue_(stopped.operation_id, runner, additional_requests=450)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status == "completed" and [e.code for e in done.errors] == []
    grids = [k for k in first.log + fresh.log if k[0] == "grid"]
    assert duplicates(grids) == []
    assert fresh.sent and all(c is not None for c in fresh.sent)  # every page > 1 sent its cursor


async def test_retrieval_progress_never_counts_past_its_total_when_pages_overshoot_the_target(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record, events = await search_with_events(clock, pipe, search_input(freshness="live", candidate_target=30))
    assert record.status == "completed"
    retrieval = [e for e in events if e.stage == "retrieval" and e.unit == "candidates"]
    assert retrieval[-1].done > 30  # whole pages of 20 rows from three channels pass the target
    assert all(e.total is not None and e.done <= e.total for e in retrieval)


async def test_progress_message_fits_each_stage_and_counts_candidates_after_the_round(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record, events = await search_with_events(clock, pipe, search_input(freshness="live"))
    assert record.status == "completed"

    def of(stage: str) -> list[ProgressEvent]:
        return [e for e in events if e.stage == stage and e.status == "running"]

    # the last event is the ending's: its message says the search is done, not where it last was
    assert events[-1].status == "completed" and events[-1].message == finished_message(OperationStatus.COMPLETED, 0)

    retrieval = of("retrieval")
    # Five rounds of 20 rows: q1 lists 0-99, q2 30-129, q3 60-159, so 160 candidates, and the
    # two feedback channels add 40 more (candidate_count 200).
    rounds = record.result["coverage"][0]["pages"]
    assert rounds == 5 and record.result["candidate_count"] == 200
    assert retrieval[-1].message == "第 5 轮检索，已有候选 160 篇"
    assert retrieval[-1].done == 160 and retrieval[-1].unit == "candidates"
    enrichment = of("enrichment")  # pool of 160 candidates: 60
    assert {e.message for e in enrichment} == {f"读取详情与期刊 {i}/60" for i in range(61)}
    assert enrichment[-1].message == "读取详情与期刊 60/60"
    assert (enrichment[-1].done, enrichment[-1].total, enrichment[-1].unit) == (60, 60, "papers")
    assert any((e.message or "").startswith("补充检索 2 个关键词：") for e in of("feedback"))
    later = of("feedback_enrichment")  # the 40 feedback papers: all of them
    assert {e.message for e in later} == {f"读取补充检索结果的详情与期刊 {i}/40" for i in range(41)}
    assert (later[-1].done, later[-1].total) == (40, 40)
    assert not any("轮检索" in (e.message or "") for e in events if e.stage != "retrieval")


async def test_a_repeated_search_reports_no_progress_for_papers_it_does_not_read_again(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    inp = search_input(freshness="live")
    await run_search(clock, pipe, inp)
    site.log.clear()
    record, events = await search_with_events(clock, pipe, inp)
    assert record.status == "completed"
    assert site.count("detail") == 0 and site.count("journal") == 0  # every detail and journal fresh
    # each progress report is a save of the operation: none for the 100 papers read last time
    assert [e.message for e in events if e.unit == "papers"] == []
    assert record.result["enhanced_count"] == 100


class _isolated:
    """A throwaway pipeline on its own clock and store (for a reference run)."""

    def __init__(self, site: SimSite) -> None:
        self.site = site

    async def __aenter__(self) -> tuple[ResearchPipeline, FakeClock]:
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        self.store = Store.open(Path(self._tmp.name), self.site.clock)
        return make(self.site.clock, self.store, self.site), self.site.clock

    async def __aexit__(self, *exc: object) -> None:
        self.store.close()
        self._tmp.cleanup()


async def test_year_filter_drops_rows_but_keeps_positions(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record = await run_search(
        clock, pipe, search_input(freshness="live", year_from=2022, year_to=2023, mode="precise")
    )
    years = {p.year for p in store.papers_by_refs(_all_refs(pipe, record)).values()}
    assert years and years <= {2022, 2023}
    # paper 2 (year 2022) is the third row of q1: position 3 although rows 1-2 were filtered out
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:  # a page of records stops at its size budget (pipeline/results.py)
        page = pipe.results(
            ResultsInput(
                search_id=record.result["search_id"], scope="candidates", view="records", offset=offset, limit=100
            )
        )
        assert page.total == record.result["candidate_count"]
        items += page.results
        offset = page.next_offset
    assert len(items) == record.result["candidate_count"]
    assert all(item["record"]["year"] in (2022, 2023) for item in items)
    by_title = {item["record"]["title"]: item for item in items}
    assert by_title[title_of(2)]["channels"] == ["q1"]
    assert by_title[title_of(2)]["evidence"]["rrf"] == pytest.approx(1 / 63)


def _all_refs(pipe: ResearchPipeline, record: OperationRecord) -> list[str]:
    page = pipe.store.search_results(record.result["search_id"], "all", 0, 10_000)
    return [e.record_ref for e in page.items]


async def test_precise_mode_skips_feedback(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    record = await run_search(clock, make(clock, store, site), search_input(freshness="live", mode="precise"))
    assert site.count("grid") == 15 and len(record.result["coverage"]) == 3
    assert site.count("detail") == 60


async def test_basic_metadata_reads_no_detail_and_takes_first_hundred(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    record = await run_search(
        clock, make(clock, store, site), search_input(freshness="live", metadata="basic")
    )
    assert site.count("detail") == 0 and site.count("journal") == 0 and site.count("grid") == 15
    assert record.result["selected_count"] == 100


async def test_retrieval_stops_after_full_round_once_target_reached(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    record = await run_search(
        clock,
        make(clock, store, site, page_size=50),
        search_input(freshness="live", candidate_target=100, mode="precise"),
    )
    # round 1: 3 x 50 rows -> 110 distinct candidates >= 100: stop after the round
    assert site.count("grid") == 3
    assert record.result["candidate_count"] == 110
    assert site.page_sizes == {50: 3}


async def test_failed_detail_is_recorded_and_search_ends_partial(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock, failing_details=set(range(0, 180)))
    record = await run_search(clock, make(clock, store, site), search_input(freshness="live", mode="precise"))
    assert record.status == "partial"
    assert record.result["status"] == "partial"
    codes = {e.code for e in record.errors}
    assert codes == {"ACCESS_DENIED"}
    first = record.errors[0].details
    assert first["stage"] == "detail" and first["record_ref"].startswith("rec_") and first["title"]
    assert pytest.approx(len(record.errors)) == 60


async def test_structured_search_keeps_cnki_order(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site, page_size=50)
    inp = StructuredSearchInput(expression={"field": "authors", "value": "作者"}, limit=20)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    record = await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())
    result = record.result
    assert record.status == "completed"
    assert site.count("grid") == 1 and site.count("detail") == 0  # candidate_target = limit; basic
    assert [r["title"] for r in result["results"]] == [title_of(i) for i in range(179, 159, -1)]
    assert result["plan"]["method"] == "structured"
    assert result["plan"]["channels"] == [
        {"id": "native", "field": "expression", "weight": 1.0, "reason": "知网原生条件与排序"}
    ]
    assert result["selected_count"] == 50
    page = pipe.results(ResultsInput(search_id=result["search_id"], limit=3))
    assert [r["title"] for r in page.results] == [title_of(179), title_of(178), title_of(177)]
    assert page.next_offset == 3 and page.total == 50


async def test_structured_search_says_when_cnki_lists_more_rows_than_it_read(clock: FakeClock, store: Store) -> None:
    # its counts and search_results hold only the rows read: without the warning a client takes
    # 50 for everything CNKI has
    site = SimSite(clock)
    pipe = make(clock, store, site, page_size=50)

    async def structured(inp: StructuredSearchInput) -> dict[str, Any]:
        async def runner(ctx: OperationContext) -> Any:
            return await pipe.structured(inp, ctx)

        record = await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())
        assert record.status == "completed" and record.result is not None
        return record.result

    part = await structured(StructuredSearchInput(expression={"field": "authors", "value": "作者"}, limit=20))
    [cov] = part["coverage"]
    assert (cov["rows"], cov["total"], cov["exhausted"]) == (50, 180, False)
    left = [w for w in part["warnings"] if "180" in w and "candidate_target" in w]
    assert len(left) == 1 and "前 50 条" in left[0]
    whole = await structured(
        StructuredSearchInput(
            expression={"field": "authors", "value": "作者"},
            options=StructuredOptions(candidate_target=200, freshness="live"),
        )
    )
    assert whole["coverage"][0]["exhausted"] and whole["candidate_count"] == 180
    assert whole["warnings"] == []
    # the first 100 are selected: the other 80 were left out by that limit, not by a threshold
    assert whole["selection_exclusions"] == {"selection_limit": 80}


async def test_a_structured_search_stopped_by_its_budget_points_to_continue_not_to_a_new_search(
    clock: FakeClock, store: Store
) -> None:
    pipe = make(clock, store, SimSite(clock), page_size=50)
    inp = StructuredSearchInput(
        expression={"field": "authors", "value": "作者"},
        options=StructuredOptions(candidate_target=200, max_requests=1, freshness="live"),
    )

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    record = await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())
    assert record.status == "partial" and record.errors[0].code == "BUDGET_EXHAUSTED"
    assert record.result is not None and record.result["candidate_count"] == 50
    assert not [w for w in record.result["warnings"] if "candidate_target" in w]


async def test_structured_search_rejects_bad_expression_with_code(clock: FakeClock, store: Store) -> None:
    pipe = make(clock, store, SimSite(clock))
    inp = StructuredSearchInput(expression={"op": "not", "items": [{"field": "title", "value": "x"}]})

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    record = await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())
    assert record.status == "failed" and record.errors[0].code == "UNBOUNDED_QUERY"


def test_year_range_must_be_ordered() -> None:
    with pytest.raises(InvalidInput) as info:
        SearchInput(query="x", year_from=2024, year_to=2020)
    assert info.value.code == "INVALID_ARGUMENT"
    assert StructuredSearchInput(expression={}, options=StructuredOptions()).options.metadata == "basic"


async def test_a_compact_page_says_what_the_search_answer_says_of_each_paper(clock: FakeClock, store: Store) -> None:
    # the page a client reads next (the answer's next_step, scope=eligible) named no document type,
    # no source tier and not which papers were selected
    pipe = make(clock, store, SimSite(clock))
    record = await run_search(clock, pipe, search_input(freshness="live", limit=100))
    answered = {r["record_ref"]: r for r in record.result["results"]}
    sid = record.result["search_id"]
    items = [
        item
        for offset in (0, 100)
        for item in pipe.results(ResultsInput(search_id=sid, scope="candidates", view="compact", offset=offset, limit=100)).results
    ]
    assert answered and {item["selected"] for item in items} == {True, False}
    for item in items:
        assert item["selected"] == (item["record_ref"] in answered)
        assert ("exclusion" in item) != item["selected"]
        if item["selected"]:
            shown = answered[item["record_ref"]]
            assert (item["doc_type"], item["tiers"]) == (shown["doc_type"], shown["tiers"])
    assert any(item["tiers"] == ["CSSCI"] for item in items)


async def test_results_scopes_and_unknown_search(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record = await run_search(clock, pipe, search_input(freshness="live"))
    sid = record.result["search_id"]
    selected = pipe.results(ResultsInput(search_id=sid))
    eligible = pipe.results(ResultsInput(search_id=sid, scope="eligible", view="compact"))
    candidates = pipe.results(ResultsInput(search_id=sid, scope="candidates"))
    assert selected.total == record.result["selected_count"]
    assert eligible.total == record.result["eligible_count"]
    assert candidates.total == 200
    assert all(item["eligible"] for item in eligible.results)
    records = pipe.results(ResultsInput(search_id=sid, view="records", limit=1)).results[0]
    assert set(records["evidence"]) >= {"relevance", "quality", "rrf", "concept_coverage", "source_tier"}
    assert records["record"]["quality"]["tiers"] == ["CSSCI"]
    with pytest.raises(SearchNotFound) as info:
        pipe.results(ResultsInput(search_id="op_missing"))
    assert info.value.code == "SEARCH_NOT_FOUND"


async def run_metadata(clock: FakeClock, pipe: ResearchPipeline, inp: MetadataInput) -> OperationRecord:
    async def runner(ctx: OperationContext) -> Any:
        return await pipe.metadata(inp, ctx)

    return await run_op(
        clock, JobManager(clock, MemorySink()), runner, BudgetSpec(max_requests=600, timeout_seconds=900)
    )


async def test_metadata_locates_titles_ten_per_grid_request(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    titles = [title_of(i) for i in range(12)]
    record = await run_metadata(clock, pipe, MetadataInput(titles=titles, quality=True))
    assert record.status == "completed"
    lookups = [k for k in site.log if k[:2] == ("grid", "lookup")]
    assert [len(k[2]) for k in lookups] == [10, 2]
    assert site.count("detail") == 12
    records = record.result["records"]
    assert [r["title"] for r in records] == titles
    assert records[0]["abstract"] and records[0]["quality"]["tiers"] == ["CSSCI"]
    # a second call is local: unique local titles and fresh details cost nothing
    site.log.clear()
    again = await run_metadata(clock, pipe, MetadataInput(titles=titles[:3], fields=["abstract"]))
    assert site.log == []
    assert set(again.result["records"][0]) == {"record_ref", "title", "abstract"}


async def test_metadata_finds_titles_pasted_with_invisible_or_full_width_characters(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    pasted = [
        title_of(5).replace("责任", "责任\u200b"),  # a zero-width space from a PDF
        title_of(6).replace("研究", "研\u00ad究"),  # a soft hyphen
        title_of(7).replace("007", "００７"),  # full-width digits
    ]
    record = await run_metadata(clock, pipe, MetadataInput(titles=pasted))
    assert record.status == "completed" and record.errors == []
    assert [r["title"] for r in record.result["records"]] == [title_of(5), title_of(6), title_of(7)]
    # the stored papers answer the same spellings again without asking CNKI
    site.log.clear()
    again = await run_metadata(clock, pipe, MetadataInput(titles=pasted, local_only=True))
    assert again.status == "completed" and site.log == []


async def test_metadata_locates_a_title_longer_than_cnkis_120_character_box(
    clock: FakeClock, store: Store
) -> None:
    title = "新时代背景下基于多源异构数据融合与深度学习方法的城市轨道交通客流短时预测模型构建及其在突发公共卫生事件情境中" \
        "的适用性与鲁棒性检验研究——以北京、上海、广州、深圳四个超大城市的地铁线网为例的实证分析与政策启示——兼论超大城市轨道交通网络韧性评估框架的构建与完善"  # fmt: skip
    assert len(title) > 120
    site = CorpusBackend()
    site.corpus.add_record({
        "id": "long1", "db": "CJFD", "filename": "JTYS202306006", "type": "期刊", "title": title,
        "authors": [{"name": "钱七", "institution": "北京交通大学"}], "source": "交通运输系统工程与信息",
        "year": 2023, "date": "2023-06-10", "volume": "23", "issue": "6", "pages": "51-60",
        "abstract": "长题名。", "keywords": ["客流预测"], "cited": 1, "downloads": 5, "classification": "U293",
    })  # fmt: skip
    pipe = make(clock, store, site)  # type: ignore[arg-type]
    record = await run_metadata(clock, pipe, MetadataInput(titles=[title]))
    assert record.status == "completed", record.errors
    assert [r["title"] for r in record.result["records"]] == [title]
    assert site.requests["grid"] == 1


async def test_metadata_reports_missing_and_ambiguous_titles_per_item(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record = await run_metadata(
        clock, pipe, MetadataInput(titles=[title_of(5), "不存在的论文", AMBIGUOUS_TITLE])
    )
    assert record.status == "partial"
    codes = {e.details.get("title"): e.code for e in record.errors}
    assert codes == {"不存在的论文": "DOCUMENT_NOT_FOUND", AMBIGUOUS_TITLE: "IDENTITY_AMBIGUOUS"}
    assert [r["title"] for r in record.result["records"]] == [title_of(5)]
    assert site.count("grid") == 1


async def test_an_ambiguous_metadata_title_names_its_candidates_found_on_cnki_and_stored(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    for local_only in (False, True):  # located on CNKI (rows stored), then the stored twins
        record = await run_metadata(clock, pipe, MetadataInput(titles=[AMBIGUOUS_TITLE], local_only=local_only))
        [error] = record.errors
        assert error.code == "IDENTITY_AMBIGUOUS" and error.details["count"] == 2
        candidates = error.details["candidates"]
        assert [c["filename"] for c in candidates] == ["DUP1", "DUP2"]
        assert [c["authors"] for c in candidates] == [["同名作者1"], ["同名作者2"]]
        for c in candidates:
            stored = store.get(c["record_ref"])
            assert stored is not None and stored.title == AMBIGUOUS_TITLE
    assert site.count("grid") == 1  # the second call found both stored


async def test_a_title_cnki_cannot_be_asked_for_is_its_own_error_and_the_others_are_read(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    # both quote kinds and no stretch of one kind long enough to ask for (lookup_phrase), and no
    # Han character, so no spelling with Chinese quotation marks (links.chinese_marks) either. It
    # was "甲"'乙', whose spelling “甲”'乙' CNKI can be asked for and link_references, read_online_html
    # and download_paper do ask: the test pinned get_metadata refusing a title the others look up
    unsayable = "\"a\"'b'"
    titles = [title_of(1), unsayable, title_of(2)]
    record = await run_metadata(clock, pipe, MetadataInput(titles=titles))
    assert record.status == "partial"
    [error] = record.errors
    assert error.code == "QUERY_UNSUPPORTED" and error.details["title"] == unsayable
    assert error.details["stage"] == "locate" and "path" not in error.details
    assert [r["title"] for r in record.result["records"]] == [title_of(1), title_of(2)]
    lookups = [k for k in site.log if k[:2] == ("grid", "lookup")]
    assert [len(k[2]) for k in lookups] == [2]


async def test_a_title_whose_chinese_marks_spelling_can_be_asked_for_is_looked_up(
    clock: FakeClock, store: Store
) -> None:
    # review 7b #8: get_metadata refused "甲"'乙' (QUERY_UNSUPPORTED) though its spelling “甲”'乙' can
    # be asked for, as link_references does
    site = SimSite(clock)
    pipe = make(clock, store, site)
    record = await run_metadata(clock, pipe, MetadataInput(titles=["\"甲\"'乙'"]))
    assert [e.code for e in record.errors] == ["DOCUMENT_NOT_FOUND"]  # asked, and not on the site
    assert [k for k in site.log if k[:2] == ("grid", "lookup")]


async def test_a_title_holding_both_quote_kinds_is_located_by_its_longest_stretch_of_one_kind(
    clock: FakeClock, store: Store
) -> None:
    # the simulator's corpus has 从"可以用"到'用得好'：大语言模型领域应用评测: no value carries both kinds
    site = CorpusBackend()
    [title] = [r.title for r in site.corpus.records if '"' in r.title and "'" in r.title]
    pipe = make(clock, store, site)  # type: ignore[arg-type]
    record = await run_metadata(clock, pipe, MetadataInput(titles=[title]))
    assert record.status == "completed", record.errors
    assert [r["title"] for r in record.result["records"]] == [title]


async def test_metadata_refresh_refetches_and_local_only_sends_nothing(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    first = await run_metadata(clock, pipe, MetadataInput(titles=[title_of(7)]))
    ref = first.result["records"][0]["record_ref"]
    site.log.clear()
    await run_metadata(clock, pipe, MetadataInput(record_refs=[ref], refresh=True))
    assert site.log == [("detail", 7)]
    site.log.clear()
    local = await run_metadata(clock, pipe, MetadataInput(titles=[title_of(8)], local_only=True))
    assert site.log == [] and local.errors[0].code == "DOCUMENT_NOT_FOUND"


async def test_metadata_by_search_id_and_unknown_refs(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    search = await run_search(clock, pipe, search_input(freshness="live", metadata="basic"))
    site.log.clear()
    record = await run_metadata(
        clock, pipe, MetadataInput(search_id=search.result["search_id"], limit=3, record_refs=["rec_unknown"])
    )
    assert len(record.result["records"]) == 3 and site.count("detail") == 3
    assert [e.code for e in record.errors] == ["DOCUMENT_NOT_FOUND"]


_LAW_GROUPS = [["违约金", "约定违约金", "违约赔偿金"], ["酌减", "调整", "过分高于"]]


async def _corpus_research(clock: FakeClock, store: Store) -> tuple[CorpusBackend, Any]:
    """The live research search of q03's question over the simulator's corpus (its renderers and
    the real parsers), run to its end: the backend (its request counts) and the operation record."""
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    inp = SearchInput(query="违约金过高时法院如何酌减", options=SearchOptions(freshness="live"))

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan_explicit(_LAW_GROUPS), ctx)

    return backend, await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())


async def test_research_search_through_simulator_renderers_and_real_parsers(
    clock: FakeClock, store: Store
) -> None:
    from corpus_backend import record_id_of

    backend, record = await _corpus_research(clock, store)
    result = record.result
    assert result["plan"]["method"] == "explicit"
    assert result["candidate_count"] > 10 and result["selected_count"] > 0
    assert record.requests == sum(backend.requests.values())
    assert result["enhanced_count"] > 0 and result["quality_source_count"] > 0
    ids = [
        record_id_of(p.locator)
        for p in store.papers_by_refs([r["record_ref"] for r in result["results"]]).values()
    ]
    assert "r0001" in ids  # a grade-3 paper of question q03 is selected


@pytest.mark.parametrize("question", ["q02", "q04"])
async def test_corpus_search_with_online_first_papers_and_former_journal_titles_completes_cleanly(
    clock: FakeClock, store: Store, question: str
) -> None:
    # q02 enriches online-first papers (grid CAPJ, detail CJFD/CAPJLAST); q04 a paper whose
    # source is a journal's former title (法律科学(西北政法学院学报)). Neither is an error.
    import json

    from corpus_backend import CorpusBackend

    lines = (Path(__file__).resolve().parents[2] / "cnki_mcp/sim/data/questions.jsonl").read_text("utf-8")
    q = next(json.loads(line) for line in lines.splitlines() if line.strip() and f'"{question}"' in line)
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    inp = SearchInput(
        query=q["question"], concept_groups=q["concepts"], options=SearchOptions(freshness="live")
    )

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan_explicit(q["concepts"]), ctx)

    record = await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())
    assert [e.code for e in record.errors] == []
    assert record.status.value == "completed" and record.result["status"] == "completed"


async def test_a_newspaper_article_s_excerpt_is_the_text_its_relevance_reads(clock: FakeClock, store: Store) -> None:
    # a newspaper has no abstract, its 正文快照 is kept as `excerpt`: the ranking read only the
    # abstract, so a newspaper article was scored as if it had no text beyond its title
    _, record = await _corpus_research(clock, store)
    entries = store.search_results(record.result["search_id"], "all", 0, 1000).items
    papers = store.papers_by_refs([e.record_ref for e in entries])
    news = [e for e in entries if papers[e.record_ref].doc_type == "报纸" and papers[e.record_ref].excerpt]
    assert news and all(papers[e.record_ref].abstract is None for e in news)
    assert all(e.evidence["abstract_match"] > 0 for e in news)
