"""Feedback pages once their words are certain (pipeline/overlap.py `_enrich_with_certain_feedback`,
DESIGN.md "Feedback pages once their words are certain") on a fake clock. A search too short to
overlap its enrichment with retrieval asks its feedback pages as soon as no later step can change
the settled ranking's words: the same words, pages, decisions and results as waiting for every
step, sent sooner, whatever order pages arrive in and wherever the search is cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus_backend import RecordingCorpus
from pipeline_fakes import ranking
from test_overlap import PAGE_SIZE, LongSite, assert_cuts_continue_like_whole, assert_paced_like_even, search

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import DEFAULT_POLICY, SearchPolicy
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.state import SearchState
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.store import Store
from tests.generated_corpus import generate_corpus

# q1 lists 600 papers, 20 a page: 100 candidates take 3 levels, too few to overlap (8 at least),
# and q1 cannot run out, so the feedback is asked after the enrichment steps
OPTIONS = {"candidate_target": 100, "max_pages": 40}
SETTLED = DEFAULT_POLICY.without("feedback_when")


def short(**options: Any) -> SearchInput:
    return SearchInput(query="自动驾驶 产品责任", options=SearchOptions(freshness="live", **OPTIONS, **options))


async def run(
    tmp_path: Path, name: str, policy: SearchPolicy = DEFAULT_POLICY, slow: dict[str, float] | None = None
) -> tuple[LongSite, OperationRecord, list[tuple[str, bool]]]:
    clock = FakeClock()
    site = LongSite(clock, slow)
    store = Store.open(tmp_path / name, clock)
    try:
        record = await search(clock, site, store, policy, JobManager(clock, MemorySink()), short())
        assert record.status == "completed", record.errors
        return site, record, ranking(store, record)
    finally:
        store.close()


def feedback_times(site: LongSite) -> list[float]:
    return [t for key, t in site.sent if key[0] == "grid" and key[1].startswith("feedback")]


async def test_feedback_pages_go_out_beside_the_steps_with_the_settled_words_and_results(tmp_path: Path) -> None:
    site, record, ranked = await run(tmp_path, "certain")
    settled, settled_record, settled_ranked = await run(tmp_path, "settled", SETTLED)
    pages = [t for key, t in site.sent if key[:2] == ("grid", "q1")]
    assert min(t for key, t in site.sent if key[0] == "export") > max(pages)  # no step beside retrieval
    # the feedback pages leave with the last step's reads, not after every step as under SETTLED
    first = min(feedback_times(site))
    assert len(feedback_times(site)) == 2 and any(t >= first for key, t in site.sent if key[0] != "grid")
    assert first < min(feedback_times(settled))
    assert all(t < min(feedback_times(settled)) for key, t in settled.sent if key[0] != "grid")
    # the same words (the same feedback queries), requests, ranking and selection
    assert sorted(k for k, _ in site.sent) == sorted(k for k, _ in settled.sent)
    assert ranked == settled_ranked
    assert record.requests == settled_record.requests
    assert record.result["selected_count"] == settled_record.result["selected_count"]
    assert site.clock.monotonic() < settled.clock.monotonic()  # the search ends sooner


@pytest.mark.parametrize("slow", [{"feedback": 4.0}, {"feedback": 0.05}, {"q1": 2.0}])
async def test_requests_and_ranking_do_not_depend_on_when_the_feedback_pages_land(
    tmp_path: Path, slow: dict[str, float]
) -> None:
    # the steps decide on the retrieval candidates alone: the same reads in the same order
    await assert_paced_like_even(run, tmp_path, slow)


async def test_a_search_cut_anywhere_continues_without_repeating_a_request(tmp_path: Path) -> None:
    whole_site, whole, _ = await run(tmp_path, "whole")
    log = [k for k, _ in whole_site.sent]
    first_feedback = next(i for i, k in enumerate(log) if k[0] == "grid" and k[1].startswith("feedback"))
    assert any(k[0] != "grid" for k in log[first_feedback:])  # some cuts fall beside the feedback pages
    await assert_cuts_continue_like_whole(
        tmp_path, range(2, len(log)), lambda cut: short(max_requests=cut), whole_site, whole
    )


class OverlapSite(LongSite):
    """Feedback pages that list ten retrieval candidates (papers 40-49, found by q1's third page)
    and ten papers of their own."""

    def channel(self, request: GridRequest) -> tuple[str, list[int]]:
        name, papers = super().channel(request)
        if name.startswith("feedback"):
            return name, [*range(40, 50), *papers[:10]]
        return name, papers


async def test_the_steps_beside_the_feedback_pages_decide_on_the_retrieval_candidates_alone(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    site = OverlapSite(clock)
    store = Store.open(tmp_path / "alone", clock)
    try:
        record = await search(clock, site, store, DEFAULT_POLICY, JobManager(clock, MemorySink()), short())
        assert record.status == "completed", record.errors
        st = SearchState.from_json(record.checkpoint)
        engine = ResearchPipeline(
            site, store, clock, workers=8, now_year=lambda: 2026, page_size=PAGE_SIZE, policy=DEFAULT_POLICY
        ).engine
        feedback = {c.id for c in st.feedback or ()}
        every, _ = engine.candidates(st, st.refs)
        alone, _ = engine.candidates(st, st.refs, retrieval_only=True)
    finally:
        store.close()
    assert len(feedback) == 2 and len(st.feedback_refs) == 20  # ten new papers from each page
    assert {c.ref for c in every} - {c.ref for c in alone} == set(st.feedback_refs)
    hit = [c for c in every if any(h.channel in feedback for h in c.hits)]
    assert len(hit) == 30  # the ten retrieval candidates both pages list, and their own twenty
    assert not any(h.channel in feedback for c in alone for h in c.hits)
    assert {c.ref for c in alone} == {ref for ref in st.refs if ref not in st.feedback_refs}


# --- the generated labelled corpus, through the simulator's own search -------------------------

# Questions of the generated `main` corpus whose words are certain a step before the last, and
# whose later steps would decide otherwise if they saw the feedback's hits (docs/benchmarks.md
# "Feedback pages once their words are certain").
CORPUS_QUESTIONS = ("m04", "m15")


@pytest.fixture(scope="module")
def main_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, dict[str, dict[str, Any]]]:
    out = generate_corpus(tmp_path_factory.mktemp("main-corpus"))
    lines = (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = {q["id"]: q for q in map(json.loads, filter(None, lines))}
    return Corpus.load(out), questions


async def corpus_search(
    tmp_path: Path, corpus: Corpus, question: dict[str, Any], policy: SearchPolicy
) -> tuple[RecordingCorpus, OperationRecord, list[tuple[str, bool]]]:
    clock = FakeClock()
    backend = RecordingCorpus(corpus)
    store = Store.open(tmp_path / f"{question['id']}-{policy.name}", clock)
    try:
        pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026, policy=policy)
        inp = SearchInput(
            query=question["question"],
            concept_groups=question["concepts"],
            options=SearchOptions(freshness="live"),
        )
        plan = pipe.plan(inp)

        async def runner(ctx: OperationContext) -> Any:
            return await pipe.research(inp, plan, ctx)

        job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
        [record] = await clock.run_until_complete(job.finish())
        assert record.status == "completed", record.errors
        return backend, record, ranking(store, record)
    finally:
        store.close()


def first_feedback_page(sent: list[tuple[str, str]]) -> int:
    """Where the first feedback page was sent: the first grid page after the first export (these
    searches do not overlap retrieval, so every retrieval page comes before any read)."""
    first_read = next(i for i, (kind, _) in enumerate(sent) if kind == "export")
    return next(i for i, (kind, _) in enumerate(sent) if kind == "grid" and i > first_read)


@pytest.mark.parametrize("qid", CORPUS_QUESTIONS)
async def test_on_the_generated_corpus_the_early_pages_change_no_request_and_no_result(
    tmp_path: Path, main_corpus: tuple[Corpus, dict[str, dict[str, Any]]], qid: str
) -> None:
    corpus, questions = main_corpus
    certain, record, ranked = await corpus_search(tmp_path, corpus, questions[qid], DEFAULT_POLICY)
    settled, settled_record, settled_ranked = await corpus_search(tmp_path, corpus, questions[qid], SETTLED)
    # the feedback pages left while reads of the steps were still to come
    assert first_feedback_page(certain.sent) < first_feedback_page(settled.sent)
    assert sorted(certain.sent) == sorted(settled.sent)
    assert certain.requests == settled.requests
    assert ranked == settled_ranked
    assert record.result["selected_count"] == settled_record.result["selected_count"]
