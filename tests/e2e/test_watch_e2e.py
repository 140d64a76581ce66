"""Search log and saved searches end to end over stdio: `cnki-mcp serve` (headless Chromium inside)
runs a research search against the simulator; export_search_log gives every page read with a
PRISMA flow that adds up; watch_search + check_updates find a record the simulator indexes
between two checks, one grid request per check (DESIGN.md "Search log", "Saved searches")."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import GRID, StdioServer, serve_env
from tests.site_stack import page_form_logged

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NEW_ID = "w9001"


async def test_search_log_and_a_watch_that_finds_a_record_added_between_checks(
    served: StdioServer, sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    started = await served.call(
        "search",
        {
            "query": "违约金酌减",
            "concept_groups": [["违约金", "约定违约金"], ["酌减", "调整"]],
            "mode": "precise",
            "options": {"max_pages": 1, "metadata": "basic", "freshness": "live"},
        },
    )
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    search_id = record["result"]["search_id"]
    await page_form_logged(sim)  # the capture click's own POST may land after the search ended
    grids = len(sim.requests_for(GRID, "POST"))

    exported = await served.call("export_search_log", {"search_id": search_id, "format": "json"})
    log = json.loads(exported["text"])
    flow = log["prisma"]
    assert flow == exported["prisma"]
    assert flow["identified"] - flow["outside_years"] - flow["duplicates"] == flow["screened"] > 0
    assert flow["screened"] - flow["excluded"] == flow["selected"] == record["result"]["selected_count"]
    # The subject channel listed all its results on page 1, so title and keywords (subsets of it)
    # were answered from them, not sent (DESIGN.md "Request policies"); the log says so.
    subject, title, keywords = log["channels"]
    assert [c["field"] for c in (subject, title, keywords)] == ["subject", "title", "keywords"]
    assert len(subject["pages"]) == 1 and subject["pages"][0]["attempts"] == 1 and subject["exhausted"]
    assert not subject["answered_locally"]
    for local in (title, keywords):
        assert local["answered_locally"] and local["pages"] == [] and local["queries"]
    assert grids == 2  # the subject page + the form's own first grid
    assert "Not sent to CNKI" in (await served.call("export_search_log", {"search_id": search_id}))["text"]
    assert log["channels"][0]["queries"] == ["主题: 违约金 + 约定违约金 AND 主题: 酌减 + 调整"]
    markdown = await served.call("export_search_log", {"search_id": search_id})
    assert "## Flow (PRISMA-style)" in markdown["text"]

    watch = await served.call("watch_search", {"search_id": search_id})
    assert watch["known"] == record["result"]["candidate_count"]
    first = await served.finish(await served.call("check_updates", {"watch_id": watch["watch_id"]}))
    assert first["status"] == "completed", first["errors"]
    [c1] = first["result"]["checks"]
    assert c1["first_check"] and c1["requests"] == 1  # the subject channel covers title and keywords
    assert all(n["title"] != "约定违约金酌减的新近裁判观察" for n in c1["new"])

    today = datetime.now(UTC).date().isoformat()
    sim.add_record(
        {"id": NEW_ID, "title": "约定违约金酌减的新近裁判观察", "type": "期刊", "source": "现代法学",
         "year": int(today[:4]), "date": today, "authors": ["新作者"], "keywords": ["约定违约金", "酌减"],
         "abstract": "违约金酌减的新近裁判。"}
    )
    try:
        second = await served.finish(await served.call("check_updates", {"watch_id": "all"}))
    finally:
        sim.remove_record(NEW_ID)
    assert second["status"] == "completed", second["errors"]
    [c2] = second["result"]["checks"]
    assert not c2["first_check"] and c2["requests"] == 1
    assert [n["title"] for n in c2["new"]] == ["约定违约金酌减的新近裁判观察"]
    assert c2["new_count"] == 1 and c2["older_unseen"] == 0
    assert len(sim.requests_for(GRID, "POST")) == grids + 2

    # the cron command on the same data directory once the server is gone: nothing new since
    await served.stop()
    env = serve_env(tmp_path / "data", sim.origin, browser_executable)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cnki_mcp", "watch", "check", "--all", env=env, cwd=str(tmp_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(120):
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert f"[{watch['watch_id']}]" in out.decode() and "新增 0" in out.decode()
