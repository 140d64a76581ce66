"""`bench.py policy`: CNKI requests and ranking quality of the research search per request policy
(cnki_mcp/pipeline/policy.py, DESIGN.md "Request policies") on the bundled corpus and the generated
ones (scripts/gen_big_corpus.py); writes the `## Request policies` section of docs/benchmarks.md.
Deterministic: requests are counted, not timed."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import platform
import statistics
from pathlib import Path
from typing import Any

import bench  # type: ignore[import-not-found]  # scripts/bench.py: the quality run and the writer

CORPORA = ("bundled", "main", "heldout", "diverse")
# the corpora a run without --corpus measures (the "Request policies" section); `diverse` is asked
# by name (docs/benchmarks.md "Request policies on the diverse corpus")
DEFAULT_CORPORA = ("bundled", "main", "heldout")
ABLATIONS = ("subset_channels", "enrichment", "subset_pages", "watch_depth", "reading", "journal_timing", "enrichment_start", "feedback_start", "closing_pages", "feedback_when")
# rules that act only under the request limiter (the in-process policy bench has none, so there
# they change nothing): named by `bench.py growth --policy default-RULE`, not run by `policy`
# and rules that change when requests go out, not which (journal_prefetch: the same requests on all
# four corpora), or act only on searches longer than the bench's (closing_steps: no search at
# target 300 takes a closing snapshot; at 1,000 it saves an export, `bench.py broad --against`)
PACED_ABLATIONS = ("overlap_depth", "journal_prefetch", "snapshot_reads", "middle_pages", "closing_steps")


def _policy(name: str) -> Any:
    from cnki_mcp.pipeline.policy import DEFAULT_POLICY, POLICIES

    if name in POLICIES:
        return POLICIES[name]
    if "+" in name:  # default+FIELD=INT,...: a variant of a numeric setting (measurements only)
        from dataclasses import replace

        base, _, settings = name.partition("+")
        if base != "default":
            raise SystemExit(f"a variant is default+FIELD=N,...: {name}")
        values = {k: int(v) for k, _, v in (x.partition("=") for x in settings.split(","))}
        return replace(DEFAULT_POLICY, name=name, **values)
    base, _, rule = name.partition("-")
    assert base == "default" and rule in (*ABLATIONS, *PACED_ABLATIONS), name
    return DEFAULT_POLICY.without(rule)


def _corpus(name: str) -> tuple[Any, list[dict[str, Any]]]:
    """(backend, questions) of the bundled corpus or a generated one (scripts/gen_big_corpus.py)."""
    import json

    from cnki_mcp.sim.corpus import Corpus
    from tests.corpus_backend import CorpusBackend

    if name == "bundled":
        path, backend = bench.QUESTIONS, CorpusBackend()
    else:
        from gen_big_corpus import ensure_corpus  # type: ignore[import-not-found]

        directory = ensure_corpus(name)
        path, backend = directory / "questions.jsonl", CorpusBackend(Corpus.load(directory))
    lines = path.read_text(encoding="utf-8").splitlines()
    return backend, [json.loads(line) for line in lines if line.strip()]


def bench_policy(args: argparse.Namespace) -> int:
    from cnki_mcp.rank import RelevanceRescueRanker

    names = args.policy or ["reference", "default", *(f"default-{r}" for r in ABLATIONS)]
    sections: list[str] = []
    for corpus in args.corpus or list(DEFAULT_CORPORA):
        backend, questions = _corpus(corpus)
        if args.questions:
            questions = questions[: args.questions]
        runs = {
            name: [
                asyncio.run(bench._quality_one(q, RelevanceRescueRanker(), policy=_policy(name), backend=backend))
                for q in questions
            ]
            for name in names
        }
        sections.append(_policy_tables(corpus, questions, runs))
        print(sections[-1], flush=True)
    if args.write:
        bench._write_section(Path(args.write), "Request policies", _policy_section(sections, args))
        print(f"\nwritten to {args.write}")
    return 0


def _policy_tables(corpus: str, questions: list[dict[str, Any]], runs: dict[str, list[dict[str, Any]]]) -> str:
    def mean(name: str, key: str) -> float:
        return statistics.mean(r[key] for r in runs[name])

    base = runs.get("reference")
    head = (
        "| policy | requests | vs reference | grid | detail | export | journal | P@10 sel. | nDCG@20 sel. |"
        " top-10 readable | selected | candidates |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [f"### {corpus} ({len(questions)} questions)", "", head]
    for name in runs:
        ratio = f"{mean(name, 'requests') / mean('reference', 'requests'):.1%}" if base else "-"
        wanted = statistics.mean(min(10, r["selected"]) for r in runs[name])
        lines.append(
            f"| {name} | {mean(name, 'requests'):.2f} | {ratio} | {mean(name, 'grid'):.2f} |"
            f" {mean(name, 'detail'):.2f} | {mean(name, 'export'):.2f} | {mean(name, 'journal'):.2f} |"
            f" {mean(name, 'p10'):.4f} |"
            f" {mean(name, 'ndcg20'):.4f} | {mean(name, 'readable'):.2f} of {wanted:.2f} |"
            f" {mean(name, 'selected'):.1f} | {mean(name, 'candidates'):.1f} |"
        )
    others = [n for n in runs if n not in ("reference", "default")]
    if base and "default" in runs:
        cols = "".join(f" {n} req. | {n} nDCG@20 |" for n in others)
        lines += [
            "",
            "| question | requests ref. | requests default | P@10 ref. | P@10 default | nDCG@20 ref. |"
            f" nDCG@20 default |{cols}",
            "|---|---:|---:|---:|---:|---:|---:|" + "---:|---:|" * len(others),
        ]
        for i, q in enumerate(questions):
            a, b = runs["reference"][i], runs["default"][i]
            extra = "".join(f" {runs[n][i]['requests']} | {runs[n][i]['ndcg20']:.4f} |" for n in others)
            lines.append(
                f"| {q['id']} | {a['requests']} | {b['requests']} | {a['p10']:.2f} | {b['p10']:.2f} |"
                f" {a['ndcg20']:.4f} | {b['ndcg20']:.4f} |{extra}"
            )
    return "\n".join(lines)


def _policy_section(sections: list[str], args: argparse.Namespace) -> str:
    return (
        "## Request policies\n\n"
        "Command: `.venv/bin/python scripts/bench.py policy --write docs/benchmarks.md`\n\n"
        f"Date {dt.date.today().isoformat()}, Python {platform.python_version()}. Deterministic: requests are\n"
        "counted, not timed.\n\n"
        "Each question runs the full research search as in *Ranking quality* (explicit concept groups,\n"
        "default options: candidate_target 300, max_pages 5, page size 50, `freshness=live`, a fresh\n"
        "store per question, so no detail or journal page is reused across questions) under each\n"
        "request policy of `cnki_mcp/pipeline/policy.py` (DESIGN.md \"Request policies\"): `reference`\n"
        "is the reference design (every channel asked, the top 30/40/60/80 enriched), `default` what\n"
        "`search` runs, and `default-RULE` the default with one rule set back to the reference (the\n"
        "ablation of that rule). Corpora: `bundled` (the 30 questions of cnki_mcp/sim/data), `main`\n"
        "and `heldout` (scripts/gen_big_corpus.py, ~10,000 records; `heldout` has another seed and\n"
        "other questions and was not used to choose the defaults). *top-10 readable*: of the first 10\n"
        "selected (fewer when fewer are selected), how many carry their abstract and keywords (a\n"
        "detail page or CNKI's batch export) and, for a journal article, its journal lookup (tier).\n"
        "Requests are grid + detail + batch export + journal requests (no template capture: the\n"
        "in-process backend needs none).\n\n"
        + "\n\n".join(sections)
        + "\n"
    )


def add_policy_parser(sub: Any) -> None:
    po = sub.add_parser("policy", help="CNKI requests and quality of the research search per request policy")
    po.add_argument("--corpus", action="append", choices=CORPORA, default=None, help="repeatable; default bundled, main and heldout")
    po.add_argument("--policy", action="append", default=None, help="repeatable; default reference, default, ablations")
    po.add_argument("--questions", type=int, default=0, help="only the first N questions of each corpus")
    po.add_argument(
        "--write", default=None, metavar="MD", help="also write the ## Request policies section of this file"
    )
    po.set_defaults(func=bench_policy)
