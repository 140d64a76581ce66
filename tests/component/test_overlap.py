"""Enrichment beside retrieval (pipeline/overlap.py, DESIGN.md "Enrichment beside retrieval") on a
fake clock: under the default policy the enrichment steps, then the feedback pages, start while
the subject channel's last pages are fetched, on a snapshot of the pages landed, and the requests
sent, the ranking and a search continued after a cut anywhere are the same whatever order pages
arrive in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from pipeline_fakes import SimSite, duplicates, ranking

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.operations import CHECKPOINT_LOG
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.overlap import paced_depth, remaining_levels, snapshot_reads
from cnki_mcp.pipeline.policy import DEFAULT_POLICY, SearchPolicy
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.state import FEEDBACK, RETRIEVAL, Channel, SearchState, depth_event, page_event
from cnki_mcp.pipeline.units import coverage
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import GridRequest, Pacing, PacingSource, SiteOp
from cnki_mcp.store import Store

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])
PAGE_SIZE = 20
# q1 lists 600 papers (30 pages); the title and keyword channels add 40 on their first pages, so
# 400 candidates take 20 pages of q1 and the steps start once at most 16 levels are certain to remain
OPTIONS = {"candidate_target": 400, "max_pages": 40}


class LongSite(SimSite):
    """A subject channel of 600 papers, rows with export ids; `slow`: channel -> grid latency. The
    papers from 200 on (q1's pages 11-30) are much cited, so once listed they rank near the top: a
    step that decided on pages landed after its snapshot would read other papers."""

    def __init__(self, clock: FakeClock, slow: dict[str, float] | None = None, size: int = 600) -> None:
        super().__init__(clock, exports=True)
        self.slow = slow or {}
        self.size = size
        self.sent: list[tuple[tuple[Any, ...], float]] = []

    def channel(self, request: GridRequest) -> tuple[str, list[int]]:
        name, papers = super().channel(request)
        return (name, list(range(self.size))) if name == "q1" else (name, papers)

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
        name, _ = self.channel(request)
        self.latency = self.slow.get(name.split(":")[0], 0.5)
        try:
            page = await super().grid(request, op)
        finally:
            self.latency = 0.5
        rows = [r.model_copy(update={"cited": 500}) if int(r.title[-3:]) >= 200 else r for r in page.rows]
        return page.model_copy(update={"rows": rows})

    async def _call(self, op: SiteOp | None, key: tuple[Any, ...]) -> None:
        self.sent.append((key, self.clock.monotonic()))
        await super()._call(op, key)


async def search(
    clock: FakeClock,
    site: SimSite,
    store: Store,
    policy: SearchPolicy,
    jobs: JobManager,
    inp: SearchInput,
    *,
    pacing: PacingSource = lambda: None,
) -> OperationRecord:
    pipe = ResearchPipeline(
        site, store, clock, workers=8, now_year=lambda: 2026, page_size=PAGE_SIZE, policy=policy, pacing=pacing
    )

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    return record


async def cut_and_continue(
    directory: Path,
    inp: SearchInput,
    *,
    pacing: PacingSource = lambda: None,
    resumed_pacing: PacingSource | None = None,
    policy: SearchPolicy = DEFAULT_POLICY,
) -> tuple[LongSite, OperationRecord]:
    """A search under `policy` stopped by `inp`'s request budget, then continued (`continue_`) by
    the default with more, meeting `pacing` (the continued one `resumed_pacing`, by default the
    same): the site that saw both and the continued operation's record."""
    clock = FakeClock()
    site = LongSite(clock)
    store = Store.open(directory, clock)
    try:
        jobs = JobManager(clock, MemorySink())
        stopped = await search(clock, site, store, policy, jobs, inp, pacing=pacing)
        assert stopped.status == "partial" and stopped.errors[0].code == "BUDGET_EXHAUSTED"
        pipe = ResearchPipeline(
            site,
            store,
            clock,
            workers=8,
            now_year=lambda: 2026,
            page_size=PAGE_SIZE,
            policy=DEFAULT_POLICY,
            pacing=pacing if resumed_pacing is None else resumed_pacing,
        )

        async def runner(ctx: OperationContext) -> Any:
            return await pipe.research(inp, PLAN, ctx)

        job = jobs.continue_(stopped.operation_id, runner, additional_requests=1_000)
        [done] = await clock.run_until_complete(job.finish())
        return site, done
    finally:
        store.close()


async def assert_cuts_continue_like_whole(
    directory: Path,
    cuts: Iterable[int],
    budget: Callable[[int], SearchInput],
    whole_site: LongSite,
    whole: OperationRecord,
    *,
    pacing: PacingSource = lambda: None,
    resumed_pacing: PacingSource | None = None,
    policy: SearchPolicy = DEFAULT_POLICY,
) -> None:
    """A search stopped after each of `cuts` requests (`budget(cut)`) and continued completes with
    the uninterrupted search's requests, none asked twice, and its selection."""
    for cut in cuts:
        site, done = await cut_and_continue(
            directory / f"cut{cut}", budget(cut), pacing=pacing, resumed_pacing=resumed_pacing, policy=policy
        )
        assert done.status == "completed", (cut, done.errors)
        assert duplicates(site.log) == [], cut
        assert sorted(site.log) == sorted(whole_site.log), cut
        assert done.result["selected_count"] == whole.result["selected_count"], cut


async def assert_paced_like_even(run: Callable[..., Awaitable[Any]], tmp_path: Path, slow: dict[str, float]) -> None:
    """`run` with some channels slowed (`slow`: channel -> seconds a page) sends the same requests
    as with even pacing, its reads in the same sequence, and ranks the same."""
    even_site, _, even = await run(tmp_path, "even")
    site, _, ranked = await run(tmp_path, "paced", slow=slow)
    assert sorted(k for k, _ in site.sent) == sorted(k for k, _ in even_site.sent)
    assert [k for k, _ in site.sent if k[0] != "grid"] == [k for k, _ in even_site.sent if k[0] != "grid"]
    assert ranked == even


def live(**options: Any) -> SearchInput:
    return SearchInput(
        query="自动驾驶 产品责任", options=SearchOptions(freshness="live", **OPTIONS, **options)
    )


async def run(
    tmp_path: Path,
    name: str,
    policy: SearchPolicy = DEFAULT_POLICY,
    slow: dict[str, float] | None = None,
    size: int = 600,
    pacing: PacingSource = lambda: None,
) -> tuple[LongSite, OperationRecord, list[tuple[str, bool]]]:
    clock = FakeClock()
    site = LongSite(clock, slow, size)
    store = Store.open(tmp_path / name, clock)
    try:
        record = await search(clock, site, store, policy, JobManager(clock, MemorySink()), live(), pacing=pacing)
        assert record.status == "completed", record.errors
        return site, record, ranking(store, record)
    finally:
        store.close()


def test_remaining_levels_is_the_fewest_levels_the_stop_rule_can_still_fetch() -> None:
    assert remaining_levels(400, 100, 1, 20, 30) == 15  # 300 more candidates, 20 a page at most
    assert remaining_levels(400, 390, 1, 20, 30) == 1
    assert remaining_levels(400, 100, 3, 20, 30) == 5  # three open channels add 60 a level
    assert remaining_levels(400, 100, 1, 20, 4) == 4  # the page limit comes first
    assert remaining_levels(400, 400, 1, 20, 30) == 0  # the target is reached: no page after
    assert remaining_levels(400, 100, 0, 20, 30) == 0  # nothing open


def test_a_paper_a_feedback_page_listed_first_is_a_retrieval_candidate_once_a_retrieval_page_lists_it() -> (
    None
):
    q1 = Channel("q1", "subject", 1.0, "r", {}, "a", "f1")
    feedback = Channel("feedback1", "subject", 0.8, "r", {}, "a", "f2")
    plan = {"method": "explicit", "channels": [q1.to_dict()]}
    st = SearchState("s", "k", {"candidate_target": 10}, plan, coverage=[coverage(q1), coverage(feedback)])
    st.apply(page_event(feedback, 0, 0, FEEDBACK, 1, [(0, "a"), (1, "b")], 2, 2, True, None))
    assert st.feedback_refs == ["a", "b"] and st.candidates_through(1) == 0
    st.apply(page_event(q1, 0, 0, RETRIEVAL, 3, [(0, "c"), (1, "b")], 2, 9, False, "t"))
    # the order and the stage do not depend on which page landed first
    assert st.refs == ["c", "b", "a"] and st.feedback_refs == ["a"] and st.candidates_through(3) == 2
    st.feedback_beside = True  # asked beside retrieval: kept by the checkpoint
    again = SearchState.from_json(st.to_json())
    assert again.feedback_beside and again.feedback_refs == ["a"] and again.refs == st.refs


async def test_the_steps_start_while_the_last_pages_are_fetched_and_settle_the_same_top(
    tmp_path: Path,
) -> None:
    site, record, ranked = await run(tmp_path, "overlap")
    after, after_record, after_ranked = await run(
        tmp_path, "after", DEFAULT_POLICY.without("enrichment_start")
    )
    pages = [t for key, t in site.sent if key[:2] == ("grid", "q1")]
    assert len(pages) == 20 and record.result["candidate_count"] == after_record.result["candidate_count"]
    first_export = next(t for key, t in site.sent if key[0] == "export")
    # the snapshot is level 3, the first after which at most 16 levels are certain to come (the
    # title and keyword pages found 40; then 340, 330, 320 more candidates at 20 a page): its
    # export goes out with 17 of q1's pages still to come
    assert sum(1 for t in pages if t >= first_export) == 17
    after_pages = [t for key, t in after.sent if key[:2] == ("grid", "q1")]
    assert min(t for key, t in after.sent if key[0] == "export") > max(after_pages)
    # the feedback pages, from the snapshot's settled top, go out beside the last pages too
    feedback = [t for key, t in site.sent if key[0] == "grid" and key[1].startswith("feedback")]
    assert len(feedback) == 2 and max(feedback) < max(pages)
    after_feedback = [t for key, t in after.sent if key[0] == "grid" and key[1].startswith("feedback")]
    assert min(after_feedback) > max(after_pages)
    assert sorted(k for k, _ in site.sent if k[0] == "grid") == sorted(
        k for k, _ in after.sent if k[0] == "grid"
    )
    assert site.clock.monotonic() < after.clock.monotonic()  # the search ends sooner
    # a second snapshot two levels before the end reads what the pages since brought, so nothing
    # is left to read once the last page is in; without it the steps after retrieval read it
    assert max(t for key, t in site.sent if key[0] != "grid") <= max(pages)
    unclosed, unclosed_record, unclosed_ranked = await run(
        tmp_path, "unclosed", DEFAULT_POLICY.without("closing_pages")
    )
    unclosed_pages = [t for key, t in unclosed.sent if key[:2] == ("grid", "q1")]
    assert max(t for key, t in unclosed.sent if key[0] == "export") > max(unclosed_pages)
    assert unclosed_record.requests == record.requests
    assert [r for r, selected in unclosed_ranked if selected][:10] == [
        r for r, selected in ranked if selected
    ][:10]
    # the steps after retrieval settle the watched top over every candidate either way
    top = [r for r, selected in ranked if selected][:10]
    assert top == [r for r, selected in after_ranked if selected][:10]
    assert all(r["abstract_read"] and r["quality_known"] for r in record.result["results"][:10])


async def test_feedback_waits_for_the_end_when_the_subject_channel_could_run_out_first(
    tmp_path: Path,
) -> None:
    # 430 papers: fewer than the target and two pages, so q1 might list them all before 400
    # candidates are seen, and an exhausted q1 answers the feedback channels locally
    site, record, _ = await run(tmp_path, "short", size=430)
    pages = [t for key, t in site.sent if key[:2] == ("grid", "q1")]
    first_export = next(t for key, t in site.sent if key[0] == "export")
    assert first_export < max(pages)  # the steps still ran beside the last pages
    feedback = [t for key, t in site.sent if key[0] == "grid" and key[1].startswith("feedback")]
    assert feedback and min(feedback) > max(pages)
    assert record.status == "completed"


@pytest.mark.parametrize(
    "slow", [{"q1": 3.0}, {"q1": 0.05, "feedback": 4.0}, {"q2": 3.0, "q3": 2.0}, {"feedback": 0.05}]
)
async def test_requests_and_ranking_do_not_depend_on_the_order_pages_arrive_in(
    tmp_path: Path, slow: dict[str, float]
) -> None:
    # the enrichment's decisions come in the same sequence: each step saw the same snapshot
    await assert_paced_like_even(run, tmp_path, slow)


async def test_a_search_cut_anywhere_continues_without_repeating_a_request(tmp_path: Path) -> None:
    whole_site, whole, _ = await run(tmp_path, "whole")
    log = [k for k, _ in whole_site.sent]
    first_export = next(i for i, k in enumerate(log) if k[0] == "export")
    last_page = max(i for i, k in enumerate(log) if k[:2] == ("grid", "q1"))
    assert first_export < last_page  # the cuts below fall inside the overlap too
    await assert_cuts_continue_like_whole(
        tmp_path, range(4, len(log), 3), lambda cut: live(max_requests=cut), whole_site, whole
    )


# the snapshot's steps meet a limiter that starts a request every 0.5 s and pages of 0.5 s
SLOW_LIMITER = Pacing(0.5, 0.5)
# the growth benchmark's pacing, where the fixed 16 levels were measured (16 hold 40 reads)
GROWTH_PACING = Pacing(0.2, 0.7)


def test_the_paced_depth_grows_as_fewer_reads_fit_beside_a_page() -> None:
    assert paced_depth(16, None) == 16  # no page timed yet: the measured depth
    assert paced_depth(16, GROWTH_PACING) == 16
    assert paced_depth(16, Pacing(0.2, 1.5)) == 16  # slower pages hold more reads: never shallower
    assert paced_depth(16, Pacing(0.3, 0.7)) == 24  # 1.33 reads a level: 32 reads need 24
    assert paced_depth(16, Pacing(0.5, 1.5)) == 16  # 2 reads a level: 16 levels hold the 32
    assert paced_depth(16, Pacing(0.5, 0.7)) == 32  # one read stretches a page: at most twice as deep
    assert paced_depth(16, Pacing(0.0, 0.7)) == 16  # no spacing


def test_the_reads_a_snapshot_is_sized_for_grow_with_the_unread_journals_of_its_top() -> None:
    assert snapshot_reads(0) == snapshot_reads(10) == 32  # never fewer than counted on `main`
    assert snapshot_reads(25) == 75  # 3 a source: the `diverse` growth question at its first level
    assert paced_depth(16, GROWTH_PACING, 75) == 30  # 2.5 reads a level
    assert paced_depth(16, Pacing(0.5, 0.7), 62) == 62  # one read a level
    assert paced_depth(16, Pacing(0.5, 0.7), 200) == 64  # at most four times as deep
    assert paced_depth(16, None, 200) == 16  # no page timed: the measured depth


async def test_a_slower_pacing_takes_the_snapshot_deeper_with_the_same_pages_and_top(tmp_path: Path) -> None:
    site, record, ranked = await run(tmp_path, "paced", pacing=lambda: SLOW_LIMITER)
    fixed, _, fixed_ranked = await run(
        tmp_path, "fixed", DEFAULT_POLICY.without("overlap_depth"), pacing=lambda: SLOW_LIMITER
    )

    def pages_after_first_export(s: LongSite) -> int:
        first_export = next(t for key, t in s.sent if key[0] == "export")
        return sum(1 for key, t in s.sent if key[:2] == ("grid", "q1") and t >= first_export)

    # 45 levels at this pacing (the site's 15 journals, unread, 3 reads each; 32 under the fixed
    # reads): the snapshot is the first level (17 levels certain to come), one
    # level before the fixed depth's (16 to come, as at the reference pacing); its export goes out
    # beside q1's page 3 (asked once page 2 answered) instead of page 4
    assert pages_after_first_export(site) == 18 and pages_after_first_export(fixed) == 17
    assert sorted(k for k, _ in site.sent if k[0] == "grid") == sorted(k for k, _ in fixed.sent if k[0] == "grid")
    assert [r for r, selected in ranked if selected][:10] == [r for r, selected in fixed_ranked if selected][:10]
    assert all(r["abstract_read"] and r["quality_known"] for r in record.result["results"][:10])
    # at the reference pacing the depth sized for 32 reads is the fixed one
    reference, _, _ = await run(
        tmp_path, "reference", DEFAULT_POLICY.without("snapshot_reads"), pacing=lambda: GROWTH_PACING
    )
    assert pages_after_first_export(reference) == 17


async def assert_cuts_in_the_steps_continue_like_whole(
    tmp_path: Path,
    *,
    every: int,
    policy: SearchPolicy = DEFAULT_POLICY,
    pacing: PacingSource = lambda: None,
    resumed_pacing: PacingSource | None = None,
) -> tuple[LongSite, OperationRecord]:
    """The search under `policy` meeting `pacing` cut every `every` requests from its first export
    on, each continued by the default meeting `resumed_pacing`, sends the uninterrupted search's
    requests (`assert_cuts_continue_like_whole`); returns the uninterrupted search."""
    whole_site, whole, _ = await run(tmp_path, "whole", policy, pacing=pacing)
    log = [k for k, _ in whole_site.sent]
    first_export = next(i for i, k in enumerate(log) if k[0] == "export")
    await assert_cuts_continue_like_whole(
        tmp_path,
        range(first_export + 1, len(log), every),
        lambda cut: live(max_requests=cut),
        whole_site,
        whole,
        pacing=pacing,
        resumed_pacing=resumed_pacing,
        policy=policy,
    )
    return whole_site, whole


async def test_a_resumed_search_keeps_the_depth_it_decided_whatever_pacing_it_meets(tmp_path: Path) -> None:
    # cut inside the snapshot's steps and after; the continued process has timed no page yet
    whole_site, whole = await assert_cuts_in_the_steps_continue_like_whole(
        tmp_path, every=6, pacing=lambda: SLOW_LIMITER, resumed_pacing=lambda: None
    )
    # and a search cut before it decided takes the depth of the pacing it meets then
    await assert_cuts_continue_like_whole(
        tmp_path / "early", [1], lambda cut: live(max_requests=cut), whole_site, whole, pacing=lambda: None,
        resumed_pacing=lambda: SLOW_LIMITER,
    )


def test_the_decided_depth_is_kept_by_the_checkpoint() -> None:
    q1 = Channel("q1", "subject", 1.0, "r", {}, "a", "f1")
    st = SearchState("s", "k", {"candidate_target": 10}, {"method": "explicit", "channels": [q1.to_dict()]})
    assert st.overlap_depth == 0
    st.apply(depth_event(32))
    assert SearchState.from_json(st.to_json()).overlap_depth == 32
    logged = {**SearchState("s", "k", {}, st.plan).to_json(), CHECKPOINT_LOG: [depth_event(20)]}
    assert SearchState.from_json(logged).overlap_depth == 20  # replayed from the appended events


async def test_the_production_search_meets_the_pacing_of_the_one_limiter(tmp_path: Path) -> None:
    from cnki_mcp.services import Services
    from cnki_mcp.settings import Settings

    settings = Settings(data_dir=tmp_path / "data")
    services = Services.open(settings, backend=LongSite(FakeClock()))
    try:
        assert services.pipeline.engine.pacing() is None  # no grid page answered yet
        services.limiter.note_latency(0.7)
        interval = settings.request_interval_ms / 1000.0
        assert services.pipeline.engine.pacing() == services.limiter.pacing() == Pacing(interval, 0.7)
    finally:
        await services.close()


async def test_the_decided_depth_is_appended_to_the_checkpoint_before_any_step_reads(tmp_path: Path) -> None:
    clock = FakeClock()
    site = LongSite(clock)
    appended: list[tuple[Any, int]] = []  # (entry, exports sent when it was appended)

    class Recording(MemorySink):
        def append_checkpoint(self, operation_id: str, entry: Any) -> None:
            appended.append((entry, sum(1 for key, _ in site.sent if key[0] == "export")))
            super().append_checkpoint(operation_id, entry)

    store = Store.open(tmp_path / "s", clock)
    try:
        jobs = JobManager(clock, Recording())
        record = await search(clock, site, store, DEFAULT_POLICY, jobs, live(), pacing=lambda: SLOW_LIMITER)
    finally:
        store.close()
    assert record.status == "completed"
    # a crash after a step's first read finds the depth in the log, without a full checkpoint; the
    # first level's top holds the site's 15 journals, unread: 45 reads, one a level at this pacing
    assert [(e["levels"], e["reads"], exports) for e, exports in appended if e.get("e") == "depth"] == [(45, 45, 0)]


async def paced_run(
    tmp_path: Path, pacing: Callable[[FakeClock], Pacing | None], *, size: int, target: int
) -> LongSite:
    """A default search over a q1 of `size` papers for `target` candidates, meeting `pacing(clock)`."""
    clock = FakeClock()
    site = LongSite(clock, size=size)
    store = Store.open(tmp_path / f"{size}-{target}", clock)
    options = SearchOptions(freshness="live", candidate_target=target, max_pages=100)
    inp = SearchInput(query="自动驾驶 产品责任", options=options)
    jobs = JobManager(clock, MemorySink())
    try:
        record = await search(clock, site, store, DEFAULT_POLICY, jobs, inp, pacing=lambda: pacing(clock))
    finally:
        store.close()
    assert record.status == "completed", record.errors
    return site


def q1_pages_after_first_export(site: LongSite) -> int:
    first_export = next(t for key, t in site.sent if key[0] == "export")
    return sum(1 for key, t in site.sent if key[:2] == ("grid", "q1") and t > first_export)


async def test_a_retrieval_certain_of_fewer_than_eight_levels_stays_out_of_the_overlap_at_any_pacing(
    tmp_path: Path,
) -> None:
    # 260 candidates: 10 levels certain after the first (60 seen, 20 more a page); the half rule
    # counts from the fixed 16, so a slower pacing still overlaps them, and 120 (3 levels) never
    slow = await paced_run(tmp_path, lambda _: SLOW_LIMITER, size=600, target=260)
    assert q1_pages_after_first_export(slow) >= 9
    short = await paced_run(tmp_path, lambda _: SLOW_LIMITER, size=600, target=120)
    assert q1_pages_after_first_export(short) == 0


async def test_the_depth_waits_for_a_timed_page_while_more_than_32_levels_remain(tmp_path: Path) -> None:
    # 1,000 candidates over a q1 of 1,200: 47 levels certain after the first. The pacing is known
    # only 2 s in (level 4, 46 to come): a decision taken at the first level would fall back to 16
    # (15 pages after the first export), one taken at 32 to come would give 32 (31); at level 4
    # the 15 unread journals give 45 reads, one a level, so the snapshot is level 5 (45 to come;
    # the first export goes out beside the next page, 44 after it)
    def pacing(clock: FakeClock) -> Pacing | None:
        return SLOW_LIMITER if clock.monotonic() >= FakeClock().monotonic() + 2.0 else None

    site = await paced_run(tmp_path, pacing, size=1200, target=1000)
    assert q1_pages_after_first_export(site) == 44


async def test_a_search_checkpointed_under_the_fixed_depth_continues_with_its_snapshot(tmp_path: Path) -> None:
    # a checkpoint written before the paced depth (or under OverlapDepth.FIXED) has no depth:
    # once its steps began, the continued default keeps the fixed snapshot, whatever pacing it meets
    await assert_cuts_in_the_steps_continue_like_whole(
        tmp_path, every=4, policy=DEFAULT_POLICY.without("overlap_depth"), resumed_pacing=lambda: SLOW_LIMITER
    )


class ManyJournals(LongSite):
    """LongSite with paper i in journal i % `journals` (the fake's own rows use 15); the papers in
    `hot` much cited."""

    def __init__(self, clock: FakeClock, journals: int, hot: range = range(0)) -> None:
        super().__init__(clock)
        self.journals = journals
        self.hot = hot

    def _source(self, title: str) -> str:
        return f"期刊{int(title[-3:]) % self.journals}"

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
        page = await super().grid(request, op, follow)
        rows = [
            r.model_copy(
                update={
                    "source": (s := self._source(r.title)),
                    "source_url": f"https://navi.cnki.net/{s}",
                    "cited": 900 if int(r.title[-3:]) in self.hot else r.cited,
                }
            )
            for r in page.rows
        ]
        return page.model_copy(update={"rows": rows})

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> Any:
        records = await super().export_records(export_ids, op)
        return [r.model_copy(update={"source": self._source(r.title)}) for r in records]


async def journals_run(
    tmp_path: Path, name: str, journals: int, policy: SearchPolicy = DEFAULT_POLICY, hot: range = range(0)
) -> tuple[ManyJournals, list[dict[str, Any]], list[tuple[str, bool]]]:
    """A default search (400 candidates, 17 levels certain after the first) over papers in
    `journals` journals at the growth benchmark's pacing: the site, the depth events, the ranking."""
    clock = FakeClock()
    site = ManyJournals(clock, journals, hot)
    sink = MemorySink()
    events: list[dict[str, Any]] = []

    class Recording(MemorySink):
        def append_checkpoint(self, operation_id: str, entry: Any) -> None:
            if entry.get("e") == "depth":
                events.append(entry)
            sink.append_checkpoint(operation_id, entry)

    store = Store.open(tmp_path / name, clock)
    try:
        jobs = JobManager(clock, Recording())
        record = await search(clock, site, store, policy, jobs, live(), pacing=lambda: GROWTH_PACING)
        assert record.status == "completed", record.errors
        return site, events, ranking(store, record)
    finally:
        store.close()


async def test_a_snapshot_whose_top_spreads_over_more_journals_is_taken_deeper(tmp_path: Path) -> None:
    few, few_depth, _ = await journals_run(tmp_path, "few", 3)
    many, many_depth, many_ranked = await journals_run(tmp_path, "many", 60)
    fixed, fixed_depth, fixed_ranked = await journals_run(
        tmp_path, "fixed", 60, DEFAULT_POLICY.without("snapshot_reads")
    )
    # 3 journals: the 32 reads counted on `main`, 13 levels at 2.5 a level, so the fixed 16
    assert [(e["levels"], e["reads"]) for e in few_depth] == [(16, 32)]
    assert [(e["levels"], e["reads"]) for e in fixed_depth] == [(16, 32)]
    # 60 journals: the first level's top 40 name 33 unread sources, 99 reads need 40 levels, so the
    # snapshot is the first level (17 to come), one level before the fixed depth's
    assert [(e["levels"], e["reads"]) for e in many_depth] == [(40, 99)]
    assert q1_pages_after_first_export(few) == q1_pages_after_first_export(fixed) == 16
    assert q1_pages_after_first_export(many) == 17
    # the same pages, no request twice, the same top
    assert sorted(k for k, _ in many.sent if k[0] == "grid") == sorted(k for k, _ in fixed.sent if k[0] == "grid")
    assert not duplicates([k for k, _ in many.sent])
    assert [r for r, selected in many_ranked if selected][:10] == [r for r, selected in fixed_ranked if selected][:10]


async def test_a_continued_search_takes_its_snapshot_at_the_level_its_depth_was_decided_at(tmp_path: Path) -> None:
    # 1,000 candidates over a q1 of 1,200: 47 levels certain after the first. No page is timed for
    # 3 s, so levels 1-5 are passed over (47 to 45 to come); the depth (45 levels: 15 journals, 3
    # reads each, one a level) is decided at level 6 and taken there (44 to come). A search cut in
    # its steps and continued by a process that has timed no page replays that depth: it must not
    # take the snapshot at level 5, which has 45 to come
    def inp(budget: int | None = None) -> SearchInput:
        extra = {"max_requests": budget} if budget else {}
        return SearchInput(
            query="自动驾驶 产品责任",
            options=SearchOptions(freshness="live", candidate_target=1000, max_pages=100, **extra),
        )

    def timed(clock: FakeClock) -> PacingSource:
        return lambda: SLOW_LIMITER if clock.monotonic() >= FakeClock().monotonic() + 3.0 else None

    class Level6Cited(LongSite):
        """q1's page 6 (papers 100-119) much cited: a snapshot through level 5 ranks other papers first."""

        async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> Any:
            page = await super().grid(request, op, follow)
            hot = [r.model_copy(update={"cited": 900}) if 100 <= int(r.title[-3:]) < 120 else r for r in page.rows]
            return page.model_copy(update={"rows": hot})

    async def searched(name: str, budget: int | None) -> tuple[LongSite, OperationRecord]:
        clock = FakeClock()
        site = Level6Cited(clock, size=1200)
        store = Store.open(tmp_path / name, clock)
        try:
            jobs = JobManager(clock, MemorySink())
            record = await search(clock, site, store, DEFAULT_POLICY, jobs, inp(budget), pacing=timed(clock))
            if budget is None:
                return site, record
            assert record.status == "partial" and record.errors[0].code == "BUDGET_EXHAUSTED"
            pipe = ResearchPipeline(
                site, store, clock, workers=8, now_year=lambda: 2026, page_size=PAGE_SIZE, pacing=lambda: None
            )

            async def runner(ctx: OperationContext) -> Any:
                return await pipe.research(inp(budget), PLAN, ctx)

            job = jobs.continue_(record.operation_id, runner, additional_requests=1_000)
            [done] = await clock.run_until_complete(job.finish())
            return site, done
        finally:
            store.close()

    whole_site, whole = await searched("whole", None)
    assert whole.status == "completed"
    decided_at, depth = whole.checkpoint["overlap_level"], whole.checkpoint["overlap_depth"]
    assert (depth, decided_at) == (45, 6)
    log = [k for k, _ in whole_site.sent]
    first_export = next(i for i, k in enumerate(log) if k[0] == "export")
    for cut in (first_export + 1, first_export + 4, first_export + 9):
        site, done = await searched(f"cut{cut}", cut)
        assert done.status == "completed", (cut, done.errors)
        assert duplicates(site.log) == [], cut
        assert sorted(site.log) == sorted(whole_site.log), cut
        for decided in ("pool", "journals", "feedback"):
            assert done.checkpoint[decided] == whole.checkpoint[decided], (cut, decided)


async def test_a_snapshot_deeper_than_sixteen_levels_is_followed_by_one_at_sixteen(tmp_path: Path) -> None:
    # 60 journals: the first level's snapshot (17 levels to come); `middle_pages` adds a snapshot
    # at the next level (16 to come), whose steps read what q1's second page brought (papers
    # 20-39, much cited) while the rest come, instead of leaving it to the closing snapshot
    many, _, many_ranked = await journals_run(tmp_path, "middle", 60, hot=range(20, 40))
    without, _, without_ranked = await journals_run(
        tmp_path, "without", 60, DEFAULT_POLICY.without("middle_pages"), hot=range(20, 40)
    )

    def reads_after_q1_page(site: ManyJournals, page: int) -> int:
        asked = next(t for key, t in site.sent if key[:3] == ("grid", "q1", page))
        return sum(1 for key, t in site.sent if key[0] in ("export", "journal") and t > asked)

    # the page-2 papers' reads go out beside q1's pages 8-10, not after page 19 (two levels
    # before the end) and after the last page; fewer of them, as they are decided on more pages
    assert reads_after_q1_page(many, 10) == 0 and reads_after_q1_page(without, 19) > 0
    assert len(many.sent) < len(without.sent)
    assert sorted(k for k, _ in many.sent if k[0] == "grid") == sorted(k for k, _ in without.sent if k[0] == "grid")
    assert not duplicates([k for k, _ in many.sent])
    assert [r for r, selected in many_ranked if selected][:10] == [r for r, selected in without_ranked if selected][:10]
