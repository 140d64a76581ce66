"""A citation walk stopped before it ends (its active time used up, a cancel, the request budget)
still answers what it read and says in `warnings` why it is not complete; its progress counts the
papers it will expand. Over the simulator's citation API in process (CorpusBackend), each request
taking a second on the fake clock."""

from __future__ import annotations

from typing import Any

from corpus_backend import CorpusBackend, CorpusLinks
from test_citegraph import remember, run, stored
from test_citegraph_complete import JOURNALS, THESES, graph_runner, hub

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.operations import DEFAULT_BUDGETS, OperationStatus
from cnki_mcp.parse.citations import CitationListPage, CitationType
from cnki_mcp.pipeline.citations import CitationListInput, citation_list
from cnki_mcp.pipeline.citegraph import GraphInput, PathInput, find_citation_path
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.store import Store

SECONDS_PER_REQUEST = 1.0


class SlowCorpus(CorpusBackend):
    """Every citation request answers a second later on the fake clock."""

    def __init__(self, corpus: Corpus, clock: FakeClock) -> None:
        super().__init__(corpus)
        self.clock = clock

    async def citation_list(
        self, detail_url: str, kind: str, type_code: str, start: int, op: SiteOp | None = None
    ) -> CitationListPage:
        await self.clock.sleep(SECONDS_PER_REQUEST)
        return await super().citation_list(detail_url, kind, type_code, start, op)

    async def citation_metrics(self, detail_url: str, op: SiteOp | None = None) -> dict[str, int]:
        await self.clock.sleep(SECONDS_PER_REQUEST)
        return await super().citation_metrics(detail_url, op)


def chain() -> Corpus:
    """The hub's 35 citing papers, each cited by one more paper: a depth-2 walk expands 36."""
    base = hub()
    second = [SimRecord(id=f"c{r.id}", title=f"再引{r.id}", type="期刊", references=(r.id,)) for r in base.records[1:]]
    return Corpus(records=[*base.records, *second], journals=[])


async def start_timed(clock: FakeClock, runner: Any, timeout_seconds: float) -> Any:
    budget = DEFAULT_BUDGETS[OperationKind.CITATIONS].model_copy(update={"timeout_seconds": timeout_seconds})
    job = JobManager(clock, MemorySink()).start(OperationKind.CITATIONS, runner, budget)
    [record] = await clock.run_until_complete(job.finish())
    return record


async def test_a_graph_stopped_by_its_active_time_answers_the_graph_read_so_far(
    clock: FakeClock, store: Store
) -> None:
    site = SlowCorpus(chain(), clock)
    seed = remember(store, site.corpus, "s")
    inp = GraphInput(seeds=[seed], direction="citing", depth=2)
    # the seed's counts and lists take 18 s: the deadline falls among its citing papers' lists
    record = await start_timed(clock, graph_runner(store, site, clock, inp), timeout_seconds=60)
    assert record.status is OperationStatus.PARTIAL
    assert record.errors[0].code == "BUDGET_EXHAUSTED" and record.errors[0].details["reason"] == "timeout_seconds"
    result = record.result
    assert result is not None
    assert len(result["graph"]["nodes"]) > 1 + JOURNALS + THESES  # the seed's list and some of the next
    assert result["complete"] is False and result["pending"] > 0
    assert result["warnings"] and result["requests"] > 0


async def test_a_path_search_stopped_by_its_active_time_says_it_is_not_complete(clock: FakeClock, store: Store) -> None:
    site = SlowCorpus(chain(), clock)
    seed = remember(store, site.corpus, "s")
    far = remember(store, site.corpus, f"ct{THESES - 1}")  # two steps away, listed last

    async def path(ctx: OperationContext) -> Any:
        inp = PathInput(source=seed, target=far, direction="citing", max_depth=2)
        return await find_citation_path(store, site, clock, inp, ctx)

    record = await start_timed(clock, path, timeout_seconds=30)
    assert record.status is OperationStatus.PARTIAL and record.errors[0].code == "BUDGET_EXHAUSTED"
    result = record.result
    assert result is not None
    assert result["found"] is False and result["complete"] is False and result["warnings"]


async def test_a_cancelled_graph_answers_the_graph_read_so_far(clock: FakeClock, store: Store) -> None:
    site = SlowCorpus(chain(), clock)
    seed = remember(store, site.corpus, "s")
    jobs = JobManager(clock, MemorySink())
    job = jobs.start(OperationKind.CITATIONS,
                     graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=2)))  # fmt: skip
    await clock.advance_settled(40)
    await jobs.cancel(job.operation_id)
    [record] = await clock.run_until_complete(job.finish())
    assert record.status is OperationStatus.CANCELLED
    assert record.result is not None and record.result["complete"] is False
    assert len(record.result["graph"]["nodes"]) > 1


async def test_a_budget_cut_says_in_warnings_that_papers_were_not_expanded(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    runner = graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=1))
    record = await run(clock, JobManager(clock, MemorySink()), runner, max_requests=14)
    assert record.status is OperationStatus.PARTIAL and record.result["pending"] == 1
    assert record.result["warnings"], "the tool description sends the client to warnings for the reason"

    far = remember(store, site.corpus, f"j{JOURNALS - 1}")  # on the journal list's fourth page

    async def path(ctx: OperationContext) -> Any:
        inp = PathInput(source=seed, target=far, direction="citing", max_depth=1)
        return await find_citation_path(store, site, clock, inp, ctx)

    found = await run(clock, JobManager(clock, MemorySink()), path, max_requests=1)
    assert found.status is OperationStatus.PARTIAL
    assert found.result["found"] is False and found.result["complete"] is False and found.result["warnings"]


