"""Planning a raw question end to end: the pipeline plans like a client without sampling, applies
the question's years, and says so (with the call to make) when the plan is weak or finds nothing.
Runs on the simulator's corpus through `tests/corpus_backend.py` (no browser)."""

from __future__ import annotations

from typing import Any

from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import VerificationSkipped
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.pipeline.models import SearchInput, SearchOptions, StructuredSearchInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.store import Store


class RecordingBackend(CorpusBackend):
    def __init__(self) -> None:
        super().__init__()
        self.grids: list[GridRequest] = []

    async def grid(self, request: GridRequest, op: Any = None, follow: Any = None) -> Any:
        self.grids.append(request)
        return await super().grid(request, op)


async def _search(clock: FakeClock, store: Store, backend: CorpusBackend, inp: SearchInput) -> dict[str, Any]:
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    plan = pipe.plan(inp)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan, ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    assert record.result is not None, record.errors
    return dict(record.result)


async def test_the_issue_question_alone_finds_papers(clock: FakeClock, store: Store) -> None:
    inp = SearchInput(query="大语言模型幻觉问题有哪些缓解方法？", options=SearchOptions(freshness="live"))
    result = await _search(clock, store, CorpusBackend(), inp)
    assert result["plan"]["method"] == "segmented"
    assert len(result["plan"]["concepts"]) == 2
    assert result["candidate_count"] > 0 and result["selected_count"] > 0
    assert result["advice"] is None


async def test_time_phrase_years_reach_every_grid_request(clock: FakeClock, store: Store) -> None:
    backend = RecordingBackend()
    inp = SearchInput(query="近五年联邦学习的差分隐私保护", options=SearchOptions(freshness="live"))
    await _search(clock, store, backend, inp)
    assert backend.grids and {(g.year_from, g.year_to) for g in backend.grids} == {(2021, None)}


async def test_years_from_the_question_are_stated_in_the_answer(clock: FakeClock, store: Store) -> None:
    # the caller gave no years: the answer must say the search was narrowed, not only the log
    inp = SearchInput(query="近五年联邦学习的差分隐私保护", options=SearchOptions(freshness="live"))
    result = await _search(clock, store, RecordingBackend(), inp)
    stated = [w for w in result["warnings"] if "year_from=2021" in w]
    assert len(stated) == 1 and stated == [w for w in result["plan"]["warnings"] if "year_from=2021" in w]
    explicit = SearchInput(
        query="近五年联邦学习的差分隐私保护", year_from=2018, options=SearchOptions(freshness="live")
    )
    result = await _search(clock, store, RecordingBackend(), explicit)
    assert not [w for w in result["warnings"] if "year_from=" in w]


async def test_a_time_phrase_beside_concept_groups_is_said_to_be_unused(clock: FakeClock, store: Store) -> None:
    backend = RecordingBackend()
    inp = SearchInput(
        query="近五年联邦学习的差分隐私保护",
        concept_groups=[["联邦学习"], ["差分隐私"]],
        options=SearchOptions(freshness="live"),
    )
    result = await _search(clock, store, backend, inp)
    assert {(g.year_from, g.year_to) for g in backend.grids} == {(None, None)}  # concept groups: not read
    assert len([w for w in result["warnings"] if "year_from=2021" in w]) == 1


async def test_explicit_years_win_over_the_time_phrase(clock: FakeClock, store: Store) -> None:
    backend = RecordingBackend()
    inp = SearchInput(
        query="近五年联邦学习的差分隐私保护", year_from=2018, options=SearchOptions(freshness="live")
    )
    await _search(clock, store, backend, inp)
    assert {(g.year_from, g.year_to) for g in backend.grids} == {(2018, None)}


