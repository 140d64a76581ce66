"""`cnki-mcp demo` end to end: simulator, `cnki-mcp serve` subprocess, real Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def run_demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m cnki_mcp demo` under `env`, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "cnki_mcp", "demo"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_demo_runs_a_research_search_and_prints_ranked_results_coverage_and_citations(
    browser_executable: str,
) -> None:
    env = dict(os.environ, CNKI_BROWSER_PATH=browser_executable)
    proc = run_demo(env)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:] + out[-2000:]
    assert "知网模拟站：http://127.0.0.1:" in out.splitlines()[0]
    assert "读取摘要（批量导出）与期刊页" in out  # live progress reached enrichment
    # planned like a client without sampling: the server segments the question itself
    assert "由服务器分词规划" in out and "服务器规划（segmented）：" in out
    ranked = [line for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert len(ranked) >= 5, out
    assert "收录" in out and "得分" in out
    for channel in ("q1", "q2", "q3"):
        assert f"  {channel} " in out
    # the bundled question's subject channel lists every result on its first page: the title and
    # keyword channels are answered locally, and the demo says so
    assert "未请求：主题通道已列出全部结果" in out and "None" not in out
    last = out.splitlines()[-1]
    assert "检索" in last and "批量导出" in last and "详情页" in last
    exports = int(last.split("批量导出 ")[1].split(" ")[0])
    assert exports >= 1  # abstracts were read by CNKI's batch export


def test_demo_without_a_usable_browser_fails_and_says_why(tmp_path: Path) -> None:
    """No browser: the search ends "partial" with BROWSER_UNAVAILABLE and nothing found; the demo
    names the error and exits 1 instead of printing an empty ranking with exit 0."""
    env = dict(os.environ, CNKI_BROWSER_PATH=str(tmp_path / "no-such-chrome"), HOME=str(tmp_path))
    proc = run_demo(env)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "BROWSER_UNAVAILABLE" in proc.stdout
    assert "cnki-mcp doctor" in proc.stdout  # the way to find out why the browser does not start
