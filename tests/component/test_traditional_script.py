"""Text written in traditional characters (Taiwan, Hong Kong, Macau) against CNKI's simplified
records, in process against the simulator's corpus: get_metadata locates a title written in
traditional characters, verify_references judges such a reference by its content, not its script;
concept_groups in traditional characters are searched in simplified ones, and an empty structured
search written in traditional characters names the simplified spelling."""

from __future__ import annotations

from typing import Any

from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.links import LinkInput, LinkResult
from cnki_mcp.operations import DEFAULT_BUDGETS
from cnki_mcp.pipeline.links import NO_TITLES_WARNING, link_references
from cnki_mcp.pipeline.models import MetadataInput, SearchInput, SearchOptions, StructuredSearchInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.verify import VerifyInput, VerifyResult, verify_references
from cnki_mcp.query.plan import TRADITIONAL_GROUPS_WARNING, TRADITIONAL_WARNING
from cnki_mcp.store import Store
from tests.pipeline_fakes import run_metadata

# corpus r0002: 违约金惩罚性功能的困境与出路, 姜雨欣 and 谢国思, 法商研究 2022, 33(1): 179-187
TRADITIONAL_TITLE = "違約金懲罰性功能的困境與出路"
SIMPLIFIED_TITLE = "违约金惩罚性功能的困境与出路"


async def _verify(clock: FakeClock, store: Store, site: CorpusBackend, inp: VerifyInput) -> VerifyResult:
    out: list[VerifyResult] = []

    async def runner(ctx: OperationContext) -> VerifyResult:
        out.append(await verify_references(inp, store, site, ctx))
        return out[-1]

    job = JobManager(clock, MemorySink()).start(
        OperationKind.VERIFY, runner, DEFAULT_BUDGETS[OperationKind.VERIFY]
    )
    await clock.run_until_complete(job.finish())
    return out[0]


async def test_a_title_written_in_traditional_characters_is_located(clock: FakeClock, store: Store) -> None:
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    record = await run_metadata(
        clock, pipe, MetadataInput(titles=[TRADITIONAL_TITLE], fields=["title", "authors"])
    )
    assert record.status == "completed", record.errors
    assert [r["title"] for r in record.result["records"]] == [SIMPLIFIED_TITLE]
    assert record.errors == []


async def test_a_reference_written_in_traditional_characters_is_verified(
    clock: FakeClock, store: Store
) -> None:
    entry = "姜雨欣, 謝國思. 違約金懲罰性功能的困境與出路[J]. 法商研究, 2022, 33(1): 179-187."
    result = await _verify(clock, store, CorpusBackend(), VerifyInput(references=[entry]))
    [got] = result.entries
    assert (got.verdict, got.fields) == ("verified", [])
    assert got.record is not None and got.record.title == SIMPLIFIED_TITLE


async def _run(
    clock: FakeClock, pipe: ResearchPipeline, inp: SearchInput | StructuredSearchInput
) -> dict[str, Any]:
    async def runner(ctx: OperationContext) -> Any:
        if isinstance(inp, StructuredSearchInput):
            return await pipe.structured(inp, ctx)
        return await pipe.research(inp, pipe.plan(inp), ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    assert record.status == "completed" and record.result is not None, record.errors
    return dict(record.result)


async def test_concept_groups_in_traditional_characters_are_searched_in_simplified_ones(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    inp = SearchInput(query="違約金", concept_groups=[["違約金"]], options=SearchOptions(freshness="live"))
    result = await _run(clock, pipe, inp)
    assert result["plan"]["concepts"] == [["违约金"]]
    assert result["candidate_count"] > 0
    assert any(TRADITIONAL_GROUPS_WARNING in w for w in result["plan"]["warnings"])


async def test_an_empty_structured_search_in_traditional_characters_names_the_simplified_spelling(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    written = await _run(clock, pipe, StructuredSearchInput(expression={"field": "title", "value": "違約金"}))
    assert written["candidate_count"] == 0
    assert any("违约金" in w for w in written["warnings"])  # the spelling to search instead
    found = await _run(clock, pipe, StructuredSearchInput(expression={"field": "title", "value": "违约金"}))
    assert found["candidate_count"] > 0 and found["warnings"] == []


async def test_an_empty_structured_search_for_a_romanised_author_says_to_use_the_han_name(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    pinyin = await _run(
        clock, pipe, StructuredSearchInput(expression={"field": "authors", "value": "Jiang Yuxin"})
    )
    assert pinyin["candidate_count"] == 0
    assert any("Jiang Yuxin" in w for w in pinyin["warnings"])
    han = await _run(clock, pipe, StructuredSearchInput(expression={"field": "authors", "value": "姜雨欣"}))
    assert han["candidate_count"] > 0 and han["warnings"] == []
    nothing = await _run(
        clock, pipe, StructuredSearchInput(expression={"field": "title", "value": "Jiang Yuxin"})
    )
    assert nothing["candidate_count"] == 0 and nothing["warnings"] == []  # not an author condition


async def test_a_question_in_traditional_characters_finds_the_simplified_records(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    inp = SearchInput(query="聯邦學習與隱私保護", options=SearchOptions(freshness="live"))
    result = await _run(clock, pipe, inp)
    assert result["plan"]["concepts"][0][0] == "联邦学习"
    assert result["candidate_count"] > 0 and result["selected_count"] > 0
    assert any(TRADITIONAL_WARNING in w for w in result["plan"]["warnings"])


async def _links(clock: FakeClock, store: Store, text: str) -> LinkResult:
    out: list[LinkResult] = []

    async def runner(ctx: OperationContext) -> LinkResult:
        out.append(await link_references(LinkInput(text=text), store, CorpusBackend(), ctx))
        return out[-1]

    job = JobManager(clock, MemorySink()).start(
        OperationKind.LINKS, runner, DEFAULT_BUDGETS[OperationKind.LINKS]
    )
    await clock.run_until_complete(job.finish())
    return out[0]


async def test_link_references_on_text_without_a_book_title_mark_says_why_nothing_was_linked(
    clock: FakeClock, store: Store
) -> None:
    english = 'As Zhou et al. (2021) show in "A review of ESG performance in green finance", ESG matters.'
    result = await _links(clock, store, english)
    assert result.references == [] and result.text == english
    assert result.warnings == [NO_TITLES_WARNING]
    marked = await _links(clock, store, "见《違約金懲罰性功能的困境與出路》。")
    assert NO_TITLES_WARNING not in marked.warnings
