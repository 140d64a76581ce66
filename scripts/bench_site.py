"""Site benchmarks against the simulator with real Chromium (used by `scripts/bench.py`).

`limiter`: N concurrent detail fetches through the production stack (BrowserHost, Limiter,
HumanGate, CnkiSite) against the bundled simulator with per-request latency. The simulator's
request log gives the arrival time of every request; the smallest gap between consecutive
starts must be at least 0.95 x the configured interval, and the wall time is compared with the
rate-bound lower bound (N - 1) x interval + mean latency."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from cnki_mcp.clock import SystemClock
from cnki_mcp.settings import Settings
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter, min_start_gap

DETAIL_PATH = "/kcms2/article/abstract"


async def _run_limiter(
    sim: SimServer, data_dir: Path, interval_ms: int, inflight: int, n: int, latency_s: float
) -> dict[str, Any]:
    settings = Settings(
        data_dir=data_dir,
        headless=True,
        site_origin=sim.origin,
        request_interval_ms=interval_ms,
        max_inflight=inflight,
    )
    clock = SystemClock()
    limiter = Limiter(clock, interval_ms / 1000.0, inflight)
    host = BrowserHost(settings, clock, environ=os.environ)
    gate = HumanGate(clock, limiter, headless=lambda: True)
    site = CnkiSite(settings, clock, host, limiter, gate)
    try:
        await host.ensure()  # launch outside the measurement
        sim.reset()  # clears the log (and tokens), so URLs are issued after it
        ids = [r.id for r in Corpus.load().records[:n]]
        urls = [sim.issue_detail_url(i) for i in ids]
        t0 = time.monotonic()
        pages = await asyncio.gather(*(site.detail(u) for u in urls))
        wall = time.monotonic() - t0
    finally:
        await site.close()
        await host.close()
    starts = sorted(e.t for e in sim.requests_for(DETAIL_PATH, "GET"))
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    interval = interval_ms / 1000.0
    return {
        "requests": len(starts),
        "parsed": sum(1 for p in pages if p.title),
        "min_gap": min_start_gap(starts),
        "median_gap": statistics.median(gaps) if gaps else 0.0,
        "interval": interval,
        "peak_inflight": limiter.peak_inflight,
        "wall": wall,
        "lower_bound": (n - 1) * interval + latency_s,
    }


def bench_limiter(args: argparse.Namespace) -> int:
    scenario = {"latency": [{"path": DETAIL_PATH, "ms": args.latency_ms, "jitter": 0.3}], "seed": 7}
    with SimServer(scenario=scenario) as sim, tempfile.TemporaryDirectory() as tmp:
        res = asyncio.run(_run_limiter(sim, Path(tmp), args.interval_ms, args.inflight, args.requests, args.latency_ms / 1000))
    ratio = res["min_gap"] / res["interval"]
    ok = ratio >= 0.95 and res["requests"] == args.requests
    table = (
        "| requests | interval | smallest start gap | ratio | median gap | peak in flight | wall | lower bound |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {res['requests']} | {res['interval'] * 1000:.0f} ms | {res['min_gap'] * 1000:.1f} ms | "
        f"{ratio:.3f} | {res['median_gap'] * 1000:.1f} ms | {res['peak_inflight']} | "
        f"{res['wall']:.2f} s | {res['lower_bound']:.2f} s |"
    )
    print(table)
    print(f"\nspacing {'holds' if ok else 'BROKEN'}: smallest gap / interval = {ratio:.3f} (required >= 0.95)")
    if args.write:
        from bench import _write_section  # type: ignore[import-not-found]

        section = (
            "## Limiter\n\n"
            f"Command: `.venv/bin/python scripts/bench.py limiter --requests {args.requests} "
            f"--interval-ms {args.interval_ms} --latency-ms {args.latency_ms} --write docs/benchmarks.md`\n\n"
            f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; date {dt.date.today().isoformat()}.\n\n"
            f"{args.requests} concurrent detail fetches through BrowserHost + Limiter + CnkiSite against the\n"
            f"simulator (latency {args.latency_ms} ms ± 30%, in-flight cap {args.inflight}). Start times are the\n"
            "simulator's arrival times from its request log.\n\n"
            f"{table}\n"
        )
        _write_section(Path(args.write), "Limiter", section)
    return 0 if ok else 1


def add_limiter_parser(sub: Any) -> None:
    p = sub.add_parser("limiter", help="limiter spacing under load through the simulator (real Chromium)")
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--interval-ms", type=int, default=500)
    p.add_argument("--inflight", type=int, default=6)
    p.add_argument("--latency-ms", type=int, default=1500)
    p.add_argument("--write", default=None, metavar="MD", help="also write the ## Limiter section")
    p.set_defaults(func=bench_limiter)
