"""JournalPrefetch.FIRST_LEVEL (pipeline/overlap.py, DESIGN.md "Journal pages beside a short
retrieval") on a fake clock: a retrieval too short to overlap reads the journal pages of its first
level's top beside its last pages; the enrichment steps decide as if those pages were unread until
they propose them, so the requests, their decisions and the results are those without the rule,
and a search cut among those reads continues without repeating a request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline_fakes import SimSite, duplicates, ranking
from test_request_policy import PLAN, search

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationRecord
from cnki_mcp.models import JournalPage
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import (
    DEFAULT_POLICY,
    JournalPrefetch,
    RefState,
    SearchPolicy,
    unread_journals,
)
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.rank import Candidate, Hit, ReferenceRanker
from cnki_mcp.store import Store

WITHOUT = DEFAULT_POLICY.without("journal_prefetch")


class TimedSite(SimSite):
    """q1 lists 120 papers (6 pages of 20, 15 journals): the default target of 300 with `max_pages`
    5 is a retrieval of 5 levels, too short to overlap. Logs each request with its fake send time."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, exports=True)
        self.sent: list[tuple[tuple[Any, ...], float]] = []

    async def _call(self, op: Any, key: tuple[Any, ...]) -> None:
        self.sent.append((key, self.clock.monotonic()))
        await super()._call(op, key)

    async def journal(self, url: str, expected_source: str | None = None, op: Any = None) -> JournalPage:
        """Journals of unequal quality, so a tier known too soon would reorder the ranking: 法学期刊0-4
        are core (a higher tier and impact the later they come), the others ordinary."""
        page = await super().journal(url, expected_source, op)
        n = int(page.name.removeprefix("法学期刊"))
        if n >= 5:
            return page.model_copy(update={"tiers": [], "composite_if": 0.2})
        return page.model_copy(update={"tiers": ["SCI"] if n >= 3 else ["北大核心"], "composite_if": 1.0 + 2 * n})


def live(**options: Any) -> SearchInput:
    return SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live", **options))


async def run(
    directory: Path, policy: SearchPolicy, inp: SearchInput | None = None
) -> tuple[TimedSite, OperationRecord, list[tuple[str, bool]], float]:
    """The search under `policy` on its own clock and store: the site, the record, every result's
    (ref, selected) in order, and the fake time the search took."""
    clock = FakeClock()
    site = TimedSite(clock)
    store = Store.open(directory, clock)
    try:
        pipe = ResearchPipeline(site, store, clock, workers=8, now_year=lambda: 2026, page_size=20, policy=policy)
        start = clock.monotonic()
        record = await search(clock, pipe, inp or live())
        return site, record, ranking(store, record), clock.monotonic() - start
    finally:
        store.close()


async def test_a_short_retrieval_reads_its_first_levels_journals_beside_its_last_pages(tmp_path: Path) -> None:
    early_site, early, early_ranked, early_took = await run(tmp_path / "early", DEFAULT_POLICY)
    site, plain, ranked, took = await run(tmp_path / "plain", WITHOUT)
    assert early.status == plain.status == "completed"
    # the same requests, the same decisions (the exports in the same order), the same results
    assert sorted(k for k, _ in early_site.sent) == sorted(k for k, _ in site.sent)
    assert [k for k, _ in early_site.sent if k[0] == "export"] == [k for k, _ in site.sent if k[0] == "export"]
    assert early_ranked == ranked
    # without the rule no journal page goes out before the last page of q1; with it, several do
    last_page = max(t for k, t in site.sent if k[:2] == ("grid", "q1"))
    assert all(t > last_page for k, t in site.sent if k[0] == "journal")
    early_last = max(t for k, t in early_site.sent if k[:2] == ("grid", "q1"))
    assert sum(1 for k, t in early_site.sent if k[0] == "journal" and t < early_last) >= 5
    assert early_took < took


async def test_the_steps_propose_each_prefetched_journal_as_if_it_were_unread(tmp_path: Path) -> None:
    # a journal read early is proposed by the step that would have read it (which then sends
    # nothing for it): the steps' decisions, checkpointed, are those of the search without the rule
    early_site, early, _, _ = await run(tmp_path / "early", DEFAULT_POLICY)
    _, plain, _, _ = await run(tmp_path / "plain", WITHOUT)
    first_export = min(t for k, t in early_site.sent if k[0] == "export")
    read_early = [k for k, t in early_site.sent if k[0] == "journal" and t < first_export]
    assert len(read_early) == len(early.checkpoint["prefetched_journals"]) >= 5
    assert plain.checkpoint["prefetched_journals"] == []
    for decided in ("pool", "journals", "feedback_pool", "feedback_journals", "feedback"):
        assert early.checkpoint[decided] == plain.checkpoint[decided], decided
    assert set(early.checkpoint["prefetched_journals"]) <= set(early.checkpoint["journals"])  # all proposed later
    assert duplicates(early_site.log) == []
    assert early.requests == plain.requests


