"""When `citation_graph` and `find_citation_path` may say `complete`: every entry of every list is
walked (no hidden per-paper cap), and a graph cut by `max_nodes`, a list CNKI answered short or a
list that failed says it is not complete and why. Over the simulator's citation API in process
(CorpusBackend), with a fake clock."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from corpus_backend import CorpusBackend
from test_citegraph import remember, run

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext
from cnki_mcp.operations import OperationStatus
from cnki_mcp.parse.citations import CitationItem, CitationListPage, CitationType
from cnki_mcp.pipeline.citations import CitationListInput, citation_list
from cnki_mcp.pipeline.citegraph import GraphInput, PathInput, _input_of, citation_graph, find_citation_path
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.store import Store

JOURNALS, THESES = 31, 4  # 35 citing papers: four journal pages, then the theses' page


def hub() -> Corpus:
    """One paper cited by 35: more than the 30 the walk used to keep, the theses listed last."""
    citers = [SimRecord(id=f"j{i:02d}", title=f"期刊引证{i}", type="期刊", references=("s",)) for i in range(JOURNALS)]
    citers += [SimRecord(id=f"t{i}", title=f"学位论文引证{i}", type="硕士", references=("s",)) for i in range(THESES)]
    return Corpus(records=[SimRecord(id="s", title="被引很多的文章", type="期刊"), *citers], journals=[])


def graph_runner(store: Store, site: CorpusBackend, clock: FakeClock, inp: GraphInput) -> Any:
    async def runner(ctx: OperationContext) -> Any:
        return await citation_graph(store, site, clock, inp if ctx.resume_from is None else None, ctx)

    return runner


async def test_a_graph_takes_every_citing_paper_of_a_list_longer_than_thirty(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    inp = GraphInput(seeds=[seed], direction="citing", depth=1)
    record = await run(clock, JobManager(clock, MemorySink()), graph_runner(store, site, clock, inp))
    result = record.result
    assert record.status is OperationStatus.COMPLETED
    assert len(result["graph"]["nodes"]) == 1 + JOURNALS + THESES
    assert len(result["graph"]["edges"]) == JOURNALS + THESES
    assert {n["title"] for n in result["graph"]["nodes"]} >= {f"学位论文引证{i}" for i in range(THESES)}
    assert result["complete"] is True and result["max_nodes_reached"] is False and result["warnings"] == []
    assert max(Counter(site.citation_calls).values()) == 1


async def test_a_path_to_a_citing_paper_listed_after_the_thirtieth_is_found(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    last = site.corpus.by_id[f"t{THESES - 1}"]
    remember(store, site.corpus, last.id)

    async def path(ctx: OperationContext) -> Any:
        inp = PathInput(source=seed, target=last.native_filename, direction="citing", max_depth=1)
        return await find_citation_path(store, site, clock, inp, ctx)

    result = (await run(clock, JobManager(clock, MemorySink()), path)).result
    assert result["found"] is True and result["complete"] is True
    assert [(s["title"], s["relation"]) for s in result["path"]] == [
        ("被引很多的文章", None), (last.title, "cites")
    ]  # fmt: skip


async def test_a_budget_ending_inside_a_long_list_continues_to_every_entry_without_a_repeated_page(
    clock: FakeClock, store: Store
) -> None:
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    jobs = JobManager(clock, MemorySink())
    runner = graph_runner(store, site, clock, GraphInput(seeds=[seed], direction="citing", depth=1))
    # the counts and the 12 databases' first pages: the journal list's later pages are left
    first = await run(clock, jobs, runner, max_requests=14)
    assert first.status is OperationStatus.PARTIAL and first.errors[0].code == "BUDGET_EXHAUSTED"
    assert first.result["complete"] is False and first.result["pending"] == 1

    job = jobs.continue_(first.operation_id, runner, additional_requests=50)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status is OperationStatus.COMPLETED and done.result["complete"] is True
    assert len(done.result["graph"]["nodes"]) == 1 + JOURNALS + THESES
    assert max(Counter(site.citation_calls).values()) == 1  # no list page asked twice


async def test_a_graph_cut_by_max_nodes_says_so_and_advises_raising_it(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    inp = GraphInput(seeds=[seed], direction="citing", depth=1, max_nodes=5)
    record = await run(clock, JobManager(clock, MemorySink()), graph_runner(store, site, clock, inp))
    result = record.result
    assert record.status is OperationStatus.COMPLETED
    assert len(result["graph"]["nodes"]) == 5 and result["pending"] == 0
    assert result["complete"] is False and result["max_nodes_reached"] is True
    assert result["left_out"] == 1 + JOURNALS + THESES - 5
    assert "max_nodes" in result["warnings"][0]


class ShortListBackend(CorpusBackend):
    """A site that promises a total but answers every later page empty."""

    async def citation_list(
        self, detail_url: str, kind: str, type_code: str, start: int, op: SiteOp | None = None
    ) -> CitationListPage:
        page = await super().citation_list(detail_url, kind, type_code, start, op)
        return page.model_copy(update={"items": []}) if start > 1 else page


async def test_a_list_cnki_answers_short_leaves_the_graph_and_the_path_not_complete(
    clock: FakeClock, store: Store
) -> None:
    site = ShortListBackend(hub())
    seed = remember(store, site.corpus, "s")
    inp = GraphInput(seeds=[seed], direction="citing", depth=1)
    jobs = JobManager(clock, MemorySink())
    result = (await run(clock, jobs, graph_runner(store, site, clock, inp))).result
    assert result["complete"] is False and result["max_nodes_reached"] is False
    [short] = result["short_lists"]
    assert (short["kind"], short["read"], short["total"]) == ("citations", 10 + THESES, JOURNALS + THESES)
    assert result["warnings"]

    last = site.corpus.by_id[f"j{JOURNALS - 1}"]  # on the journal list's fourth page
    remember(store, site.corpus, last.id)

    async def path(ctx: OperationContext) -> Any:
        inp = PathInput(source=seed, target=last.native_filename, direction="citing", max_depth=1)
        return await find_citation_path(store, site, clock, inp, ctx)

    found = (await run(clock, jobs, path)).result
    assert found["found"] is False and found["complete"] is False and found["short_lists"]


async def test_a_list_that_failed_leaves_the_graph_not_complete(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    # a paper a list once named, whose link is dead and whose title CNKI no longer finds
    store.save_citation_node(
        CitationItem(title="知网上已没有的文章", filename="GONE202401001",
                     detail_url="https://kns.cnki.net/kcms2/article/abstract?v=expired"),
        clock.now(),
    )  # fmt: skip
    inp = GraphInput(seeds=[seed, "GONE202401001"], direction="citing", depth=1)
    record = await run(clock, JobManager(clock, MemorySink()), graph_runner(store, site, clock, inp))
    assert record.status is OperationStatus.PARTIAL  # an item error
    assert [e.code for e in record.errors] == ["LOCATOR_EXPIRED"]
    assert record.result["complete"] is False and record.result["warnings"]


def test_a_checkpoint_written_with_the_old_per_paper_cap_continues_over_every_entry() -> None:
    ctx = SimpleNamespace(resume_from={"tool": "citation_graph", "input": {"seeds": ["X"], "per_paper": 30}})
    inp = _input_of(ctx, None, GraphInput, "citation_graph")  # type: ignore[arg-type]
    assert inp.seeds == ["X"] and "per_paper" not in inp.model_dump()


async def test_paging_a_list_cnki_answers_short_ends_and_says_so(clock: FakeClock, store: Store) -> None:
    """next_offset never points at a page that cannot be read (a client following it would ask
    forever for the same empty window)."""
    site = ShortListBackend(hub())
    seed = remember(store, site.corpus, "s")
    jobs = JobManager(clock, MemorySink())
    windows: list[tuple[int, int, int | None]] = []
    offset: int | None = 0
    while offset is not None and len(windows) < 5:

        async def runner(ctx: OperationContext, at: int = offset) -> Any:
            inp = CitationListInput(paper=seed, offset=at, limit=10)
            return await citation_list(store, site, clock, inp, "citations", ctx)

        result = (await run(clock, jobs, runner)).result
        windows.append((offset, len(result["items"]), result["next_offset"]))
        offset = result["next_offset"]
    # the journals' first page (10), then the theses (4); CNKI's total said 35
    assert windows == [(0, 10, 10), (10, THESES, None)]
    assert result["total"] == JOURNALS + THESES and result["warnings"]


async def test_a_list_grown_since_its_first_page_was_stored_is_read_again_not_mixed(
    clock: FakeClock, store: Store
) -> None:
    """A new citing paper (listed first: newest) shifts every entry: the stored first page and a
    fresh second page would repeat one entry and miss the new one, under the old total."""
    site = CorpusBackend(hub())
    seed = remember(store, site.corpus, "s")
    jobs = JobManager(clock, MemorySink())

    def journals(limit: int) -> Any:
        async def runner(ctx: OperationContext) -> Any:
            inp = CitationListInput(paper=seed, types=[CitationType.JOURNAL], limit=limit)
            return await citation_list(store, site, clock, inp, "citations", ctx)

        return runner

    await run(clock, jobs, journals(10))  # the first page is stored
    site.corpus.add_record({"id": "new", "type": "期刊", "title": "新近引证", "year": 2026, "references": ["s"]})
    result = (await run(clock, jobs, journals(50))).result
    titles = [i["title"] for i in result["items"]]
    assert len(titles) == len(set(titles)) == result["total"] == JOURNALS + 1
    assert titles[0] == "新近引证"


async def test_a_list_of_more_than_a_thousand_is_paged_to_its_end(clock: FakeClock, store: Store) -> None:
    """next_offset always names an offset the tool accepts: a paper cited by 1,100 is read to its
    last entry (the offset cap of 1,000 refused the next_offset the call before gave)."""
    many = 1100
    citers = [SimRecord(id=f"m{i:04d}", title=f"引证{i}", type="期刊", references=("s",)) for i in range(many)]
    site = CorpusBackend(Corpus(records=[SimRecord(id="s", title="被引上千次的文章", type="期刊"), *citers],
                                journals=[]))  # fmt: skip
    seed = remember(store, site.corpus, "s")
    jobs = JobManager(clock, MemorySink())
    offset: int | None = 1000
    seen: list[str] = []
    while offset is not None:

        async def runner(ctx: OperationContext, at: int = offset) -> Any:
            inp = CitationListInput(paper=seed, offset=at, limit=50)
            return await citation_list(store, site, clock, inp, "citations", ctx)

        record = await run(clock, jobs, runner, max_requests=500)
        assert record.status is OperationStatus.COMPLETED, record.errors
        seen += [i["title"] for i in record.result["items"]]
        offset = record.result["next_offset"]
    assert len(seen) == many - 1000 and seen[-1] == f"引证{many - 1}"


async def test_a_list_past_the_offset_cap_stops_paging_and_says_what_is_left(
    clock: FakeClock, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tool accepts offsets up to MAX_OFFSET (100,000): a page ending past it names no
    next_offset the tool would refuse, and says how many entries cannot be paged to."""
    from cnki_mcp.pipeline import citations

    monkeypatch.setattr(citations, "MAX_OFFSET", 60)  # a list of 100 stands in for one over 100,000
    citers = [SimRecord(id=f"c{i:03d}", title=f"引证{i}", type="期刊", references=("s",)) for i in range(100)]
    site = CorpusBackend(Corpus(records=[SimRecord(id="s", title="被引很多次的文章", type="期刊"), *citers],
                                journals=[]))  # fmt: skip
    seed = remember(store, site.corpus, "s")
    jobs = JobManager(clock, MemorySink())

    async def runner(ctx: OperationContext) -> Any:
        return await citation_list(store, site, clock, CitationListInput(paper=seed, offset=50, limit=20), "citations", ctx)

    record = await run(clock, jobs, runner, max_requests=500)
    assert record.status is OperationStatus.COMPLETED, record.errors
    assert len(record.result["items"]) == 20 and record.result["total"] == 100
    assert record.result["next_offset"] is None
    assert record.result["warnings"]  # the 30 entries after 70 are named as unreachable
