"""How the search engine runs its requests (DESIGN.md "Retrieval without rounds"), on a fake clock:
channels page independently under the one limiter (a slow channel never holds back a fast one),
the pages fetched and the final ranking do not depend on the order pages arrive in, and a
progress tick writes the page's new rows, not the whole checkpoint."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pipeline_fakes import SimSite, WatchedSegmenter, duplicates

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, OperationContext, OperationKind, OperationRecord, StoreSink
from cnki_mcp.operations import MemorySink
from cnki_mcp.pipeline.models import MetadataInput, SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import REFERENCE_POLICY
from cnki_mcp.pipeline.research import ResearchPipeline, research_channels, search_params
from cnki_mcp.pipeline.state import SearchState
from cnki_mcp.pipeline.units import Unit
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store
from cnki_mcp.store.db import _V_CHECKPOINT_LOG, MIGRATIONS, SCHEMA_VERSION

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])


class PacedSite(SimSite):
    """A SimSite whose grid latency depends on the channel (`slow`: channel -> seconds)."""

    def __init__(self, clock: FakeClock, slow: dict[str, float]) -> None:
        super().__init__(clock)
        self.slow = slow

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
        name, _ = self.channel(request)
        self.latency = self.slow.get(name.split(":")[0], 0.5)
        try:
            return await super().grid(request, op)
        finally:
            self.latency = 0.5


def pipeline(clock: FakeClock, store: Store, site: SimSite) -> ResearchPipeline:
    """Under the reference request policy, whose channel pages and pool these tests pin (the
    default policy's own rules: test_request_policy.py)."""
    return ResearchPipeline(
        site, store, clock, workers=8, now_year=lambda: 2026, page_size=20, policy=REFERENCE_POLICY
    )


async def search(
    clock: FakeClock, pipe: ResearchPipeline, inp: SearchInput, jobs: JobManager
) -> OperationRecord:
    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    return record


def grids(site: SimSite) -> list[tuple[Any, ...]]:
    return [k for k in site.log if k[0] == "grid"]


async def test_a_slow_channel_does_not_hold_back_the_others(clock: FakeClock, store: Store) -> None:
    site = PacedSite(clock, {"q2": 10.0})
    inp = SearchInput(
        query="自动驾驶 产品责任",
        options=SearchOptions(freshness="live", metadata="basic", candidate_target=1000),
        mode="precise",
    )
    record = await search(clock, pipeline(clock, store, site), inp, JobManager(clock, MemorySink()))
    assert record.status == "completed"
    log = grids(site)
    # q1 and q3 read all five pages while q2's second page was still on its way
    assert log.index(("grid", "q1", 5)) < log.index(("grid", "q2", 2))
    assert log.index(("grid", "q3", 5)) < log.index(("grid", "q2", 2))
    assert [c["pages"] for c in record.result["coverage"]] == [5, 5, 5]


async def _ranked_under(tmp_path: Path, name: str, slow: dict[str, float], **options: Any) -> tuple[Any, ...]:
    clock = FakeClock()
    store = Store.open(tmp_path / name, clock)
    try:
        site = PacedSite(clock, slow)
        inp = SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live", **options))
        record = await search(clock, pipeline(clock, store, site), inp, JobManager(clock, MemorySink()))
        assert record.status == "completed", record.errors
        every = store.search_results(record.result["search_id"], "all", 0, 10_000).items
        ranked = [(e.record_ref, e.score, e.selected, e.channels) for e in every]
        return sorted(grids(site)), ranked, record.result["candidate_count"]
    finally:
        store.close()


async def test_pages_fetched_and_ranking_do_not_depend_on_the_order_pages_arrive_in(tmp_path: Path) -> None:
    # candidate_target 100 stops paging part-way: the stop rule must see the same pages in any order
    options = {"candidate_target": 100, "max_pages": 5}
    even = await _ranked_under(tmp_path, "even", {}, **options)
    q1_slow = await _ranked_under(tmp_path, "q1", {"q1": 7.0, "feedback": 0.1}, **options)
    q3_slow = await _ranked_under(tmp_path, "q3", {"q3": 5.0, "q2": 0.2}, **options)
    # two pages of each channel give 100 distinct candidates, then retrieval stops; feedback adds 40
    assert [k for k in even[0] if k[1] in ("q1", "q2", "q3")] == [
        ("grid", q, p) for q in ("q1", "q2", "q3") for p in (1, 2)
    ]
    assert even[2] == 140
    assert q1_slow == even
    assert q3_slow == even


async def test_a_progress_tick_appends_the_page_and_never_rewrites_the_checkpoint(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = Store.open(tmp_path / "data", clock)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        site = SimSite(clock)
        inp = SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live"))
        record = await search(clock, pipeline(clock, store, site), inp, JobManager(clock, StoreSink(store)))
        assert record.status == "completed"
        pages = len(grids(site))
        appended = [s for s in statements if s.startswith("INSERT INTO operation_log")]
        full = [s for s in statements if s.startswith("INSERT OR REPLACE INTO operations")]
        # one appended entry per page, each holding that page's rows only (20 refs of 24 hex digits)
        assert len(appended) == pages == 17
        assert max(len(s.encode()) for s in appended) < 2_500
        # whole checkpoints only at the start and at the five phase ends, never per page or detail
        assert len(full) == 7
        # the stored checkpoint (last full one + appended pages) rebuilds the state the search ended with
        stored = store.load_operation(record.operation_id)
        assert stored is not None and stored.checkpoint is not None
        st = SearchState.from_json(stored.checkpoint)
        assert st.finished and len(st.refs) == record.result["candidate_count"] == 200
    finally:
        store._conn.set_trace_callback(None)
        store.close()


class StoreWatchingSite(SimSite):
    """Records, for each grid page asked, how many pages of its channel were stored by then."""

    def __init__(self, clock: FakeClock, store: Store) -> None:
        super().__init__(clock)
        self.store = store
        self.stored_before: dict[tuple[str, int], int] = {}

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
        name, _ = self.channel(request)
        rows = self.store._conn.execute("SELECT entry FROM operation_log").fetchall()
        self.stored_before[(name, request.page)] = sum(1 for (entry,) in rows if f'"ch": "{name}"' in entry)
        return await super().grid(request, op)


async def test_a_channels_next_page_is_asked_before_the_page_just_answered_is_stored(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = Store.open(tmp_path / "data", clock)
    try:
        site = StoreWatchingSite(clock, store)
        inp = SearchInput(
            query="自动驾驶 产品责任",
            options=SearchOptions(freshness="live", metadata="basic", candidate_target=1000),
        )
        record = await search(clock, pipeline(clock, store, site), inp, JobManager(clock, StoreSink(store)))
        assert record.status == "completed"
        assert [c["pages"] for c in record.result["coverage"][:3]] == [5, 5, 5]  # max_pages, once each
        assert duplicates(site.log) == []
        # the stop rule goes on whatever page p holds (1,000 is out of reach), so page p + 1 is asked
        # as soon as page p is answered, while page p is still being stored
        for q in ("q1", "q2", "q3"):
            assert [site.stored_before[(q, p)] for p in range(2, 6)] == [0, 1, 2, 3], q
    finally:
        store.close()


class OrderSite(SimSite):
    """Records when each grid call starts and returns; `heads`: pass the engine's `follow` on (the
    page's head goes to the engine before the call returns, as CnkiSite does) or drop it."""

    def __init__(self, clock: FakeClock, *, heads: bool) -> None:
        super().__init__(clock)
        self.heads = heads
        self.order: list[tuple[str, str, int]] = []

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
        name, _ = self.channel(request)
        self.order.append(("start", name, request.page))
        page = await super().grid(request, op, follow if self.heads else None)
        self.order.append(("return", name, request.page))
        return page


async def test_a_channels_next_page_is_asked_on_the_head_of_the_page_before_its_rows_are_returned(
    tmp_path: Path,
) -> None:
    inp = SearchInput(
        query="自动驾驶 产品责任",
        options=SearchOptions(freshness="live", metadata="basic", candidate_target=1000),
    )
    runs: dict[bool, OrderSite] = {}
    for heads in (True, False):
        clock = FakeClock()
        store = Store.open(tmp_path / f"data-{heads}", clock)
        try:
            site = runs[heads] = OrderSite(clock, heads=heads)
            record = await search(clock, pipeline(clock, store, site), inp, JobManager(clock, MemorySink()))
            assert record.status == "completed"
        finally:
            store.close()
    for q in ("q1", "q2", "q3"):
        for p in range(1, 5):
            asked, answered = runs[True].order.index(("start", q, p + 1)), runs[True].order.index(("return", q, p))
            assert asked < answered, (q, p)  # on the head
            asked, answered = runs[False].order.index(("start", q, p + 1)), runs[False].order.index(("return", q, p))
            assert asked > answered, (q, p)  # on the parsed page
    assert sorted(runs[True].log) == sorted(runs[False].log)  # the same requests either way
    assert duplicates(runs[True].log) == []


def test_a_store_of_the_previous_schema_gains_the_checkpoint_log(tmp_path: Path, clock: FakeClock) -> None:
    with Store.open(tmp_path / "data", clock) as store:
        at = clock.now()
        store.save_operation(
            "op_a", "search", "interrupted", {"status": "interrupted"}, {"refs": ["r1"]}, at, at
        )
    before = MIGRATIONS.index(_V_CHECKPOINT_LOG)
    with sqlite3.connect(tmp_path / "data" / "cnki.sqlite3") as conn:
        conn.execute("DROP TABLE operation_log")
        conn.execute(f"PRAGMA user_version = {before}")
    with Store.open(tmp_path / "data", clock) as store:
        assert store.notices == []
        stored = store.load_operation("op_a")
        assert stored is not None and stored.checkpoint == {"refs": ["r1"]}
        store.append_checkpoint("op_a", {"e": "page", "n": 1})
        store.append_checkpoint("op_a", {"e": "page", "n": 2})
        again = store.load_operation("op_a")
        assert again is not None
        assert again.checkpoint == {"refs": ["r1"], "log": [{"e": "page", "n": 1}, {"e": "page", "n": 2}]}
        store.save_operation("op_a", "search", "interrupted", {}, {"refs": ["r2"]}, at, at)
        replaced = store.load_operation("op_a")
        assert replaced is not None and replaced.checkpoint == {"refs": ["r2"]}  # a full one drops the log
    with sqlite3.connect(tmp_path / "data" / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_the_result_says_which_papers_were_read_and_the_call_that_reads_the_rest(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock)
    pipe = pipeline(clock, store, site)
    inp = SearchInput(
        query="自动驾驶 产品责任", options=SearchOptions(freshness="live"), mode="precise", limit=100
    )
    record = await search(clock, pipe, inp, JobManager(clock, MemorySink()))
    result = record.result
    read = [r for r in result["results"] if r["detail_read"]]
    unread = [r for r in result["results"] if not r["detail_read"]]
    assert len(read) + len(unread) == result["selected_count"] == 100
    assert read and unread  # the pool (60 of 160 candidates) was read, the rest of the selection not
    assert all(r["quality_known"] and r["tiers"] == ["CSSCI"] for r in read)
    more = result["enrich_more"]
    assert more["count"] == len(unread)
    call = more["suggested_call"]
    assert call["tool"] == "get_metadata" and call["arguments"]["quality"] is True
    assert call["arguments"]["record_refs"] == [r["record_ref"] for r in unread]

    # the suggested call reads exactly those papers; afterwards nothing is left to suggest
    site.log.clear()
    job = JobManager(clock, MemorySink()).start(
        OperationKind.METADATA, lambda ctx: pipe.metadata(MetadataInput(**call["arguments"]), ctx)
    )
    [done] = await clock.run_until_complete(job.finish())
    assert done.status == "completed" and site.count("detail") == len(unread) and site.count("journal") == 0
    cached = pipe.cached(inp.model_copy(update={"options": SearchOptions()}), PLAN)
    assert cached is not None and cached.enrich_more is None
    assert all(r.detail_read and r.quality_known for r in cached.results)


class MixedSite(SimSite):
    """Detail pages of even papers show an off-topic abstract and keywords: reading them moves
    those papers down, so the next search's pool takes in papers it did not read before."""

    async def detail(self, locator: str, op: SiteOp | None = None) -> Any:
        page = await super().detail(locator, op)
        if int(locator.rsplit("=", 1)[1]) % 2 == 0:
            return page.model_copy(
                update={"abstract": "城市园林植物的养护管理", "keywords": ["园林", "养护"]}
            )
        return page


async def test_a_live_repeat_reads_no_detail_page_that_is_still_fresh(clock: FakeClock, store: Store) -> None:
    site = MixedSite(clock)
    pipe = pipeline(clock, store, site)
    inp = SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live"), mode="precise")
    first = await search(clock, pipe, inp, JobManager(clock, MemorySink()))
    read_first = {k for k in site.log if k[0] == "detail"}
    site.log.clear()
    second = await search(clock, pipe, inp, JobManager(clock, MemorySink()))
    read_second = {k for k in site.log if k[0] == "detail"}
    assert first.status == second.status == "completed"
    # The repeat ranks with what the first search read, so papers it never read enter the detail
    # pool and are read now (the "5-18 detail pages" on a live repeat); no detail page
    # the first search read (fresh for 30 days) is fetched again.
    assert read_second and not read_second & read_first
    assert site.count("journal") == 0


async def test_a_checkpoint_with_pages_landed_in_a_round_resumes_without_asking_for_them(
    clock: FakeClock, store: Store
) -> None:
    """Checkpoints written while retrieval ran in rounds may hold answered pages of the round in
    progress (`landed`); continuing such a search merges them and never asks for them again."""
    site = SimSite(clock)
    pipe = pipeline(clock, store, site)
    inp = SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live"), mode="precise")
    channels = research_channels(PLAN.groups)
    st = pipe._state(
        "op_legacy", search_params(inp), {"method": "explicit", "concepts": PLAN.groups}, channels
    )
    [landed] = await clock.run_until_complete(site.grid(pipe.engine._request(st, Unit(channels[0]), 1)))
    st.landed = {"q1": {"page": 1, "grid": landed.model_dump(mode="json")}}
    site.log.clear()

    async def runner(ctx: OperationContext) -> Any:
        ctx.checkpoint(st.to_json())
        return await pipe.engine.run(st, ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    assert record.status == "completed"
    assert ("grid", "q1", 1) not in site.log and ("grid", "q1", 2) in site.log
    assert [c["pages"] for c in record.result["coverage"]] == [5, 5, 5]
    assert record.result["candidate_count"] == 160


async def test_the_suggested_call_reads_the_rest_by_batch_export_when_the_rows_carry_export_ids(
    clock: FakeClock, store: Store
) -> None:
    site = SimSite(clock, exports=True)
    pipe = pipeline(clock, store, site)
    inp = SearchInput(
        query="自动驾驶 产品责任", options=SearchOptions(freshness="live"), mode="precise", limit=100
    )
    record = await search(clock, pipe, inp, JobManager(clock, MemorySink()))
    result = record.result
    unread = [r for r in result["results"] if not r["abstract_read"]]
    assert unread and result["enrich_more"]["count"] >= len(unread)
    call = result["enrich_more"]["suggested_call"]
    assert call["arguments"]["fields"] == ["abstract", "keywords", "quality"]

    site.log.clear()
    job = JobManager(clock, MemorySink()).start(
        OperationKind.METADATA, lambda ctx: pipe.metadata(MetadataInput(**call["arguments"]), ctx)
    )
    [done] = await clock.run_until_complete(job.finish())
    refs = call["arguments"]["record_refs"]
    assert done.status == "completed" and site.count("detail") == 0
    assert 0 < site.count("export") <= -(-len(refs) // 20)  # 20 papers a request
    cached = pipe.cached(inp.model_copy(update={"options": SearchOptions()}), PLAN)
    assert cached is not None and cached.enrich_more is None
    assert all(r.abstract_read and r.quality_known for r in cached.results)


async def test_a_one_concept_search_loads_the_segmenter_dictionary_in_a_worker_thread(
    clock: FakeClock, store: Store
) -> None:
    """DESIGN.md "Ranking cost": the advice at the end of a one-concept search cuts the query; the
    dictionary load is handed to a worker thread when the search starts, not left to the event loop
    after the last request. (On a fake clock the search may end before that thread has run.)"""
    segmenter = WatchedSegmenter()
    pipe = ResearchPipeline(
        SimSite(clock), store, clock, workers=8, now_year=lambda: 2026, page_size=20, segmenter=segmenter
    )
    inp = SearchInput(query="自动驾驶", options=SearchOptions(freshness="live", metadata="basic"))

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan_explicit([["自动驾驶"]]), ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    assert record.status == "completed", record.errors
    assert segmenter.warmed.wait(30)  # bounded: the worker thread's load ends
    assert segmenter.loaded
    assert (
        segmenter.warmed_in == [segmenter.warmed_in[0]]
        and segmenter.warmed_in[0] != threading.main_thread().name
    )


async def test_a_search_of_several_concepts_never_loads_the_segmenter_dictionary(
    clock: FakeClock, store: Store
) -> None:
    """Nothing cuts a search of two or more concept groups, so its dictionary load (~1 s of CPU
    in a worker thread, slowing the event loop while the first pages come) is not started."""
    class Recording(ThreadPoolExecutor):
        """The loop's default executor, noting what is handed to it, at the moment it is."""

        def __init__(self) -> None:
            super().__init__(max_workers=2)
            self.handed: list[str] = []

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            self.handed.append(getattr(fn, "__qualname__", repr(fn)))
            return super().submit(fn, *args, **kwargs)

    executor = Recording()
    asyncio.get_running_loop().set_default_executor(executor)
    segmenter = WatchedSegmenter()
    pipe = ResearchPipeline(
        SimSite(clock), store, clock, workers=8, now_year=lambda: 2026, page_size=20, segmenter=segmenter
    )
    inp = SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live", metadata="basic"))
    record = await search(clock, pipe, inp, JobManager(clock, MemorySink()))
    assert record.status == "completed", record.errors
    assert len(PLAN.groups) == 2 and record.result is not None
    assert not [name for name in executor.handed if "warm" in name]  # no dictionary load handed over
    assert segmenter.warmed_in == [] and not segmenter.loaded
