"""Citation lists and the citation graph over the simulator's citation API in process
(CorpusBackend: the simulator's lists and JSON, the production parser), with a fake clock:
paging, the store answering repeated pages, budget exhaustion and `continue` without a repeated
request, pair counts, paths."""

from __future__ import annotations

from collections import Counter
from typing import Any

from corpus_backend import CorpusBackend, CorpusLinks

from cnki_mcp.clock import FakeClock
from cnki_mcp.identity import Paper
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.operations import DEFAULT_BUDGETS, OperationStatus
from cnki_mcp.parse.citations import TYPE_CODES as LIST_TYPES
from cnki_mcp.parse.citations import CitationItem, CitationType
from cnki_mcp.pipeline.citations import CitationListInput, citation_list, citation_type, resolve_paper
from cnki_mcp.pipeline.citegraph import GraphInput, PathInput, citation_graph, find_citation_path
from cnki_mcp.sim.citation_api import type_code
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.store import Store

LONG = "r0306"  # 25 papers cite it, 19 of them journal papers (two pages of the journal list)


def remember(store: Store, corpus: Corpus, record_id: str) -> str:
    """Make a corpus paper known locally as a list entry; returns its file name."""
    rec = corpus.by_id[record_id]
    store.save_citation_node(
        CitationItem(title=rec.title, filename=rec.native_filename, detail_url=CorpusLinks().detail(rec.id)),
        store.clock.now(),
    )
    return rec.native_filename


def stored(store: Store, rec: SimRecord, detail_url: str | None) -> Paper:
    """A corpus paper stored as a search would (its grid row), with `detail_url` as its link."""
    row = GridRow(
        title=rec.title, authors=[a.name for a in rec.authors], source=rec.source, year=rec.year,
        doc_type=rec.type, native=NativeId(dbname=rec.db, filename=rec.native_filename), detail_url=detail_url,
    )  # fmt: skip
    [paper] = store.upsert_from_grid([row], store.clock.now())
    return paper


async def run(clock: FakeClock, jobs: JobManager, runner: Any, max_requests: int = 200) -> OperationRecord:
    budget = DEFAULT_BUDGETS[OperationKind.CITATIONS].model_copy(update={"max_requests": max_requests})
    job = jobs.start(OperationKind.CITATIONS, runner, budget)
    [record] = await clock.run_until_complete(job.finish())
    return record


async def journal_list(clock: FakeClock, store: Store, site: CorpusBackend, paper: str) -> OperationRecord:
    """`get_citing` for `paper`: its first five citing journal papers."""

    async def runner(ctx: OperationContext) -> Any:
        inp = CitationListInput(paper=paper, types=[CitationType.JOURNAL], limit=5)
        return await citation_list(store, site, clock, inp, "citations", ctx)

    return await run(clock, JobManager(clock, MemorySink()), runner)


