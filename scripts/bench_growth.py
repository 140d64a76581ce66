"""Growth benchmark: one research search at candidate targets 100 -> 3,000 on the large corpus.

`scripts/bench.py growth` (this module's `add_growth_parser`). Every run is a fresh child process
(so its peak RSS is its own) with a fresh data directory, talking to the simulator in another
process (`cnki-mcp sim --corpus DIR`, so the simulator's CPU is measured apart and does not
share the server's interpreter), through the production stack: `Services.open(settings)` served by
`build_server` and called with the MCP SDK's in-memory client, as `bench.py search` does.

Columns per target (median over `--repeats`, range in brackets when repeated):

* requests: CNKI requests in the simulator's log (the home page a fresh profile visits first,
  AdvSearch, grid POSTs, detail and journal pages, batch exports; page assets excluded), split by
  kind; requests per candidate;
* wall: the `search` call, Chromium already started, the client connected (tools listed, its
  validator loaded: `_connected`);
* bound: the limiter's lower bound for the requests this run sent, the larger of
  - spacing: (N - 1) x interval + the latency of the last request's kind (the limiter starts at
    most one request per interval), and
  - chain: the longest run of dependent requests, over the grid queries: the requests that
    started before the query's first page (a cold session's home page, AdvSearch and capture
    click: one interval each, the limiter spaces their starts), then each page of the query,
    which needs the previous page's cursor (pages x grid latency), then the enrichment tail
    (detail or export, + journal latency, when such reads started after the query's first page).
    The tail is the design's dependent stages (the last candidates read after they are listed);
    a search that reads beside its last pages need not wait for it, so `bound (strict)` leaves
    it out;
  so wall / bound near 1 means the search waits on the limiter and on nothing else;
* bound (run): the same bound with the latencies this run's requests actually had (jitter drawn
  by the simulator) instead of the nominal ones: the page chain is the sum of that query's page
  durations, the spacing ends with the last request's own duration. It removes the jitter's
  noise from the ratio (at 3,000 candidates 60 jittered pages can differ from 60 x 0.7 s by a
  second either way); the nominal bound stays the headline figure;
* bound (strict): only what the limiter and the site impose on the requests this run sent: the
  spacing, and each grid query's page chain after the requests started before it, with no
  enrichment tail (a search may read beside its last pages, as this one does) and with the chain
  sharing the limiter with the other requests (`shared_chain`): two pages with m requests started
  between them are at least max(grid latency, (m + 1) x interval) apart. At 200 ms two requests
  fit between pages 0.7 s apart for free; at 500 ms each request beside the chain costs it up to
  0.3 s. `wall / bound (strict, run)`: against the spacing and q1's chain with the latencies the
  run drew (no tail);
* server RSS: the child's peak (VmHWM); browser RSS: the sum of VmRSS over the Chromium
  processes at the end of the call (shared pages counted in each process, so an upper figure);
  sim CPU: CPU seconds the simulator process spent during the call;
* DB: the store's files (SQLite database, WAL and shared memory) after the services closed.

`--timeline DIR` writes every run's requests, one line each, for reading where a search waits.

Printed per run (stderr), not tabled: the longest event-loop stall during the call (how long a 5 ms
timer waited beyond its time). `--raw` asks the question without its concept groups (the server
plans it, cutting the question); `--idle S` starts the background warm-up `serve` starts and waits
S seconds before the call (a server waiting for its first search).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

from bench_search import DETAIL_PATH, GRID_PATH, JOURNAL_PATH, _connected, request_kind  # noqa: E402

TARGETS = (100, 300, 1000, 3000)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def kind_of(entry: dict[str, Any]) -> str:
    """`bench_search.request_kind` of a request-log line (JSON)."""
    return request_kind(entry["path"], entry["method"])


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            out += [int(x) for x in text]
    except OSError:
        pass
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], _children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children(p)
    return out


def browser_rss_mb(pid: int) -> float:
    """Sum of VmRSS over the Chromium processes below `pid` (Playwright driver excluded)."""
    total = 0
    for p in descendants(pid):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if "chrom" in Path(cmd).name.lower():
            total += _status_kb(p, "VmRSS")
    return total / 1024


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


# --- one run (child process) ----------------------------------------------------------------


def scenario(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "seed": 1,
        "latency": [
            {"path": GRID_PATH, "ms": args.grid_ms, "jitter": args.jitter},
            {"path": DETAIL_PATH, "ms": args.detail_ms, "jitter": args.jitter},
            {"path": JOURNAL_PATH, "ms": args.journal_ms, "jitter": args.jitter},
            {"path": "/dm8/", "ms": args.export_ms, "jitter": args.jitter},
        ],
    }


def start_sim(corpus: Path, scen: Path, log: Path) -> tuple[subprocess.Popen[str], str]:
    cli = [sys.executable, "-m", "cnki_mcp", "sim"] if not (ROOT / ".venv/bin/cnki-mcp").exists() else [
        str(ROOT / ".venv/bin/cnki-mcp"), "sim"]
    proc = subprocess.Popen([*cli, "--corpus", str(corpus), "--scenario", str(scen), "--request-log", str(log)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    origin = proc.stdout.readline().strip()
    if not origin.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the simulator did not start: {origin!r}")
    return proc, origin


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def limiter_bound(log: list[dict[str, Any]], interval: float, lat: dict[str, float]) -> dict[str, float]:
    """The larger of the spacing bound and the dependent-chain bound (module docstring), with the
    nominal latencies and with the run's own (`*_run`); and the strict bound (`bound_strict`)."""
    reqs = sorted((e for e in log if kind_of(e) != "other"), key=lambda e: e["t"])
    if not reqs:
        return {"spacing": 0.0, "chain": 0.0, "bound": 0.0, "spacing_run": 0.0, "chain_run": 0.0, "bound_run": 0.0,
                "bound_strict": 0.0, "bound_strict_run": 0.0}
    spacing = (len(reqs) - 1) * interval + lat.get(kind_of(reqs[-1]), 0.0)
    spacing_run = (len(reqs) - 1) * interval + float(reqs[-1].get("duration") or 0.0)
    pages: dict[str, list[dict[str, Any]]] = {}
    for e in reqs:
        if kind_of(e) == "grid":
            query = json.dumps(e["params"].get("query"), ensure_ascii=False, sort_keys=True)
            pages.setdefault(query, []).append(e)

    def ahead_of(chained: list[dict[str, Any]]) -> int:
        """The requests that started before the chain's first page (a cold session's home page,
        AdvSearch and capture click): each took a start of its own, so the first page starts no
        sooner than one interval after the last of them."""
        return sum(1 for e in reqs if e["t"] < chained[0]["t"])

    # the chain: the query with the most pages (the earliest on a tie), q1 in a research search
    longest = min(pages.values(), key=lambda es: (-len(es), es[0]["t"]), default=[])
    first = longest[0]["t"] if longest else 0.0
    before = ahead_of(longest) if longest else 0
    since = {kind_of(e) for e in reqs if e["t"] > first}  # the tail: reads after the chain began
    read = [lat[k] for k in ("detail", "export") if k in since]
    tail = max(read, default=0.0) + (lat["journal"] if "journal" in since else 0.0)
    durations = sum(float(e.get("duration") or 0.0) for e in longest)
    chain = before * interval + len(longest) * lat["grid"] + tail
    chain_run = before * interval + durations + tail
    strict = 0.0
    for chained in pages.values():  # every query's pages, after what started before them, no tail
        ahead = ahead_of(chained)
        others = len(reqs) - ahead - len(chained)
        strict = max(strict, ahead * interval + shared_chain(len(chained), others, interval, lat["grid"]))
    strict_run = before * interval + durations
    return {"spacing": spacing, "chain": chain, "bound": max(spacing, chain),
            "spacing_run": spacing_run, "chain_run": chain_run, "bound_run": max(spacing_run, chain_run),
            "bound_strict": max(spacing, strict), "bound_strict_run": max(spacing_run, strict_run)}


