"""The closing snapshot's steps (`SearchPolicy.closing_steps`, pipeline/overlap.py, DESIGN.md
"Enrichment beside retrieval") on the generated corpus and a fake clock: the growth benchmark's
question at 1,000 candidates. The closing snapshot exports abstracts in one step; the abstracts a
second step would have exported are decided by the step after retrieval with the last pages'
candidates, here in the same request: one export fewer, the same journal and grid pages, the same results, and a
search cut inside the closing snapshot continues with the requests of the uncut one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus_backend import RecordingCorpus
from pipeline_fakes import duplicates, ranking

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.operations import CHECKPOINT_LOG
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.policy import DEFAULT_POLICY, SearchPolicy
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.state import Channel, SearchState, enrich_event
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.site.backend import Pacing
from cnki_mcp.store import Store
from tests.generated_corpus import generate_corpus

# the growth benchmark's latencies and pacing (scripts/bench_growth.py defaults)
LATENCY = {"grid": 0.7, "export": 0.7, "journal": 0.6}
GROWTH_PACING = Pacing(0.2, 0.7)
UNFOLDED = DEFAULT_POLICY.without("closing_steps")


def keys(site: RecordingCorpus, kind: str | None = None) -> list[tuple[str, str]]:
    return sorted(k for k in site.sent if kind is None or k[0] == kind)


@pytest.fixture(scope="module")
def growth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, dict[str, Any]]:
    out = generate_corpus(tmp_path_factory.mktemp("main-corpus"))
    [line] = (out / "growth.jsonl").read_text(encoding="utf-8").splitlines()
    return Corpus.load(out), json.loads(line)


def growth_input(question: dict[str, Any], **budget: Any) -> SearchInput:
    return SearchInput(
        query=question["question"],
        concept_groups=question["concepts"],
        options=SearchOptions(freshness="live", candidate_target=1000, max_pages=100, **budget),
    )


async def searched(
    directory: Path, corpus: Corpus, question: dict[str, Any], policy: SearchPolicy, cut: int | None = None
) -> tuple[RecordingCorpus, OperationRecord, list[tuple[str, bool]]]:
    """The growth question under `policy`; with `cut`, stopped by a budget of `cut` requests and
    continued with more. The site, the (last) record and the ranking (ref, selected)."""
    clock = FakeClock()
    site = RecordingCorpus(corpus, clock, LATENCY)
    store = Store.open(directory, clock)
    try:
        pipe = ResearchPipeline(
            site, store, clock, now_year=lambda: 2026, policy=policy, pacing=lambda: GROWTH_PACING
        )
        inp = growth_input(question) if cut is None else growth_input(question, max_requests=cut)
        plan = pipe.plan(inp)

        async def runner(ctx: OperationContext) -> Any:
            return await pipe.research(inp, plan, ctx)

        jobs = JobManager(clock, MemorySink())
        [record] = await clock.run_until_complete(jobs.start(OperationKind.SEARCH, runner, inp.budget()).finish())
        if cut is not None:
            assert record.status == "partial" and record.errors[0].code == "BUDGET_EXHAUSTED"
            job = jobs.continue_(record.operation_id, runner, additional_requests=1_000)
            [record] = await clock.run_until_complete(job.finish())
        assert record.status == "completed", record.errors
        return site, record, ranking(store, record)
    finally:
        store.close()


def exports(site: RecordingCorpus) -> list[list[str]]:
    return [key.split(",") for kind, key in site.sent if kind == "export"]


async def test_the_abstracts_a_second_closing_step_would_export_go_with_the_last_pages_in_one_request(
    tmp_path: Path, growth: tuple[Corpus, dict[str, Any]]
) -> None:
    corpus, question = growth
    folded, record, ranked = await searched(tmp_path / "folded", corpus, question, DEFAULT_POLICY)
    unfolded, unfolded_record, unfolded_ranked = await searched(tmp_path / "unfolded", corpus, question, UNFOLDED)
    # the same pages and journals; one export fewer: the unfolded search's last two exports (the
    # closing snapshot's second step, then the step after retrieval) are the folded one's last
    assert keys(folded, "grid") == keys(unfolded, "grid")
    assert keys(folded, "journal") == keys(unfolded, "journal")
    assert len(exports(folded)) == len(exports(unfolded)) - 1
    assert exports(folded)[:-1] == exports(unfolded)[:-2]
    assert sorted(exports(folded)[-1]) == sorted(exports(unfolded)[-2] + exports(unfolded)[-1])
    assert record.requests == unfolded_record.requests - 1
    # the same ranking, selection and readable top
    assert ranked == unfolded_ranked
    assert record.result["selected_count"] == unfolded_record.result["selected_count"]
    assert all(r["abstract_read"] and r["quality_known"] for r in record.result["results"][:10])


async def test_a_search_cut_inside_the_closing_snapshot_continues_with_the_requests_of_the_uncut_one(
    tmp_path: Path, growth: tuple[Corpus, dict[str, Any]]
) -> None:
    corpus, question = growth
    whole, record, ranked = await searched(tmp_path / "whole", corpus, question, DEFAULT_POLICY)
    checkpoint = SearchState.from_json(record.checkpoint)
    assert checkpoint.closing_steps == 1
    # the closing snapshot's export is the second to last: cut with it refused by the budget (the
    # continued search sends it), with it the last one sent, and one request later
    closing = [i for i, (kind, _) in enumerate(whole.sent) if kind == "export"][-2]
    for cut in (closing, closing + 1, closing + 2):
        site, done, done_ranked = await searched(tmp_path / f"cut{cut}", corpus, question, DEFAULT_POLICY, cut)
        assert duplicates(site.sent) == [], cut
        assert keys(site) == keys(whole), cut
        assert done_ranked == ranked, cut
        assert SearchState.from_json(done.checkpoint).closing_steps == 1, cut


def test_the_closing_steps_taken_are_kept_by_the_checkpoint_in_their_batches_entries() -> None:
    q1 = Channel("q1", "subject", 1.0, "r", {}, "a", "f1")
    st = SearchState("s", "k", {"candidate_target": 10}, {"method": "explicit", "channels": [q1.to_dict()]})
    step = enrich_event("pool", ["r1", "r2"], closing=True)
    st.apply(step)
    assert (st.closing_steps, st.pool) == (1, ["r1", "r2"])
    assert SearchState.from_json(st.to_json()).closing_steps == 1
    # one appended entry holds both the step's abstracts and its count: a kill lands both or neither
    blank = SearchState("s", "k", {}, st.plan).to_json()
    replayed = SearchState.from_json({**blank, CHECKPOINT_LOG: [enrich_event("pool", ["r0"]), step]})
    assert (replayed.closing_steps, replayed.pool) == (1, ["r0", "r1", "r2"])
    before = SearchState.from_json({**blank, CHECKPOINT_LOG: [enrich_event("pool", ["r0"])]})
    assert (before.closing_steps, before.pool) == (0, ["r0"])
    # a log written when the count was an entry of its own still continues
    older = SearchState.from_json({**blank, CHECKPOINT_LOG: [{"e": "closing"}, enrich_event("pool", ["r1"])]})
    assert (older.closing_steps, older.pool) == (1, ["r1"])
