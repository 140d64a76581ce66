"""End to end over stdio: a research search that runs out of its request budget ends `partial`
with BUDGET_EXHAUSTED; `operation_control continue` finishes it without repeating any CNKI request,
and the whole costs exactly what an uninterrupted run of the same search costs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import GRID, SEARCH, StdioServer, keyed, repeated, serve_env, without_captures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BUDGET = 6
PAGE_OWN = "data-tipid"  # only the search page's own click names its boxes in QueryJson


async def run_search(server: StdioServer, search: dict[str, Any]) -> dict[str, Any]:
    return await server.finish(await server.call("search", search))


async def test_budget_exhausted_search_continues_to_completion_without_repeating_requests(
    tmp_path: Path, browser_executable: str
) -> None:
    with SimServer().start() as sim:
        server = await StdioServer(
            serve_env(tmp_path / "a", sim.origin, browser_executable), tmp_path
        ).start()
        try:
            # the whole search is ~10 requests (home, AdvSearch, the template click, grid pages, one
            # batch export, journal pages): 6 cuts it after its first data requests
            limited = dict(SEARCH, options=dict(SEARCH["options"], max_requests=BUDGET))
            first = await run_search(server, limited)
            assert first["status"] == "partial"
            assert "BUDGET_EXHAUSTED" in {e["code"] for e in first["errors"]}
            assert first["requests"] == BUDGET
            first_leg = keyed(without_captures(sim.requests))
            cont = await server.call(
                "operation_control", {"action": "continue", "operation_id": first["operation_id"]}
            )
            assert cont["operation"]["operation_id"] == first["operation_id"]
            done = await server.finish(cont["operation"])
            assert done["status"] == "completed", done["errors"]
            assert done["requests"] > first["requests"]
        finally:
            await server.stop()
        split_log = without_captures(sim.requests)
        split = keyed(split_log)
        assert repeated(split) == {}
        second_leg = split - first_leg
        assert first_leg and second_leg  # the cut fell inside the search's CNKI requests
        assert {key[0] for key in second_leg} >= {"journal"}

        sim.reset()
        fresh = await StdioServer(serve_env(tmp_path / "b", sim.origin, browser_executable), tmp_path).start()
        try:
            whole = await run_search(fresh, SEARCH)
            assert whole["status"] == "completed", whole["errors"]
        finally:
            await fresh.stop()
        uninterrupted = keyed(without_captures(sim.requests))
    assert split == uninterrupted
    assert done["requests"] == whole["requests"]
    assert done["result"]["selected_count"] == whole["result"]["selected_count"]


async def test_a_search_whose_pages_met_a_busy_site_continues_once_it_answers_again(
    tmp_path: Path, browser_executable: str
) -> None:
    """Every data page answers 暂无数据，请稍后重试 (and so does its one retry): each channel closes
    and the search ends `partial`. Once the site answers again, `continue` reopens the channels and
    completes the search; no page that had a real answer is asked again."""
    # Every replay, named by form: the search page's own click and the first replay arrive in
    # either order (docs/simulator.md "Form filters"); a position (`from: 2`) let the first replay
    # through when it came first, and its answer alone completed the search.
    busy = {"faults": [{"path": GRID, "kind": "temporarily_empty", "form_lacks": PAGE_OWN}]}
    with SimServer(scenario=busy).start() as sim:
        server = await StdioServer(serve_env(tmp_path / "a", sim.origin, browser_executable), tmp_path).start()
        try:
            first = await run_search(server, SEARCH)
            assert first["status"] == "partial", first
            assert {e["code"] for e in first["errors"]} == {"SITE_TEMPORARILY_EMPTY"}
            assert "operation_control(action='continue'" in first["next_step"]
            sim.set_scenario({})  # the site answers again
            cont = await server.call(
                "operation_control", {"action": "continue", "operation_id": first["operation_id"]}
            )
            done = await server.finish(cont["operation"])
            assert done["status"] == "completed" and done["errors"] == [], done["errors"]
            assert done["result"]["candidate_count"] > 0
        finally:
            await server.stop()
        answered = keyed(e for e in without_captures(sim.requests) if not e.fault)
    assert repeated(answered) == {}
