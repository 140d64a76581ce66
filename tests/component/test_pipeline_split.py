"""A search whose expression compiles to several queries (rows over 120 characters, query/cnf.py):
the queries run as extra pages of one channel, each with its own cursor; the candidates are the
union the expression means (set algebra over the corpus); coverage says how many queries ran;
a budget stop and `continue` repeat no request. The backend is `CorpusBackend` (the simulator's
evaluator and renderers, the production parsers) on a fake clock."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from corpus_backend import CorpusBackend, record_id_of

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.models import GridPage
from cnki_mcp.pipeline.models import StructuredOptions, StructuredSearchInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.state import SearchState
from cnki_mcp.query.compiler import compile_expression
from cnki_mcp.sim.corpus import Corpus, SimAuthor, SimRecord
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store

GROUPS = [[f"{g}号概念{i:02d}" + "词" * 26 for i in range(12)] for g in range(3)]
EXPRESSION = {
    "op": "and",
    "items": [{"op": "or", "items": [{"field": "title", "value": t} for t in g]} for g in GROUPS],
}


def _corpus() -> Corpus:
    rng = random.Random(42)
    records = []
    for i in range(90):
        picked = [t for g in GROUPS if rng.random() < 0.8 for t in rng.sample(g, 1)]
        records.append(
            SimRecord(
                id=f"s{i:03d}",
                title="；".join(picked) or "无关",
                type="期刊",
                authors=(SimAuthor(f"作者{i}"),),
                source="测试学报",
                year=2020,
            )
        )
    return Corpus(records=records, journals=[])


CORPUS = _corpus()
EXPECTED = {r.id for r in CORPUS.records if all(any(t in r.title for t in g) for g in GROUPS)}


class LoggingBackend(CorpusBackend):
    """Logs (query, page, cursor) of every grid request sent."""

    def __init__(self) -> None:
        super().__init__(CORPUS)
        self.log: list[tuple[str, int, str | None]] = []

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        page = await super().grid(request, op)  # charges the budget first: refused requests are not sent
        key = json.dumps(request.subject, sort_keys=True, ensure_ascii=False)
        self.log.append((key, request.page, request.cursor))
        return page


def _inp(**options: Any) -> StructuredSearchInput:
    return StructuredSearchInput(
        expression=EXPRESSION, limit=100, options=StructuredOptions(freshness="live", **options)
    )


async def _run(
    clock: FakeClock, pipe: ResearchPipeline, inp: StructuredSearchInput, jobs: JobManager
) -> OperationRecord:
    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    job = jobs.start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    return record


def _found(store: Store, record: OperationRecord) -> set[str]:
    refs = [r["record_ref"] for r in record.result["results"]]
    return {record_id_of(p.locator) or "" for p in store.papers_by_refs(refs).values()}


def test_the_expression_needs_two_queries_and_the_corpus_hits_and_misses_it() -> None:
    compiled = compile_expression(EXPRESSION)
    assert (compiled.split, compiled.queries) == ("queries", 2)
    assert 10 < len(EXPECTED) < len(CORPUS.records)


async def test_split_queries_run_as_pages_of_one_channel_and_return_the_union(
    clock: FakeClock, store: Store
) -> None:
    backend = LoggingBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026, page_size=10)
    record = await _run(clock, pipe, _inp(max_pages=10), JobManager(clock, MemorySink()))
    assert record.status == "completed"
    (coverage,) = record.result["coverage"]
    assert coverage["channel"] == "native" and coverage["queries"] == 2
    assert coverage["exhausted"] and coverage["pages"] == len(backend.log)
    assert _found(store, record) == EXPECTED
    queries = {key for key, _, _ in backend.log}
    assert len(queries) == 2
    assert len(set(backend.log)) == len(backend.log)  # no page asked twice
    for key in queries:  # each query paged on its own, with the cursor of its previous page
        pages = [(page, cursor) for k, page, cursor in backend.log if k == key]
        assert [p for p, _ in pages] == list(range(1, len(pages) + 1))
        assert all((c is None) == (p == 1) for p, c in pages)
    assert record.result["plan"]["channels"] == [
        {"id": "native", "field": "expression", "weight": 1.0, "reason": "知网原生条件与排序"}
    ]


async def test_split_search_stopped_by_budget_continues_without_repeating_a_request(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    reference = LoggingBackend()
    ref_clock = FakeClock()
    with Store.open(tmp_path / "reference", ref_clock) as ref_store:
        ref_pipe = ResearchPipeline(reference, ref_store, ref_clock, now_year=lambda: 2026, page_size=10)
        full = await _run(ref_clock, ref_pipe, _inp(max_pages=10), JobManager(ref_clock, MemorySink()))
        assert _found(ref_store, full) == EXPECTED

    backend = LoggingBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026, page_size=10)
    sink = MemorySink()
    jobs = JobManager(clock, sink)
    inp = _inp(max_pages=10, max_requests=3)
    stopped = await _run(clock, pipe, inp, jobs)
    assert [e.code for e in stopped.errors] == ["BUDGET_EXHAUSTED"]
    saved = sink.load(stopped.operation_id)
    assert saved is not None and saved.checkpoint is not None
    lanes = SearchState.from_json(saved.checkpoint).lanes["native"]
    assert sum(lane.pages for lane in lanes) == 3 and all(lane.pages for lane in lanes)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    job = jobs.continue_(stopped.operation_id, runner, additional_requests=100)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status == "completed"
    assert len(set(backend.log)) == len(backend.log) == len(reference.log)
    assert _found(store, done) == EXPECTED
    assert done.result["coverage"][0]["queries"] == 2


def test_research_channels_compile_every_plan_within_the_planning_limits() -> None:
    from cnki_mcp.pipeline.research import research_channels

    groups = [[f"{g}{i} " + "长" * 77 for i in range(6)] for g in range(8)]  # 8 x 6 x 80 characters
    assert all(len(t) == 80 for g in groups for t in g)
    channels = research_channels(groups)
    assert [c.id for c in channels] == ["q1", "q2", "q3"]
    assert all(c.queries == 1 for c in channels)


def test_split_channel_survives_the_checkpoint_round_trip() -> None:
    from cnki_mcp.pipeline.state import Channel

    compiled = compile_expression(EXPRESSION)
    channel = Channel.compiled("native", "expression", 1.0, "r", compiled)
    again = Channel.from_dict(json.loads(json.dumps(channel.to_dict())))
    assert again == channel and again.queries == 2
    assert [again.subject_at(j) for j in range(2)] == compiled.subjects
    single = Channel.compiled("q1", "title", 1.0, "r", compile_expression({"field": "title", "value": "a"}))
    assert "subjects" not in single.to_dict() and single.queries == 1  # checkpoints of old shape
