"""Start-up benchmark: process start -> `tools/list` answered, for `cnki-mcp serve` over stdio,
as an MCP client meets it (docs/benchmarks.md §Start-up).

    .venv/bin/python scripts/bench_startup.py [-n 10] [--profile] [--compare DIR] [--floors]

Each run spawns the server with a fresh data directory and sends `initialize`, the `initialized`
notification and `tools/list` as raw JSON-RPC lines (written together, as clients pipeline them);
the clock stops when the `tools/list` answer arrives. Then a local tool call (`diagnostics`) is
sent and timed from the same start: the first tool call waits for whatever the handshake did not
load. `--compare DIR` also measures another source tree (e.g. `git archive main | tar -x -C DIR`)
with the same interpreter, interleaved with this one, so a busy machine slows both alike; report
the ratio. `--floors` adds `python -c pass` and `python -c "import mcp.server.mcpserver"`.
`--profile` adds the import profile (`python -X importtime`) of one start. Sources are compiled
to bytecode first (what an install does), so no run pays for compiling."""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MESSAGES = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "diagnostics", "arguments": {}}}


def one_start(command: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, float, str]:
    """Seconds from spawn to the tools/list answer and to the first tool call's answer, and the
    server's stderr."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errfile:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile, env=env, text=True, cwd=cwd
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in MESSAGES))
        proc.stdin.flush()
        listed = called = float("nan")
        try:
            for line in proc.stdout:
                reply = json.loads(line)
                if reply.get("id") == 2:
                    listed = time.perf_counter() - start
                    assert reply["result"]["tools"], "tools/list answered with tools"
                    proc.stdin.write(json.dumps(CALL) + "\n")
                    proc.stdin.flush()
                elif reply.get("id") == 3:
                    called = time.perf_counter() - start
                    assert not reply["result"].get("isError"), reply
                    break
        finally:
            proc.stdin.close()  # end of input: the stdio server exits
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        errfile.seek(0)
        return listed, called, errfile.read()


def timed_exit(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True)
    return time.perf_counter() - start


def import_profile(env: dict[str, str], cwd: str, top: int = 12) -> list[tuple[str, float]]:
    """(package, cumulative seconds) of the slowest top-level imports of one start."""
    _, _, err = one_start([sys.executable, "-X", "importtime", "-m", "cnki_mcp", "serve"], env, cwd)
    totals: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split("|"))
        if name.startswith(" ") or not cumulative.isdigit():
            continue
        raw = line.split("|")[2]
        depth = (len(raw) - len(raw.lstrip(" "))) // 2
        if depth <= 1:
            root = name.strip().split(".")[0] if not name.strip().startswith("cnki_mcp") else name.strip()
            totals[root] = max(totals.get(root, 0.0), int(cumulative) / 1e6)
    return sorted(totals.items(), key=lambda kv: -kv[1])[:top]


def _summary(label: str, samples: list[float]) -> str:
    return (f"{label:<34} median {statistics.median(samples):.3f} s, min {min(samples):.3f} s, "
            f"max {max(samples):.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="number of starts (default 10)")
    parser.add_argument("--profile", action="store_true", help="also print the import profile")
    parser.add_argument("--compare", type=Path, default=None, metavar="DIR",
                        help="another source tree (holding cnki_mcp/) measured interleaved with this one")
    parser.add_argument("--floors", action="store_true", help="also time `python -c pass` and importing the SDK")
    args = parser.parse_args(argv)
    trees = {"this tree": ROOT}
    if args.compare is not None:
        trees[f"compare ({args.compare})"] = args.compare.resolve()
    for tree in trees.values():
        compileall.compile_dir(tree / "cnki_mcp", quiet=1)
    spec = importlib.util.find_spec("mcp")
    if spec is not None and spec.origin and not (Path(spec.origin).parent / "__pycache__").is_dir():
        # uv installs without bytecode, and PYTHONDONTWRITEBYTECODE=1 keeps it that way: every
        # start would compile the SDK from source.
        print("warning: the installed mcp package has no bytecode; run "
              f"`{sys.executable} -m compileall -q {Path(spec.origin).parents[1]}` first", file=sys.stderr)
    command = [sys.executable, "-m", "cnki_mcp", "serve"]
    listed: dict[str, list[float]] = {name: [] for name in trees}
    called: dict[str, list[float]] = {name: [] for name in trees}
    floors: dict[str, list[float]] = {"python -c pass": [], "import mcp.server.mcpserver": []}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        base.update(CNKI_HEADLESS="1")
        envs = {
            name: dict(base, PYTHONPATH=str(tree), CNKI_DATA_DIR=str(Path(tmp) / f"data{i}"))
            for i, (name, tree) in enumerate(trees.items())
        }
        for env in envs.values():
            one_start(command, env, tmp)  # warm the page cache once; not counted
        for _ in range(args.n):
            for name, env in envs.items():
                # cwd outside both trees: `-m` puts the working directory first on sys.path
                seconds_listed, seconds_called, _err = one_start(command, env, tmp)
                listed[name].append(seconds_listed)
                called[name].append(seconds_called)
            if args.floors:
                floors["python -c pass"].append(timed_exit([sys.executable, "-c", "pass"], base))
                floors["import mcp.server.mcpserver"].append(
                    timed_exit([sys.executable, "-c", "import mcp.server.mcpserver"], base))
        print(f"start-up over {args.n} runs each (load average before: {load_before:.1f}, "
              f"after: {os.getloadavg()[0]:.1f})")
        for name in trees:
            print(_summary(f"{name}: tools/list", listed[name]))
            print(_summary(f"{name}: first tool call", called[name]))
            print("  tools/list samples: " + " ".join(f"{s:.3f}" for s in listed[name]))
        if len(trees) == 2:
            this, other = trees
            ratio = statistics.median(listed[this]) / statistics.median(listed[other])
            ratios = [a / b for a, b in zip(listed[this], listed[other], strict=True)]
            call_ratio = statistics.median(called[this]) / statistics.median(called[other])
            print(f"ratio this/compare, tools/list: {ratio:.2f} (median of per-pair ratios "
                  f"{statistics.median(ratios):.2f}); first tool call: {call_ratio:.2f}")
        if args.floors:
            for name, samples in floors.items():
                print(_summary(name, samples))
        if args.profile:
            print("import profile (cumulative seconds, top-level packages of one start):")
            for name, seconds in import_profile(envs["this tree"], tmp):
                print(f"  {name:<28} {seconds:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
