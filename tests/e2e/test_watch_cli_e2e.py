"""`cnki-mcp watch check` as cron runs it: headless (no display), real Chromium against the
simulator, on a data directory holding one saved search. A slider on the grid stops the check at
once with exit 3, the watch named as unchecked and a coded reason with a next step, instead of
waiting for a person nobody can show the page to (DESIGN.md "Saved searches")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cnki_mcp.clock import SystemClock
from cnki_mcp.sim.server import SimServer
from cnki_mcp.store import Store
from tests.e2e.support import serve_env

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# A saved plan as `watch_search` stores it: one subject channel, 违约金 AND 酌减.
PLAN = {
    "channels": [
        {
            "id": "q1",
            "field": "subject",
            "weight": 1.0,
            "reason": "subject：完整概念组合",
            "subject": {
                "Key": "Subject", "Title": "", "Logic": 0, "Items": [],
                "ChildItems": [{
                    "Key": "mcp", "Title": "", "Logic": 0, "ChildItems": [],
                    "Items": [
                        {"Key": "mcp", "Title": "subject", "Logic": 0, "Field": "SU", "Operator": "TOPRANK",
                         "Value": value, "Value2": "", "options": {}}
                        for value in ("违约金", "酌减")
                    ],
                }],
            },
            "anchor": "违约金",
            "fingerprint": "6a4276ddd5502bf3173e755b87940ebc",
        }
    ],
    "year_from": None,
    "year_to": None,
    "method": "explicit",
    "concepts": [["违约金"], ["酌减"]],
}


def test_a_slider_stops_a_headless_cron_check_at_once(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    data = tmp_path / "data"
    clock = SystemClock()
    with Store.open(data, clock) as store:
        store.create_watch("wat_cron", "sch_cron", "违约金酌减", PLAN, clock.now(), None, [])
    sim.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": "verification"}]})
    sim.reset()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cnki_mcp", "watch", "check"],
            env=serve_env(data, sim.origin, browser_executable),  # CNKI_HEADLESS=1, no DISPLAY
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=150,  # a bound: waiting for a person (20 minutes) fails the test
        )
    finally:
        sim.set_scenario(None)
    assert done.returncode == 3, done.stderr
    assert "错误 VERIFICATION_SKIPPED" in done.stderr and "提示：" in done.stderr
    assert "未检查：wat_cron" in done.stdout
    assert "Traceback" not in done.stderr
