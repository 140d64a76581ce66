"""A search's years as CNKI applies them (发表时间, site-rules.md §1.3) and the `year` its answer
shows (the issue's): a printed paper first published online the December before its January issue
is inside a range by its online day and outside it by its issue year (saved page
kns8s-grid/kaffu_waam_p1.html: online-first rows keep their online day). The round trip runs the
simulator's evaluator and the production parsers (CorpusBackend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_backend import CorpusBackend
from pipeline_fakes import start_research

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.store import Store

PRINTED = {
    "id": "t9y001", "db": "CJFD", "filename": "FXPL202601008", "type": "期刊",
    "title": "数据跨境流动规则的时间维度研究", "authors": [{"name": "冯时", "institution": "武汉大学法学院"}],
    "source": "法学评论", "year": 2026, "date": "2025-12-18 10:31", "volume": "44", "issue": "1",
    "pages": "88-99", "abstract": "本文研究数据跨境流动规则的时间维度。", "keywords": ["数据跨境流动"],
}  # fmt: skip
IN_YEAR = {
    **PRINTED, "id": "t9y002", "filename": "FXPL202506009", "title": "数据跨境流动的安全评估制度研究",
    "year": 2025, "date": "2025-06-15", "issue": "6",
}  # fmt: skip


async def _search(clock: FakeClock, store: Store, **years: Any) -> dict[str, Any]:
    corpus = Corpus.load()
    corpus.add_record(PRINTED)
    corpus.add_record(IN_YEAR)
    pipe = ResearchPipeline(CorpusBackend(corpus), store, clock, now_year=lambda: 2026)
    inp = SearchInput(
        query="数据跨境流动", concept_groups=[["数据跨境流动"]], options=SearchOptions(freshness="live"), **years
    )
    job = start_research(JobManager(clock, MemorySink()), pipe, inp, pipe.plan(inp))
    [record] = await clock.run_until_complete(job.finish())
    assert record.result is not None, record.errors
    return dict(record.result)


async def test_a_paper_inside_the_years_by_its_online_day_says_why_its_year_is_outside(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    result = await _search(clock, store, year_from=2025, year_to=2025)
    listed = {r["title"]: r["year"] for r in result["results"]}
    # CNKI's 发表时间 2025-12-18 is inside 2025; the export gives the year
    assert listed == {PRINTED["title"]: 2026, IN_YEAR["title"]: 2025}
    # before: the answer listed a 2026 paper for 2025 without a word
    [said] = [w for w in result["warnings"] if PRINTED["title"] in w]
    assert "search_library" in said and IN_YEAR["title"] not in said
    # the filter it names keeps the papers whose year is inside
    page = search_library(
        store,
        LibraryInput(query="数据跨境流动", search_id=result["search_id"], year_from=2025, year_to=2025),
        tmp_path,
        clock,
    )
    assert [r.title for r in page.results] == [IN_YEAR["title"]]


async def test_a_search_whose_papers_all_show_a_year_inside_says_nothing_of_it(
    clock: FakeClock, store: Store
) -> None:
    result = await _search(clock, store, year_from=2025)
    assert {r["year"] for r in result["results"]} == {2025, 2026}
    assert not [w for w in result["warnings"] if "search_library" in w]