async def test_one_concept_plan_carries_advice_and_the_call_to_make(clock: FakeClock, store: Store) -> None:
    inp = SearchInput(query="联邦学习差分隐私", options=SearchOptions(freshness="live"))
    inp = inp.model_copy(update={"concept_groups": [["联邦学习差分隐私"]]})
    result = await _search(clock, store, CorpusBackend(), inp)
    advice = result["advice"]
    assert advice["reason"] == "one_concept"
    assert len(advice["suggested_concept_groups"]) >= 2
    assert advice["suggested_call"] == {
        "tool": "search",
        "arguments": {"query": "联邦学习差分隐私", "concept_groups": advice["suggested_concept_groups"]},
    }


async def test_empty_search_carries_advice(clock: FakeClock, store: Store) -> None:
    inp = SearchInput(
        query="x",
        concept_groups=[["联邦学习"], ["违约金"], ["碳达峰"]],
        options=SearchOptions(freshness="live"),
    )
    result = await _search(clock, store, CorpusBackend(), inp)
    assert result["candidate_count"] == 0
    assert result["advice"]["reason"] == "no_candidates"
    assert result["advice"]["suggested_concept_groups"] == [["联邦学习"], ["违约金"]]


class SkippedBackend(CorpusBackend):
    """Every grid page meets a slider that on_verification skip passes over."""

    async def grid(self, request: GridRequest, op: Any = None, follow: Any = None) -> Any:
        raise VerificationSkipped(gate="challenge", page="grid")


async def test_a_search_whose_channels_were_skipped_is_not_advised_to_drop_concepts(
    clock: FakeClock, store: Store
) -> None:
    """Nothing was searched: "2 concepts together find 0, keep the main one" was advice about a
    query CNKI never answered, and its call (without on_verification skip) waited for the person."""
    inp = SearchInput(
        query="碳排放",
        concept_groups=[["碳排放", "碳达峰"], ["驱动因素", "路径"]],
        options=SearchOptions(freshness="live", on_verification="skip"),
    )
    pipe = ResearchPipeline(SkippedBackend(), store, clock, now_year=lambda: 2026)
    plan = pipe.plan(inp)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan, ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    # No channel read a page: the search is `skipped` with no result (no advice in it either); it
    # was `partial` with a result of 0 papers (DESIGN.md "A search that read nothing")
    assert (record.status.value, record.result) == ("skipped", None)
    assert {e.code for e in record.errors} == {"VERIFICATION_SKIPPED"}
    channels = [e.details["channel"] for e in record.errors]  # one per channel, the first on top
    assert len(channels) > 1 and len(set(channels)) == len(channels)


async def test_the_suggested_call_keeps_what_the_search_was_asked_with(clock: FakeClock, store: Store) -> None:
    inp = SearchInput(
        query="联邦学习差分隐私",
        concept_groups=[["联邦学习差分隐私"]],
        limit=10,
        mode="precise",
        options=SearchOptions(freshness="live", max_pages=2, metadata="basic", on_verification="skip"),
    )
    result = await _search(clock, store, CorpusBackend(), inp)
    call = result["advice"]["suggested_call"]
    assert call["arguments"] == {
        "query": "联邦学习差分隐私",
        "concept_groups": result["advice"]["suggested_concept_groups"],
        "mode": "precise",
        "limit": 10,
        "options": {"max_pages": 2, "metadata": "basic", "on_verification": "skip"},
    }
    SearchInput.model_validate(call["arguments"])  # a call the tool takes as written


async def test_empty_search_with_years_says_the_years_may_be_the_cause(clock: FakeClock, store: Store) -> None:
    inp = SearchInput(
        query="x",
        concept_groups=[["联邦学习"], ["违约金"], ["碳达峰"]],
        year_from=2026,
        options=SearchOptions(freshness="live"),
    )
    result = await _search(clock, store, CorpusBackend(), inp)
    advice = result["advice"]
    assert result["candidate_count"] == 0 and advice["reason"] == "no_candidates"
    assert advice["suggested_call"]["arguments"]["year_from"] == 2026
    assert "2026–" in advice["message"] and "year_from" in advice["message"]