def shared_chain(pages: int, others: int, interval: float, latency: float) -> float:
    """The least time from a page chain's first start to its last page's answer when `others`
    requests share the limiter with it: every two starts are `interval` apart, and each page starts
    no sooner than `latency` after the one before. A gap between two pages holding m other starts
    lasts max(latency, (m + 1) x interval). After the last page's start, a requests end no sooner
    than max(latency, a x interval) (their own latency taken as 0): the first ones cost nothing
    while a x interval <= latency, each later one costs up to the interval. Each next request goes
    where it costs least; the costs within one gap, and after the last page, only grow, so this
    greedy filling is optimal (checked against an exhaustive search of small cases)."""
    if pages == 0:
        return max(others - 1, 0) * interval
    gaps = pages - 1

    def gap(m: int) -> float:
        return max(latency, (m + 1) * interval)

    total, m, after = gaps * gap(0) + latency, 0, 0  # m others in every gap so far; `after` past the last start
    left = others
    while left > 0:
        in_gap = gap(m + 1) - gap(m) if gaps else float("inf")
        past = max(0.0, (after + 1) * interval - latency) - max(0.0, after * interval - latency)
        if in_gap <= past:
            take = min(left, gaps)  # the (m+1)-th request of every gap costs the same
            total += take * in_gap
            left -= take
            m += 1 if take == gaps else 0
            if take < gaps:
                break
        else:
            total += past
            after += 1
            left -= 1
    return total


