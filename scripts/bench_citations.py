"""Request counts of the citation tools (docs/benchmarks.md §Citation graph): exact counts over
the simulator's citation API in process (tests/corpus_backend.py: the simulator's lists and JSON,
the production parser and pipeline, a fake clock). Run: .venv/bin/python scripts/bench_citations.py"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cnki_mcp.clock import FakeClock  # noqa: E402
from cnki_mcp.jobs import JobManager, MemorySink, OperationKind  # noqa: E402
from cnki_mcp.operations import DEFAULT_BUDGETS  # noqa: E402
from cnki_mcp.parse.citations import CitationItem, CitationType  # noqa: E402
from cnki_mcp.pipeline.citations import CitationListInput, citation_list  # noqa: E402
from cnki_mcp.pipeline.citegraph import GraphInput, citation_graph  # noqa: E402
from cnki_mcp.store import Store  # noqa: E402
from tests.corpus_backend import CorpusBackend, CorpusLinks  # noqa: E402


async def measure(label: str, seed: str, make: Any) -> None:
    clock = FakeClock()
    site = CorpusBackend()
    store = Store.open(Path(tempfile.mkdtemp()) / "data", clock)
    rec = site.corpus.by_id[seed]
    store.save_citation_node(
        CitationItem(title=rec.title, filename=rec.native_filename, detail_url=CorpusLinks().detail(rec.id)),
        clock.now(),
    )
    jobs = JobManager(clock, MemorySink())
    budget = DEFAULT_BUDGETS[OperationKind.CITATIONS].model_copy(update={"max_requests": 100_000})
    cells = []
    for _ in range(2):  # the second run: what the store saves
        job = jobs.start(OperationKind.CITATIONS, make(store, site, clock, rec.native_filename), budget)
        [record] = await clock.run_until_complete(job.finish())
        extra = record.result.get("graph")
        size = f"{len(extra['nodes'])} nodes, {len(extra['edges'])} edges" if extra else f"{record.result['total']} listed"
        cells.append((record.requests, size))
    store.close()
    print(f"| {label} | {cells[0][1]} | {cells[0][0]} | {cells[1][0]} |")


def lister(inp: dict[str, Any], kind: str) -> Any:
    def make(store: Store, site: Any, clock: Any, name: str) -> Any:
        async def runner(ctx: Any) -> Any:
            return await citation_list(store, site, clock, CitationListInput(paper=name, **inp), kind, ctx)  # type: ignore[arg-type]

        return runner

    return make


def grapher(**kw: Any) -> Any:
    def make(store: Store, site: Any, clock: Any, name: str) -> Any:
        async def runner(ctx: Any) -> Any:
            return await citation_graph(store, site, clock, GraphInput(seeds=[name], **kw), ctx)

        return runner

    return make


async def main() -> None:
    corpus = CorpusBackend().corpus
    rich = max(corpus.records, key=lambda r: (len(r.references), r.id)).id
    print("| case | size | requests | requests again |")
    print("|---|---|---|---|")
    await measure("get_citing r0306, first 20, all types", "r0306", lister({"limit": 20}, "citations"))
    await measure("get_citing r0306, journal, offset 10", "r0306",
                  lister({"types": [CitationType.JOURNAL], "offset": 10, "limit": 10}, "citations"))  # fmt: skip
    await measure(f"get_references {rich}, all", rich, lister({"limit": 50}, "references"))
    await measure("citation_graph r0306 citing, depth 1", "r0306", grapher(direction="citing"))
    await measure(f"citation_graph {rich} references, depth 2", rich, grapher(depth=2))
    await measure("citation_graph r0306 both, depth 2, 30 nodes", "r0306",
                  grapher(direction="both", depth=2, max_nodes=30))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