async def test_a_search_cut_among_its_prefetches_continues_without_repeating_a_request(
    tmp_path: Path,
) -> None:
    whole_site, whole, _, _ = await run(tmp_path / "whole", DEFAULT_POLICY)
    first_export = next(i for i, (k, _) in enumerate(whole_site.sent) if k[0] == "export")
    early = [i for i, (k, _) in enumerate(whole_site.sent[:first_export]) if k[0] == "journal"]
    assert len(early) >= 5
    for cut in (early[0], early[0] + 1, early[len(early) // 2], early[-1] + 1):
        clock = FakeClock()
        site = TimedSite(clock)
        store = Store.open(tmp_path / f"cut{cut}", clock)
        try:
            pipe = ResearchPipeline(site, store, clock, workers=8, now_year=lambda: 2026, page_size=20)
            jobs = JobManager(clock, MemorySink())
            inp = live(max_requests=cut)
            stopped = await search(clock, pipe, inp, jobs)
            assert stopped.status == "partial" and stopped.errors[0].code == "BUDGET_EXHAUSTED", cut

            async def runner(ctx: OperationContext, pipe: ResearchPipeline = pipe, inp: SearchInput = inp) -> Any:
                return await pipe.research(inp, PLAN, ctx)

            mark = len(site.sent)  # the continued search's requests from here
            job = jobs.continue_(stopped.operation_id, runner, additional_requests=400)
            [done] = await clock.run_until_complete(job.finish())
        finally:
            store.close()
        assert done.status == "completed", (cut, done.errors)
        if cut == early[0]:  # cut before any was read: the continued search reads them beside its pages
            after = [k for k, _ in site.sent[mark:]]
            last_page = max(i for i, k in enumerate(after) if k[:2] == ("grid", "q1"))
            assert any(k[0] == "journal" for k in after[:last_page]), after
        assert duplicates(site.log) == [], cut
        assert sorted(site.log) == sorted(whole_site.log), cut
        assert done.result["selected_count"] == whole.result["selected_count"], cut


async def test_a_search_that_asks_no_more_pages_after_its_first_level_prefetches_nothing(
    tmp_path: Path,
) -> None:
    # target 40: q1's first page of 20 and the title and keyword pages reach it, no page is left
    site, record, _, _ = await run(tmp_path / "one", DEFAULT_POLICY, live(candidate_target=40))
    plain_site, _, _, _ = await run(tmp_path / "plain", WITHOUT, live(candidate_target=40))
    assert record.status == "completed"
    assert [k for k, _ in site.sent] == [k for k, _ in plain_site.sent]


def test_the_first_levels_journals_are_one_per_unread_source_among_the_watched_top() -> None:
    def cand(i: int) -> Candidate:
        return Candidate(ref=f"r{i}", title=f"自动驾驶产品责任研究{i}", hits=(Hit("q1", i + 1, 1.0),), doc_type="期刊")

    ranked = ReferenceRanker().rank([cand(i) for i in range(8)], [["自动驾驶"], ["产品责任"]], 2026)
    order = [r.ref for r in ranked]
    # by rank: no source, a cached journal, two papers of jB, jC, jA again; jD and jE below depth 6
    names = ["", "jA", "jB", "jB", "jC", "jA", "jD", "jE"]
    sources = dict(zip(order, names, strict=True))
    states = {ref: RefState(detailed=False, journal_open=sources[ref] not in ("", "jA")) for ref in order}
    assert unread_journals(ranked, states, sources, depth=6) == [order[2], order[4]]
    assert unread_journals(ranked, states, sources, depth=8) == [order[2], order[4], order[6], order[7]]
    assert unread_journals(ranked, states, sources, depth=0) == []
    assert DEFAULT_POLICY.journal_prefetch == JournalPrefetch.FIRST_LEVEL
    assert WITHOUT.journal_prefetch == JournalPrefetch.NONE