async def _search(origin: str, data_dir: Path, args: argparse.Namespace, question: dict[str, Any]) -> dict[str, Any]:
    from mcp import Client

    from cnki_mcp.server.app import build_server
    from cnki_mcp.services import Services
    from cnki_mcp.settings import Settings

    settings = Settings(
        data_dir=data_dir,
        headless=True,
        site_origin=origin,
        request_interval_ms=args.interval_ms,
        inline_wait_seconds=7200.0,  # the call answers with the result (no operation_status polls)
    )
    services = Services.open(settings, environ=os.environ)
    options = {"candidate_target": args.target, "max_pages": args.max_pages, "max_requests": args.max_requests,
               "freshness": "live", "timeout_seconds": 7200}
    call = {"query": question["question"], "options": options}
    if not args.raw:
        call["concept_groups"] = question["concepts"]
    stall = [0.0, 0.0]  # the longest stall, and when it ended (time.time())

    async def ticker() -> None:
        """The longest the event loop kept a 5 ms timer waiting beyond its time."""
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            late = time.perf_counter() - t - 0.005
            if late > stall[0]:
                stall[:] = [late, time.time()]

    try:
        await services.host.ensure()  # Chromium starts outside the measurement
        server = build_server(lambda: services)
        if args.idle is not None:
            from cnki_mcp.query.segment import warm_in_background

            warm_in_background()  # what `serve` starts once its server is built (DESIGN.md "Start-up")
            await asyncio.sleep(args.idle)  # a server waiting for its first call
        if args.session == "warm":
            await _warm_session(services, server)
        tick = asyncio.ensure_future(ticker())
        async with Client(server) as client:
            await _connected(client)
            t_wall = time.time()
            start = time.perf_counter()
            stall[:] = [0.0, 0.0]  # the call's stalls only, not the connection's
            result = await client.call_tool("search", call)
            data = result.structured_content or {}
            while not result.is_error and data.get("status") in ("queued", "running"):
                # the inline wait is capped (55 s): long-poll until the search ends, as a client does
                result = await client.call_tool(
                    "operation_status", {"operation_id": data["operation_id"], "wait_seconds": 55}
                )
                data = result.structured_content or {}
            wall = time.perf_counter() - start
            tick.cancel()
            browser = browser_rss_mb(os.getpid())
        if result.is_error:
            raise RuntimeError(f"search failed: {json.dumps(data, ensure_ascii=False)[:500]}")
    finally:
        await services.close()
    summary = data.get("result") or {}
    return {
        "t_wall": t_wall, "wall": wall, "status": data.get("status"), "browser_rss_mb": browser,
        "candidates": int(summary.get("candidate_count") or 0), "selected": int(summary.get("selected_count") or 0),
        "enhanced": int(summary.get("enhanced_count") or 0), "tool_requests": int(summary.get("requests") or 0),
        "loop_stall_ms": round(stall[0] * 1000, 1), "loop_stall_end_s": round(stall[1] - t_wall, 3),
    }


async def _warm_session(services: Any, server: Any) -> None:
    """`--session warm`: what an earlier call of the same process leaves behind, done before the
    clock starts: the search tool registered (its modules imported) and the site's session open
    (the home page's guest cookie, AdvSearch, the captured grid template), by one title lookup
    through the site backend. It stores nothing, and no detail, export or journal is read, so the
    measured search's requests are those of a cold run less home, AdvSearch and the capture click."""
    from cnki_mcp.query.compiler import compile_expression, title_lookup_expression
    from cnki_mcp.site.backend import GridRequest

    server.load_tool("search")
    compiled = compile_expression(title_lookup_expression(["人工智能"]))
    await services.backend.grid(GridRequest(subject=compiled.subject, anchor=compiled.anchor, page_size=20))