async def test_advice_keeps_the_years_and_survives_the_cache(clock: FakeClock, store: Store) -> None:
    # it asked 近五年的区块链 and asserted the call [["近五年"], ["区块链"]]: a time phrase as a
    # concept, beside the years it already was (now: test_one_concept_advice_never_... below)
    inp = SearchInput(
        query="联邦学习差分隐私", concept_groups=[["联邦学习差分隐私"]], year_from=2021,
        options=SearchOptions(freshness="live"),
    )  # fmt: skip
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    plan = pipe.plan(inp)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan, ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    call = record.result["advice"]["suggested_call"]
    assert call["arguments"]["year_from"] == 2021 and "year_to" not in call["arguments"]
    cached = pipe.cached(inp.model_copy(update={"options": SearchOptions()}), plan)
    assert cached is not None and cached.source == "cache"
    assert cached.advice is not None and cached.advice.suggested_call == call


async def test_one_concept_advice_never_suggests_a_time_phrase_or_the_search_just_run(
    clock: FakeClock, store: Store
) -> None:
    """近五年的区块链 was advised [["近五年"], ["区块链"]] (the time phrase, already the years, as a
    concept); 区块链 alone, which cannot be cut, was advised the very call just made: following it
    returned the cached answer with the same advice."""
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)
    for inp in (
        SearchInput(query="近五年的区块链", options=SearchOptions(freshness="live")),
        SearchInput(query="区块链", concept_groups=[["区块链"]], options=SearchOptions(freshness="live")),
    ):
        plan = pipe.plan(inp)

        async def runner(ctx: OperationContext, inp: SearchInput = inp, plan: Any = plan) -> Any:
            return await pipe.research(inp, plan, ctx)

        job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
        [record] = await clock.run_until_complete(job.finish())
        advice = record.result["advice"]
        assert advice["reason"] == "one_concept" and advice["suggested_concept_groups"] == [["区块链"]]
        assert advice["suggested_call"] is None and "同义词" in advice["message"]


async def test_an_empty_structured_search_with_years_says_the_years_may_be_the_cause(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(CorpusBackend(), store, clock, now_year=lambda: 2026)

    async def structured(inp: StructuredSearchInput) -> dict[str, Any]:
        async def runner(ctx: OperationContext) -> Any:
            return await pipe.structured(inp, ctx)

        job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
        [record] = await clock.run_until_complete(job.finish())
        assert record.status == "completed" and record.result is not None
        return dict(record.result)

    future = await structured(StructuredSearchInput(expression={"field": "title", "value": "违约金"}, year_from=2100))
    assert future["candidate_count"] == 0
    assert any("2100–" in w and "year_from" in w for w in future["warnings"])  # it said nothing
    found = await structured(StructuredSearchInput(expression={"field": "title", "value": "违约金"}, year_from=2010))
    assert found["candidate_count"] > 0 and not any("year_from" in w for w in found["warnings"])
    unbounded = await structured(StructuredSearchInput(expression={"field": "title", "value": "没有这个词"}))
    assert unbounded["candidate_count"] == 0 and unbounded["warnings"] == []


async def test_a_time_phrase_in_the_callers_concept_groups_is_named_as_a_term_not_a_window(
    clock: FakeClock, store: Store
) -> None:
    """concept_groups are searched as given: 近五年 there is a word every paper must hold, and the
    answer said nothing of it (only that the question's phrase was not applied)."""
    inp = SearchInput(
        query="近五年联邦学习的差分隐私保护",
        concept_groups=[["近五年"], ["联邦学习"], ["差分隐私"]],
        options=SearchOptions(freshness="live"),
    )
    result = await _search(clock, store, CorpusBackend(), inp)
    assert result["plan"]["concepts"] == [["近五年"], ["联邦学习"], ["差分隐私"]]  # as given
    assert any(
        "近五年" in w and "year_from" in w and "concept_groups" in w for w in result["plan"]["warnings"]
    )
    plain = SearchInput(
        query="联邦学习的差分隐私保护",
        concept_groups=[["联邦学习"], ["差分隐私"]],
        options=SearchOptions(freshness="live"),
    )
    assert not any(
        "时间短语" in w for w in (await _search(clock, store, CorpusBackend(), plain))["plan"]["warnings"]
    )
