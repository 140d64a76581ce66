"""Shared pieces of the peers suite: public CNKI tools, each in its own venv (`scripts/peers_setup.sh`), run
unmodified against one hosts-mode simulator. Only the browser launch differs (drivers/_launch.py).

The drivers run at the same time (they mostly wait on their own fixed sleeps), once per
session; each test asserts on one tool's output against the corpus. Missing venvs skip the suite
in a plain local run and fail it under CI or `CNKI_PEERS=1` (scripts/test.sh)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from tests.conftest import find_browser_executable

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = Path(__file__).parent / "drivers"
VENVS = ROOT / ".venv-peers"
TIMEOUT_S = 420

QUERY = "人工智能"
EXPRESSION = "SU %= '人工智能' AND YE >= 2020"
# tool (PyPI name = venv name) -> (driver script, its JSON argument)
RUNS: dict[str, tuple[str, dict[str, Any]]] = {
    "cnki-deepsearch": ("cnki_deepsearch.py", {"query": QUERY, "expression": EXPRESSION}),
    "cnki-mcp": ("cnki_mcp_sepine.py", {"query": QUERY, "expression": EXPRESSION}),
    "cnki-mcp-server": ("cnki_mcp_server.py", {"query": QUERY, "pages": 2}),
    "cnkibug": ("kaffu_cnkibug.py", {"query": QUERY}),  # KaffuAlcaid/CNKIBug, published on PyPI
}


@dataclass
class PeerRun:
    tool: str
    result: dict[str, Any] | None
    returncode: int
    stderr_tail: str
    seconds: float

    def require(self) -> dict[str, Any]:
        if self.result is None:
            pytest.fail(f"{self.tool} driver failed (exit {self.returncode}):\n{self.stderr_tail}")
        return self.result


def _python(tool: str) -> Path:
    return VENVS / tool / "bin" / "python"


def _require_venvs() -> None:
    missing = [t for t in RUNS if not _python(t).exists()]
    if not missing:
        return
    message = f"peer tools not installed ({', '.join(missing)}): run scripts/peers_setup.sh"
    if os.environ.get("CI") or os.environ.get("CNKI_PEERS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def run_peers(sim: SimServer, homes: dict[str, Path]) -> dict[str, PeerRun]:
    """Start every driver at once (they mostly wait on their own sleeps), then collect them."""
    _require_venvs()
    browser = find_browser_executable()
    if not browser:
        message = "no Chromium/Chrome found (set CNKI_BROWSER_PATH)"
        if os.environ.get("CI") or os.environ.get("CNKI_PEERS") == "1":
            pytest.fail(message)  # the suite was asked for: never a silent skip
        pytest.skip(message)
    started: dict[str, tuple[subprocess.Popen[str], float]] = {}
    for tool, (script, args) in RUNS.items():
        home = homes[tool]
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
        env.update(
            HOME=str(home),  # the tools keep cookies and profiles under ~
            PEERS_BROWSER=browser,
            PEERS_CHROMIUM_ARGS=json.dumps(sim.chromium_args()),
            PYTHONDONTWRITEBYTECODE="1",
        )
        proc = subprocess.Popen(
            [str(_python(tool)), str(DRIVERS / script), json.dumps(args, ensure_ascii=False)],
            cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        started[tool] = (proc, time.monotonic())
    runs: dict[str, PeerRun] = {}
    for tool, (proc, t0) in started.items():
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        line = next((x for x in out.splitlines() if x.startswith("PEERS-RESULT ")), None)
        result = json.loads(line[len("PEERS-RESULT ") :]) if line and proc.returncode == 0 else None
        runs[tool] = PeerRun(tool, result, proc.returncode, err[-4000:], time.monotonic() - t0)
    return runs