def use_policy(name: str) -> None:
    """Make `name` the research search's policy in this (child) process: the production stack
    builds its pipeline with the default policy, so the default argument is replaced."""
    if name == "default":
        return
    from bench_policy import _policy  # type: ignore[import-not-found]

    from cnki_mcp.pipeline.research import ResearchPipeline

    defaults = dict(ResearchPipeline.__init__.__kwdefaults__ or {})
    defaults["policy"] = _policy(name)
    ResearchPipeline.__init__.__kwdefaults__ = defaults


def run_one(args: argparse.Namespace) -> dict[str, Any]:
    from gen_big_corpus import ensure_corpus  # type: ignore[import-not-found]

    use_policy(args.policy)

    corpus = ensure_corpus(args.corpus)
    question = pick_question(corpus, args.question)
    with tempfile.TemporaryDirectory(prefix="cnki-growth-") as tmp:
        tmpdir = Path(tmp)
        scen, log_path = tmpdir / "scenario.json", tmpdir / "requests.jsonl"
        scen.write_text(json.dumps(scenario(args)), encoding="utf-8")
        sim, origin = start_sim(corpus, scen, log_path)
        try:
            cpu0 = cpu_seconds(sim.pid)
            res = asyncio.run(_search(origin, tmpdir / "data", args, question))
            res["sim_cpu_s"] = cpu_seconds(sim.pid) - cpu0
            res["sim_rss_mb"] = _status_kb(sim.pid, "VmHWM") / 1024
        finally:
            sim.terminate()
            sim.wait(timeout=10)
        res["db_mb"] = db_size_mb(tmpdir / "data")
        log = [e for e in read_log(log_path) if e["wall"] >= res["t_wall"] - 0.001]
        if args.timeline:
            out = Path(args.timeline).resolve() / f"{args.session}-{args.target}-{os.getpid()}.txt"
            _timeline(log, res["t_wall"], out)
    res["server_rss_mb"] = _status_kb(os.getpid(), "VmHWM") / 1024
    res["counts"] = dict(Counter(kind_of(e) for e in log))
    res["requests"] = sum(v for k, v in res["counts"].items() if k != "other")
    res["grid_queries"] = len({json.dumps(e["params"].get("query"), sort_keys=True) for e in log if kind_of(e) == "grid"})
    lat = {"grid": args.grid_ms / 1000, "detail": args.detail_ms / 1000, "journal": args.journal_ms / 1000,
           "export": args.export_ms / 1000, "advsearch": 0.0, "home": 0.0}
    res.update(limiter_bound(log, args.interval_ms / 1000, lat))
    res["target"] = args.target
    return res


def _timeline(log: list[dict[str, Any]], t0: float, out: Path) -> None:
    """`--timeline DIR`: every request of the call, one line each: start and end (seconds after the
    call), kind, and the grid query or the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for e in sorted(log, key=lambda e: e["wall"]):
        start = e["wall"] - t0
        what = json.dumps(e.get("params", {}).get("query") or e.get("path", ""), ensure_ascii=False)
        lines.append(f"{start:6.2f} {start + float(e.get('duration') or 0):6.2f} {kind_of(e):8} {what}")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def db_size_mb(data_dir: Path) -> float:
    """The store's SQLite database with its WAL and shared-memory files."""
    from cnki_mcp.datadir import DB_FILE

    files = [data_dir / DB_FILE, data_dir / f"{DB_FILE}-wal", data_dir / f"{DB_FILE}-shm"]
    return sum(f.stat().st_size for f in files if f.exists()) / 2**20


def pick_question(corpus: Path, qid: str) -> dict[str, Any]:
    for name in ("growth.jsonl", "questions.jsonl"):
        for line in (corpus / name).read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line)["id"] == qid:
                return json.loads(line)
    raise SystemExit(f"no question {qid} in {corpus}")


# --- the subcommand (parent) ----------------------------------------------------------------


def _child_argv(args: argparse.Namespace, target: int) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--one", "--target", str(target), "--corpus", args.corpus,
            "--question", args.question, "--interval-ms", str(args.interval_ms), "--max-pages", str(args.max_pages),
            "--max-requests", str(args.max_requests), "--grid-ms", str(args.grid_ms), "--detail-ms",
            str(args.detail_ms), "--journal-ms", str(args.journal_ms), "--export-ms", str(args.export_ms),
            "--jitter", str(args.jitter), "--policy", args.policy, "--session", args.session,
            *(["--raw"] if args.raw else []), *(["--idle", str(args.idle)] if args.idle is not None else []),
            *(["--timeline", str(Path(args.timeline).resolve())] if args.timeline else [])]


