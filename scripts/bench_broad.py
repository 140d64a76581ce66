"""`bench.py broad`: what the policies that overlap retrieval change at large candidate targets.

The labelled questions of the generated corpora list a few hundred papers per channel, so their
searches end before `EnrichmentStart.LAST_PAGES` can start (docs/benchmarks.md "Request
policies" cannot show it). This bench runs broad questions instead: the growth question `g01` and
five more of the same shape built from the `main` corpus's vocabulary (one concept group whose
terms run through a discipline's topics), unlabelled, at targets where the subject channel pages
deep. Per question and target it runs the default policy and its ablations `default-feedback_start`
and `default-enrichment_start` in process (`tests/corpus_backend.py` on a fake clock, no browser;
deterministic: requests are counted, not timed) and compares requests, the feedback words and the
selected top 20. Writes the `## Broad questions at large targets` section of docs/benchmarks.md."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import platform
import tempfile
from pathlib import Path
from typing import Any

import bench  # type: ignore[import-not-found]
import bench_policy  # type: ignore[import-not-found]

POLICIES = ("default", "default-feedback_start", "default-enrichment_start")
BROAD = [
    ("g01", [["人工智能", "深度学习", "神经网络", "数字", "智能", "知识图谱"]]),
    ("b-law", [["法律", "法学", "责任", "权利", "规制", "司法"]]),
    ("b-med", [["临床", "患者", "治疗", "疾病", "医学", "中医"]]),
    ("b-econ", [["经济", "金融", "市场", "产业", "绿色", "碳"]]),
    ("b-eng", [["材料", "制造", "电池", "增材", "结构", "检测"]]),
    ("b-edu", [["教育", "教学", "学生", "课程", "教师", "学习"]]),
]


async def run_one(
    backend: Any, concepts: list[list[str]], policy: Any, target: int, max_pages: int, pacing: Any = None
) -> dict[str, Any]:
    """One search: requests, the subject channel's total, candidates, feedback words, selected top 20.
    `pacing`: the `Pacing` its engine meets (OverlapDepth.PACED; None: not known)."""
    from cnki_mcp.clock import FakeClock
    from cnki_mcp.jobs import JobManager, MemorySink, OperationKind
    from cnki_mcp.pipeline.models import SearchInput, SearchOptions
    from cnki_mcp.pipeline.research import ResearchPipeline
    from cnki_mcp.rank import RelevanceRescueRanker
    from cnki_mcp.store import Store

    clock = FakeClock()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp), clock)
        try:
            backend.requests.clear()
            pipe = ResearchPipeline(
                backend,
                store,
                clock,
                now_year=lambda: 2026,
                ranker=RelevanceRescueRanker(),
                policy=policy,
                pacing=lambda: pacing,
            )
            options = SearchOptions(freshness="live", candidate_target=target, max_pages=max_pages)
            inp = SearchInput(query="".join(concepts[0][:2]), concept_groups=concepts, options=options)
            plan = pipe.plan(inp)
            job = JobManager(clock, MemorySink()).start(
                OperationKind.SEARCH, lambda ctx: pipe.research(inp, plan, ctx), inp.budget()
            )
            record = await bench._drive(clock, job.finish())
            result = record.result or {}
            coverage = {c["channel"]: c for c in result.get("coverage", [])}
            words = [c["reason"].rsplit("：", 1)[-1] for c in coverage.values() if c["channel"].startswith("feedback")]
            top = [e.record_ref for e in store.search_results(result["search_id"], "selected", 0, 20).items]
            return {
                "status": record.status,
                "requests": record.requests,
                "q1_total": coverage.get("q1", {}).get("total"),
                "q1_pages": coverage.get("q1", {}).get("pages"),
                "candidates": result.get("candidate_count"),
                "words": words,
                "top": top,
            }
        finally:
            store.close()


def _table(target: int, rows: list[tuple[str, dict[str, dict[str, Any]]]], policies: tuple[str, ...] = POLICIES) -> str:
    names = " / ".join(p.removeprefix("default") or "default" for p in policies)
    head = (
        f"### Target {target}\n\n"
        f"| question | q1 total | q1 pages | candidates | requests {names}"
        " | feedback words | same words | top 20 same (set) | top 10 same order |\n"
        "|---|---:|---:|---:|---|---|---|---|---|"
    )
    lines = [head]
    for qid, runs in rows:
        d, *others = (runs[p] for p in policies)
        same_words = all(o["words"] == d["words"] for o in others)
        same_top = all(set(o["top"]) == set(d["top"]) for o in others)
        same_order = all(o["top"][:10] == d["top"][:10] for o in others)
        requests = " / ".join(str(runs[p]["requests"]) for p in policies)
        lines.append(
            f"| {qid} | {d['q1_total']} | {d['q1_pages']} | {d['candidates']}"
            f" | {requests} | {'、'.join(d['words'])}"
            f" | {'yes' if same_words else 'no'} | {'yes' if same_top else 'no'} | {'yes' if same_order else 'no'} |"
        )
    return "\n".join(lines)


def bench_broad(args: argparse.Namespace) -> int:
    from cnki_mcp.site.backend import Pacing

    if args.write and (args.pacing or args.corpus != "main"):
        # the written section is the unpaced comparison on `main`; the others are printed only
        raise SystemExit("--write writes the main corpus's unpaced section: drop --pacing / --corpus, or --write")
    backend, _ = bench_policy._corpus(args.corpus)
    pacing = None
    policies = POLICIES
    if args.pacing:  # the default against one paced rule set back, at that pacing (printed only)
        interval, latency = (float(x) for x in args.pacing.split(","))
        pacing, policies = Pacing(interval, latency), ("default", f"default-{args.against}")
    tables = []
    for target in (int(x) for x in args.targets.split(",")):
        rows = []
        for qid, concepts in BROAD:
            runs = {
                name: asyncio.run(
                    run_one(backend, concepts, bench_policy._policy(name), target, args.max_pages, pacing)
                )
                for name in policies
            }
            rows.append((qid, runs))
        tables.append(_table(target, rows, policies))
        print(tables[-1], flush=True)
    if args.write:
        bench._write_section(Path(args.write), "Broad questions at large targets", _section(args, tables))
        print(f"\nwritten to {args.write}")
    return 0


def _section(args: argparse.Namespace, tables: list[str]) -> str:
    return (
        "## Broad questions at large targets\n\n"
        f"Command: `.venv/bin/python scripts/bench.py broad --targets {args.targets} --write docs/benchmarks.md`\n\n"
        f"Date {dt.date.today().isoformat()}, Python {platform.python_version()}. Deterministic: requests are\n"
        "counted, not timed.\n\n"
        "What the two policies that overlap retrieval (`EnrichmentStart.LAST_PAGES`,\n"
        "`FeedbackStart.WITH_SNAPSHOT`, DESIGN.md \"Enrichment beside retrieval\") change where they\n"
        "apply: six broad questions of the generated `main` corpus (`scripts/bench_broad.py`: `g01`, the\n"
        "growth question, and five of its shape, unlabelled), explicit concept groups, `max_pages`\n"
        f"{args.max_pages}, `freshness=live`, a fresh store each, in process (no template capture).\n"
        "Each row compares the default with its two ablations: requests, the feedback words, and the\n"
        "selected top 20 (as a set, and the top 10 in order). Where q1 lists fewer papers than the\n"
        "target plus two pages, the feedback waits for the end (a q1 that runs out answers it locally).\n\n"
        + "\n\n".join(tables)
        + "\n"
    )


def add_broad_parser(sub: Any) -> None:
    p = sub.add_parser("broad", help="requests and results of the overlapping policies on broad questions")
    p.add_argument("--targets", default="1000,3000", help="comma-separated candidate targets")
    p.add_argument("--max-pages", type=int, default=100)
    p.add_argument("--write", default=None, metavar="MD", help="also write the section of this file")
    p.add_argument("--pacing", default=None, metavar="INTERVAL,LATENCY",
                   help="seconds: the default against default-RULE (--against) at this pacing; printed, not written")
    p.add_argument("--against", default="overlap_depth", choices=bench_policy.PACED_ABLATIONS,
                   help="with --pacing: the paced rule set back in the compared policy")
    p.add_argument("--corpus", default="main", choices=("main", "heldout", "diverse"),
                   help="the generated corpus the questions run on (their words are main's vocabulary)")
    p.set_defaults(func=bench_broad)
