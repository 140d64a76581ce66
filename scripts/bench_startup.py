"""Start-up benchmark: process start -> `tools/list` answered, for `cnki-mcp serve` over stdio,
as an MCP client meets it (docs/benchmarks.md §Start-up).

    .venv/bin/python scripts/bench_startup.py [-n 10] [--profile]

Each run spawns the console script with a fresh data directory, sends `initialize`, the
`initialized` notification and `tools/list` as raw JSON-RPC lines, and stops the clock when the
`tools/list` answer arrives. `--profile` adds the import profile (`python -X importtime`) of one
start: the slowest top-level packages by cumulative import time."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".venv" / "bin" / "cnki-mcp"

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


def one_start(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Seconds from spawn to the tools/list answer, and the server's stderr."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errfile:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile, env=env, text=True
        )
        assert proc.stdin is not None and proc.stdout is not None
        for message in MESSAGES:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        elapsed = float("nan")
        try:
            for line in proc.stdout:
                reply = json.loads(line)
                if reply.get("id") == 2:
                    elapsed = time.perf_counter() - start
                    assert reply["result"]["tools"], "tools/list answered with tools"
                    break
        finally:
            proc.stdin.close()  # end of input: the stdio server exits
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        errfile.seek(0)
        return elapsed, errfile.read()


def import_profile(env: dict[str, str], top: int = 12) -> list[tuple[str, float]]:
    """(package, cumulative seconds) of the slowest top-level imports of one start."""
    _, err = one_start([sys.executable, "-X", "importtime", "-m", "cnki_mcp", "serve"], env)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="number of starts (default 10)")
    parser.add_argument("--profile", action="store_true", help="also print the import profile")
    args = parser.parse_args(argv)
    command = [str(SCRIPT), "serve"] if SCRIPT.exists() else [sys.executable, "-m", "cnki_mcp", "serve"]
    samples: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CNKI_DATA_DIR=str(Path(tmp) / "data"), CNKI_HEADLESS="1")
        one_start(command, env)  # warm the page cache once; not counted
        for _ in range(args.n):
            seconds, _err = one_start(command, env)
            samples.append(seconds)
        print(f"start-up to tools/list over {args.n} runs: median {statistics.median(samples):.3f} s, "
              f"min {min(samples):.3f} s, max {max(samples):.3f} s")
        print("samples: " + " ".join(f"{s:.3f}" for s in samples))
        if args.profile:
            print("import profile (cumulative seconds, top-level packages of one start):")
            for name, seconds in import_profile(env):
                print(f"  {name:<28} {seconds:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