def _cell(values: list[float], fmt: str) -> str:
    med, lo, hi = (f"{x:{fmt}}" for x in (statistics.median(values), min(values), max(values)))
    return f"{med} [{lo}–{hi}]" if lo != hi else med


def bench_growth(args: argparse.Namespace) -> int:
    from gen_big_corpus import ensure_corpus  # type: ignore[import-not-found]

    ensure_corpus(args.corpus)  # generated once, before any timed child
    targets = [int(x) for x in args.targets.split(",")]
    runs: dict[int, list[dict[str, Any]]] = {}
    for rep in range(args.repeats):
        for target in targets:  # interleaved, so machine load drifts evenly over the targets
            out = subprocess.run(_child_argv(args, target), capture_output=True, text=True, cwd=ROOT)
            if out.returncode != 0:
                print(out.stdout[-2000:], out.stderr[-4000:], sep="\n", file=sys.stderr)
                return 1
            res = json.loads(out.stdout.strip().splitlines()[-1])
            runs.setdefault(target, []).append(res)
            print(f"# repeat {rep + 1} target {target}: {res['requests']} requests, {res['candidates']} candidates,"
                  f" wall {res['wall']:.1f} s, bound {res['bound']:.1f} s,"
                  f" longest event-loop stall {res['loop_stall_ms']:.0f} ms (ending at {res['loop_stall_end_s']:.1f} s)",
                  file=sys.stderr)
    table = growth_table(runs)
    print(table)
    if args.write:
        from bench import _write_section  # type: ignore[import-not-found]

        _write_section(Path(args.write), "Growth", _section(args, table))
        print(f"written to {args.write}")
    return 0