async def test_progress_ends_at_its_total_when_the_walk_is_complete(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend(chain())
    seed = remember(store, site.corpus, "s")
    runner = graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=2))
    record = await run(clock, JobManager(clock, MemorySink()), runner, max_requests=2000)
    assert record.status is OperationStatus.COMPLETED and record.result["complete"] is True
    # the seed and its 35 citing papers are expanded; the 35 papers at depth 2 are only listed
    assert (record.progress.done, record.progress.total) == (1 + JOURNALS + THESES, 1 + JOURNALS + THESES)


async def test_a_continue_reads_a_relocated_paper_with_its_new_link_not_the_dead_one_again(
    clock: FakeClock, store: Store
) -> None:
    """A list entry's link died and was found again by title; the walk ran out of budget before
    that paper's lists. `continue` takes the entry from the stored page, whose link is still the
    dead one: it must use the link found (stored), not spend a refused request and a second
    title lookup on it."""
    site = CorpusBackend(chain())
    seed = remember(store, site.corpus, "s")
    first_page = await site.citation_list(CorpusLinks().detail("s"), "citations", "CJFDREF", 1)
    dead = first_page.items[0].model_copy(update={"detail_url": "https://kns.cnki.net/kcms2/article/abstract?v=expired"})
    store.save_citation_page(seed, "citations", first_page.model_copy(update={"items": [dead, *first_page.items[1:]]}),
                             clock.now())  # fmt: skip
    site.citation_calls.clear()
    jobs = JobManager(clock, MemorySink())
    runner = graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=2))
    # the seed: counts, 11 first pages, the journal list's pages 2-4 (15); the dead entry: its
    # refused counts, the title lookup, its counts (18); its first list page is over the budget
    first = await run(clock, jobs, runner, max_requests=18)
    assert first.status is OperationStatus.PARTIAL and site.requests["grid"] == 1
    job = jobs.continue_(first.operation_id, runner, additional_requests=1000)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status is OperationStatus.COMPLETED, done.errors
    assert site.requests["grid"] == 1  # one title lookup in all
    assert sum(1 for call in site.citation_calls if call[0] == "") == 0  # no list asked with the dead link


async def test_a_running_walk_keeps_its_stored_record_current_for_a_crash(clock: FakeClock, store: Store) -> None:
    """What a restart finds of a walk the process died in: the stored record (not the live one)
    has the requests spent so far, so `continue` keeps to the budget the client set, and says
    how far the walk came."""
    site = SlowCorpus(chain(), clock)
    seed = remember(store, site.corpus, "s")
    sink = MemorySink()
    jobs = JobManager(clock, sink)
    job = jobs.start(OperationKind.CITATIONS,
                     graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=2)))  # fmt: skip
    await clock.advance_settled(60)  # the seed's counts and lists (18 s), then its citing papers'
    saved = sink.load(job.operation_id)
    assert saved is not None and saved.status is OperationStatus.RUNNING
    assert saved.requests >= 18 and saved.progress.done >= 2 and "已展开" in (saved.message or "")
    await jobs.cancel(job.operation_id)
    await clock.run_until_complete(job.finish())


async def test_a_paper_without_a_link_counts_only_the_requests_made(clock: FakeClock, store: Store) -> None:
    """A stored paper with no detail link is found by its title first: no refused request was
    made for it, so none is counted in the result's `requests`."""
    site = CorpusBackend()
    rec = site.corpus.by_id["r0306"]
    paper = stored(store, rec, None)

    async def runner(ctx: OperationContext) -> Any:
        inp = CitationListInput(paper=paper.record_ref, types=[CitationType.JOURNAL], limit=5)
        return await citation_list(store, site, clock, inp, "citations", ctx)

    record = await run(clock, JobManager(clock, MemorySink()), runner)
    assert record.status is OperationStatus.COMPLETED, record.errors
    # the title lookup, the counts, the journal list's first page
    assert record.result["requests"] == record.requests == 3 and site.requests["grid"] == 1


async def test_a_walk_killed_inside_its_first_paper_has_the_requests_it_spent_on_record(
    clock: FakeClock, store: Store
) -> None:
    """The stored record followed each paper expanded (9daccae), so a process killed while the
    seed's lists were still being read left requests 0 and a continue got the whole budget again
    (213 citation-API requests measured for a 200 budget). Each stored answer now stores the count."""
    site = SlowCorpus(chain(), clock)
    seed = remember(store, site.corpus, "s")
    sink = MemorySink()
    jobs = JobManager(clock, sink, heartbeat_interval=10_000)  # no heartbeat saves in between
    job = jobs.start(OperationKind.CITATIONS,
                     graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=2)))  # fmt: skip
    await clock.advance_settled(6)  # inside the seed's counts and lists (18 s)
    saved = sink.load(job.operation_id)
    assert saved is not None and saved.status is OperationStatus.RUNNING and saved.progress.done == 0
    assert saved.requests >= 5
    await jobs.cancel(job.operation_id)
    await clock.run_until_complete(job.finish())
