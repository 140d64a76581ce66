"""Ranking quality and requests of the research search on a generated corpus (gen_big_corpus.py).

    .venv/bin/python scripts/bench_big_quality.py [--corpus main|heldout] [--metadata ranked|basic|all]

The same measurement as `bench.py quality` (`_quality_one`: the full research search with the
question's concept groups, `freshness=live`, default options otherwise, against
`tests/corpus_backend.py` with no browser, read back by the production parsers), on a generated
corpus instead of the bundled one, with the `metadata` mode of the search's options chosen here.
One loaded corpus serves every question. Prints one row per question and the means."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=("main", "heldout", "diverse"), default="main")
    ap.add_argument("--metadata", choices=("ranked", "basic", "all"), default="ranked")
    ap.add_argument("--question", action="append", default=None, help="question id (repeatable; default all)")
    args = ap.parse_args(argv)

    import json

    import bench  # type: ignore[import-not-found]
    from gen_big_corpus import ensure_corpus  # type: ignore[import-not-found]

    import cnki_mcp.pipeline.models as models
    import tests.corpus_backend as corpus_backend
    from cnki_mcp.rank import RelevanceRescueRanker
    from cnki_mcp.sim.corpus import Corpus

    directory = ensure_corpus(args.corpus)
    corpus = Corpus.load(directory)
    base_init = corpus_backend.CorpusBackend.__init__

    def init(self: Any, c: Corpus | None = None) -> None:  # every backend serves the generated corpus
        base_init(self, c or corpus)

    corpus_backend.CorpusBackend.__init__ = init  # type: ignore[method-assign]

    class Options(models.SearchOptions):  # what `_plan_for` builds, with the chosen metadata mode
        metadata: models.MetadataMode = args.metadata  # type: ignore[assignment]

    models.SearchOptions = Options  # type: ignore[misc]
    questions = [json.loads(x) for x in (directory / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x]
    if args.question:
        questions = [q for q in questions if q["id"] in args.question]
    print(f"| question | status | candidates | selected | requests | P@10 selected | nDCG@20 selected |  ({args.corpus}, {args.metadata})")
    print("|---|---|---:|---:|---:|---:|---:|")
    rows = []
    for q in questions:
        r = asyncio.run(bench._quality_one(q, RelevanceRescueRanker()))
        rows.append(r)
        print(f"| {q['id']} | {r['status']} | {r['candidates']} | {r['selected']} | {r['requests']} | {r['p10']:.2f}"
              f" | {r['ndcg20']:.3f} |", flush=True)

    def mean(key: str) -> float:
        return statistics.mean(r[key] for r in rows)

    print(f"| **mean** | | {mean('candidates'):.1f} | {mean('selected'):.1f} | {mean('requests'):.1f}"
          f" | **{mean('p10'):.3f}** | **{mean('ndcg20'):.3f}** |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