def growth_table(runs: dict[int, list[dict[str, Any]]]) -> str:
    lines = [
        "| target | status | candidates | requests | grid / detail / export / journal / AdvSearch / home | grid queries"
        " | requests per candidate | wall s | bound s | wall / bound | bound (run) s | wall / bound (run)"
        " | bound (strict) s | wall / bound (strict) | wall / bound (strict, run) | server RSS MB | browser RSS MB | sim CPU s | sim RSS MB | DB MB |",
        "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for target, rs in sorted(runs.items()):
        def col(key: str, rs: list[dict[str, Any]] = rs) -> list[float]:
            return [float(r[key]) for r in rs]

        counts = rs[0]["counts"]
        split = " / ".join(str(counts.get(k, 0)) for k in ("grid", "detail", "export", "journal", "advsearch", "home"))
        per = [r["requests"] / max(1, r["candidates"]) for r in rs]
        ratio = [r["wall"] / r["bound"] if r["bound"] else 0.0 for r in rs]
        ratio_run = [r["wall"] / r["bound_run"] if r.get("bound_run") else 0.0 for r in rs]
        ratio_strict = [r["wall"] / r["bound_strict"] if r.get("bound_strict") else 0.0 for r in rs]
        ratio_strict_run = [r["wall"] / r["bound_strict_run"] if r.get("bound_strict_run") else 0.0 for r in rs]
        status = ",".join(sorted({str(r["status"]) for r in rs}))
        lines.append(
            f"| {target} | {status} | {_cell(col('candidates'), '.0f')} | {_cell(col('requests'), '.0f')} | {split}"
            f" | {rs[0]['grid_queries']} | {_cell(per, '.3f')} | {_cell(col('wall'), '.1f')} | {_cell(col('bound'), '.1f')}"
            f" | **{_cell(ratio, '.2f')}** | {_cell(col('bound_run'), '.1f')} | {_cell(ratio_run, '.2f')}"
            f" | {_cell(col('bound_strict'), '.1f')} | {_cell(ratio_strict, '.2f')} | {_cell(ratio_strict_run, '.2f')}"
            f" | {_cell(col('server_rss_mb'), '.0f')} | {_cell(col('browser_rss_mb'), '.0f')}"
            f" | {_cell(col('sim_cpu_s'), '.1f')} | {_cell(col('sim_rss_mb'), '.0f')} | {_cell(col('db_mb'), '.1f')} |"
        )
    return "\n".join(lines)


def _command(args: argparse.Namespace) -> str:
    return (f".venv/bin/python scripts/bench.py growth --corpus {args.corpus} --question {args.question}"
            f" --targets {args.targets} --repeats {args.repeats} --interval-ms {args.interval_ms}"
            f" --max-pages {args.max_pages} --write docs/benchmarks.md")


def _section(args: argparse.Namespace, table: str) -> str:
    return (
        "## Growth\n\n"
        f"Command: `{_command(args)}`\n\n"
        f"Machine: {os.cpu_count()} CPUs (shared with other work: compare rows of one run, not runs),"
        f" Python {platform.python_version()} on {platform.system()} {platform.machine()}, headless Chromium;"
        f" date {dt.date.today().isoformat()}.\n\n"
        f"One research search of question `{args.question}` of the generated `{args.corpus}` corpus"
        " (`scripts/gen_big_corpus.py`, docs/simulator.md \"Large labelled corpora\") per candidate target,"
        f" explicit concept groups, `max_pages {args.max_pages}`, `max_requests {args.max_requests}`,"
        f" request interval {args.interval_ms} ms, simulator latency grid {args.grid_ms} / detail {args.detail_ms} /"
        f" journal {args.journal_ms} / export {args.export_ms} ms (jitter x{1 - args.jitter:.1f}-{1 + args.jitter:.1f}), page size 50"
        " (production). Each run is a fresh process with a fresh store against the simulator in its own process"
        " (`cnki-mcp sim --corpus`); how each column is measured is in `scripts/bench_growth.py`. Bound = the"
        " larger of (N - 1) x interval + last latency and the longest chain of dependent pages (after one"
        " interval for each request that opened the session before it) plus the enrichment tail, for the"
        " requests this run sent; bound (run): the same with the latencies the run's"
        " requests had; bound (strict): the spacing and the page chain alone, without the enrichment"
        " tail, the chain sharing the limiter with the other requests; medians over the repeats,"
        " [min–max].\n\n"
        f"{table}\n"
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", default="main", choices=("main", "heldout", "diverse"), help="generated corpus variant")
    p.add_argument("--question", default="g01", help="question id (growth.jsonl or questions.jsonl; default g01)")
    p.add_argument("--targets", default=",".join(map(str, TARGETS)), help="comma-separated candidate targets")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--interval-ms", type=int, default=200)
    p.add_argument("--max-pages", type=int, default=100)
    p.add_argument("--max-requests", type=int, default=5000)
    p.add_argument("--grid-ms", type=int, default=700)
    p.add_argument("--detail-ms", type=int, default=450)
    p.add_argument("--journal-ms", type=int, default=600)
    p.add_argument("--export-ms", type=int, default=700, help="batch export latency (no evidence: as a grid page)")
    p.add_argument("--jitter", type=float, default=0.3)
    p.add_argument("--policy", default="default",
                   help="request policy: default, reference or default-RULE (the ablations of bench.py policy)")
    p.add_argument("--write", default=None, metavar="MD", help="also write the ## Growth section of this file")
    p.add_argument("--session", default="cold", choices=("cold", "warm"),
                   help="cold: the process's first call on a fresh profile (default); warm: the search tool"
                        " loaded and the site session open before the clock starts (_warm_session)")
    p.add_argument("--raw", action="store_true",
                   help="ask the question without its concept groups (the server plans it: a raw question)")
    p.add_argument("--idle", type=float, default=None, metavar="S",
                   help="start the background warm-up `serve` starts, then wait S seconds (Chromium started)"
                        " before the call: a server waiting for its first search")
    p.add_argument("--timeline", default=None, metavar="DIR",
                   help="write each run's requests (start, end, kind, query) to DIR/<session>-<target>-<pid>.txt")


def add_growth_parser(sub: Any) -> None:
    p = sub.add_parser("growth", help="requests, wall / bound, RSS and DB size for targets 100 -> 3000")
    add_arguments(p)
    p.set_defaults(func=bench_growth)


def main(argv: list[str] | None = None) -> int:
    """`--one --target N`: the child process of one run; prints its figures as one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    ap.add_argument("--one", action="store_true")
    ap.add_argument("--target", type=int, default=300)
    args = ap.parse_args(argv)
    if not args.one:
        return bench_growth(args)
    print(json.dumps(run_one(args), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