async def test_a_long_citing_list_is_paged_and_a_second_call_costs_no_request(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    name = remember(store, site.corpus, LONG)
    jobs = JobManager(clock, MemorySink())

    def lister(inp: CitationListInput) -> Any:
        async def runner(ctx: OperationContext) -> Any:
            return await citation_list(store, site, clock, inp, "citations", ctx)

        return runner

    journal = CitationListInput(paper=name, types=[CitationType.JOURNAL], offset=10, limit=10)
    first = await run(clock, jobs, lister(journal))
    assert first.status is OperationStatus.COMPLETED
    page = first.result
    assert page["total"] == 19 and len(page["items"]) == 9 and page["next_offset"] is None
    # counts, then the journal list's two pages: one request each
    assert page["requests"] == 3 and site.requests["citation_list"] == 2
    assert all(LONG in site.corpus.by_id[_id(site, i["filename"])].references for i in page["items"])

    again = await run(clock, jobs, lister(journal))
    assert again.result["requests"] == 0 and again.result["items"] == page["items"]
    assert site.requests["citation_list"] == 2  # nothing asked twice

    every = await run(clock, jobs, lister(CitationListInput(paper=name, limit=20)))
    assert every.result["total"] == len(site.corpus.citing(LONG))
    assert every.result["by_type"]["journal"] == 19 and every.result["next_offset"] == 20
    # the 11 other databases' first pages only: the journal pages are in the store
    assert every.result["requests"] == 11
    assert max(Counter(site.citation_calls).values()) == 1


def _id(site: CorpusBackend, filename: str) -> str:
    return next(r.id for r in site.corpus.records if r.native_filename == filename)


async def test_a_graph_out_of_budget_is_partial_and_continue_repeats_no_request(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    seed = remember(store, site.corpus, LONG)
    jobs = JobManager(clock, MemorySink())
    inp = GraphInput(seeds=[seed], direction="both", depth=2, max_nodes=40)

    async def runner(ctx: OperationContext) -> Any:
        return await citation_graph(store, site, clock, inp if ctx.resume_from is None else None, ctx)

    first = await run(clock, jobs, runner, max_requests=30)
    assert first.status is OperationStatus.PARTIAL and first.errors[0].code == "BUDGET_EXHAUSTED"
    assert first.requests == 30 and first.result["complete"] is False and first.result["pending"] > 0
    made = len(site.citation_calls) + site.requests["citation_metrics"]
    assert made == 30

    job = jobs.continue_(first.operation_id, runner, additional_requests=2000)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status is OperationStatus.COMPLETED and done.result["pending"] == 0
    # every paper within the depth was expanded, but max_nodes kept papers out: not complete
    assert done.result["max_nodes_reached"] is True and done.result["left_out"] > 0
    assert done.result["complete"] is False
    assert max(Counter(site.citation_calls).values()) == 1  # no list page asked twice

    # The same walk in one go on a fresh store asks exactly as many pages.
    fresh_site = CorpusBackend(site.corpus)
    other = Store.open(store.data_dir.parent / "other", clock)
    try:
        remember(other, site.corpus, LONG)

        async def once(ctx: OperationContext) -> Any:
            return await citation_graph(other, fresh_site, clock, inp, ctx)

        whole = await run(clock, JobManager(clock, MemorySink()), once, max_requests=2000)
    finally:
        other.close()
    assert sorted(fresh_site.citation_calls) == sorted(site.citation_calls)
    assert whole.result["graph"]["edges"] == done.result["graph"]["edges"]
    assert len(done.result["graph"]["nodes"]) == 40  # max_nodes holds


async def test_pair_counts_and_a_path_in_a_small_network(clock: FakeClock, store: Store) -> None:
    corpus = Corpus(records=[
        SimRecord(id="a", title="甲文", type="期刊", references=("b", "c")),
        SimRecord(id="d", title="丁文", type="期刊", references=("b", "c")),
        SimRecord(id="b", title="乙文", type="博士", references=("e",)),
        SimRecord(id="c", title="丙文", type="外文期刊"),
        SimRecord(id="e", title="戊文", type="图书"),
    ], journals=[])  # fmt: skip
    site = CorpusBackend(corpus)
    a, d, e = (remember(store, corpus, x) for x in ("a", "d", "e"))
    jobs = JobManager(clock, MemorySink())

    async def graph(ctx: OperationContext) -> Any:
        return await citation_graph(store, site, clock, GraphInput(seeds=[a, d], format="graphml"), ctx)

    record = await run(clock, jobs, graph)
    result = record.result
    ids = {n["title"]: n["id"] for n in result["graph"]["nodes"]}
    assert {(p["a"], p["b"], p["count"]) for p in result["graph"]["co_citation"]} == {(ids["乙文"], ids["丙文"], 2)}
    assert {(p["a"], p["b"], p["count"]) for p in result["graph"]["coupling"]} == {(ids["甲文"], ids["丁文"], 2)}
    assert result["export"].startswith("<?xml") and result["complete"] is True

    async def path(ctx: OperationContext) -> Any:
        return await find_citation_path(store, site, clock, PathInput(source=d, target=e, max_depth=3), ctx)

    found = (await run(clock, jobs, path)).result
    assert found["found"] is True
    assert [(s["title"], s["relation"]) for s in found["path"]] == [
        ("丁文", None), ("乙文", "cited_by"), ("戊文", "cited_by")
    ]  # fmt: skip


async def test_graph_nodes_and_path_steps_name_the_stored_papers_record_ref(clock: FakeClock, store: Store) -> None:
    """A node or step gave only `filename`, which get_metadata, export_citations, read_online_html
    and download_paper refuse: a stored paper sent the client back to a title lookup. It carries
    its record_ref; a paper known only from the lists has no `record_ref` key (no null per node)."""
    corpus = Corpus(records=[
        SimRecord(id="a", title="甲文", type="期刊", references=("b",)),
        SimRecord(id="b", title="乙文", type="博士", references=("e",)),
        SimRecord(id="e", title="戊文", type="图书"),
    ], journals=[])  # fmt: skip
    site = CorpusBackend(corpus)
    a, e = (remember(store, corpus, x) for x in ("a", "e"))
    paper = stored(store, corpus.by_id["b"], CorpusLinks().detail("b"))
    jobs = JobManager(clock, MemorySink())

    async def graph(ctx: OperationContext) -> Any:
        return await citation_graph(store, site, clock, GraphInput(seeds=[a], depth=2), ctx)

    async def path(ctx: OperationContext) -> Any:
        return await find_citation_path(store, site, clock, PathInput(source=a, target=e, max_depth=3), ctx)

    nodes = {n["title"]: n for n in (await run(clock, jobs, graph)).result["graph"]["nodes"]}
    assert nodes["乙文"]["record_ref"] == paper.record_ref
    assert "record_ref" not in nodes["甲文"] and "record_ref" not in nodes["戊文"]
    steps = (await run(clock, jobs, path)).result["path"]
    assert [s.get("record_ref") for s in steps] == [None, paper.record_ref, None]
    assert "record_ref" not in steps[0]


async def test_a_dead_detail_link_is_found_again_by_exact_title_with_one_grid_request(
    clock: FakeClock, store: Store
) -> None:
    site = CorpusBackend()
    rec = site.corpus.by_id[LONG]
    # the stored link's token is dead (CorpusBackend answers `code` 1 for an unknown `v`)
    store.save_citation_node(
        CitationItem(title=rec.title, filename=rec.native_filename,
                     detail_url="https://kns.cnki.net/kcms2/article/abstract?v=expired"),
        clock.now(),
    )  # fmt: skip
    record = await journal_list(clock, store, site, rec.native_filename)
    assert record.status is OperationStatus.COMPLETED, record.errors
    assert record.result["total"] == 19 and len(record.result["items"]) == 5
    assert site.requests["grid"] == 1 and site.requests["detail"] == 0  # no detail page opened
    # the refused counts, the title lookup, the counts again, the journal page
    assert record.result["requests"] == record.requests == 4
    node = store.citation_node(rec.native_filename)
    assert node is not None and node.detail_url == CorpusLinks().detail(rec.id)


async def test_a_list_answer_carries_cnkis_six_counts(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    name = remember(store, site.corpus, LONG)

    async def runner(ctx: OperationContext) -> Any:
        return await citation_list(store, site, clock, CitationListInput(paper=name, limit=1), "references", ctx)

    result = (await run(clock, JobManager(clock, MemorySink()), runner)).result
    assert result["counts"]["citations"] == 25 and result["counts"]["references"] == result["total"]
    assert set(result["counts"]) == {"references", "citations", "co-references", "co-citations",
                                     "second-references", "second-citations"}  # fmt: skip


async def test_a_stored_paper_keeps_its_record_and_metadata_as_a_list_subject_and_a_graph_seed(
    clock: FakeClock, store: Store
) -> None:
    site = CorpusBackend()
    rec = site.corpus.by_id[LONG]
    paper = stored(store, rec, CorpusLinks().detail(rec.id))
    listed = await journal_list(clock, store, site, rec.native_filename.lower())  # as citation lists name it
    assert listed.status is OperationStatus.COMPLETED, listed.errors
    assert listed.result["paper"]["record_ref"] == paper.record_ref

    async def graph(ctx: OperationContext) -> Any:
        return await citation_graph(store, site, clock, GraphInput(seeds=[paper.record_ref], direction="citing"), ctx)

    result = (await run(clock, JobManager(clock, MemorySink()), graph)).result
    [seed] = [n for n in result["graph"]["nodes"] if n["seed"]]
    assert (seed["authors"], seed["year"], seed["source"], seed["type"]) == (
        [a.name for a in rec.authors][:3], rec.year, rec.source, "journal"
    )
    assert seed["filename"] == rec.native_filename


async def test_a_stored_papers_dead_link_is_renewed_on_the_paper_not_as_a_list_entry(
    clock: FakeClock, store: Store
) -> None:
    site = CorpusBackend()
    rec = site.corpus.by_id[LONG]
    paper = stored(store, rec, "https://kns.cnki.net/kcms2/article/abstract?v=expired")
    record = await journal_list(clock, store, site, paper.record_ref)
    assert record.status is OperationStatus.COMPLETED, record.errors
    assert site.requests["grid"] == 1  # the title lookup
    renewed = store.get(paper.record_ref)
    assert renewed is not None and renewed.locator == CorpusLinks().detail(rec.id)
    assert store.citation_node(rec.native_filename) is None  # no list named it: no list entry made up


def test_a_stored_papers_type_is_named_as_the_lists_name_it() -> None:
    # every document type of the corpus: the type the simulator's lists give it (its database's
    # code, read by the production parser) is the one a stored paper of that type gets
    records = {r.type: r for r in Corpus.load().records}
    assert len(records) >= 6
    for label, rec in records.items():
        assert citation_type(label) == LIST_TYPES[type_code(rec)], label
    assert citation_type(None) == CitationType.OTHER


def test_a_stored_paper_without_a_link_takes_the_one_a_list_gave_it(store: Store) -> None:
    corpus = Corpus.load()
    rec = corpus.by_id[LONG]
    paper = stored(store, rec, None)
    assert paper.locator is None
    remember(store, corpus, LONG)  # a list named it, with its link
    for name in (paper.record_ref, rec.native_filename):
        handle = resolve_paper(store, name)
        assert (handle.record_ref, handle.detail_url) == (paper.record_ref, CorpusLinks().detail(rec.id))


class SlowCitations(CorpusBackend):
    """The corpus backend answering each citation request one fake second after it is sent, so
    two operations are both in flight."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    async def citation_list(self, detail_url: str, kind: str, type_code: str, start: int, op: Any = None) -> Any:
        await self.clock.sleep(1)
        return await super().citation_list(detail_url, kind, type_code, start, op)

    async def citation_metrics(self, detail_url: str, op: Any = None) -> dict[str, int]:
        await self.clock.sleep(1)
        return await super().citation_metrics(detail_url, op)


async def test_two_clients_asking_for_one_list_at_once_send_each_request_once(clock: FakeClock, store: Store) -> None:
    # two sessions call get_citing for the same paper at the same moment: each page (and the
    # counts) is asked once, the other operation takes it from the store
    site = SlowCitations(clock)
    name = remember(store, site.corpus, LONG)
    jobs = JobManager(clock, MemorySink())
    inp = CitationListInput(paper=name, types=[CitationType.JOURNAL], limit=20)
    flights = KeyedLocks()  # the server's one in-flight map (Services.citation_flights)

    async def runner(ctx: OperationContext) -> Any:
        return await citation_list(store, site, clock, inp, "citations", ctx, flights=flights)

    budget = DEFAULT_BUDGETS[OperationKind.CITATIONS]
    first = jobs.start(OperationKind.CITATIONS, runner, budget)
    second = jobs.start(OperationKind.CITATIONS, runner, budget)
    one, two = await clock.run_until_complete(first.finish(), second.finish())
    assert one.status is two.status is OperationStatus.COMPLETED
    assert one.result["items"] == two.result["items"] and one.result["total"] == 19
    assert max(Counter(site.citation_calls).values()) == 1
    assert site.requests["citation_metrics"] == 1 and len(site.citation_calls) == 2
    assert one.result["requests"] + two.result["requests"] == 3
