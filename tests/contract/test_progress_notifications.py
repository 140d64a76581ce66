"""Progress notifications of one request as the client sees them (DESIGN.md "Tool results"): the
values of one progress token always increase, whatever the call waited on in turn."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from mcp import Client

from cnki_mcp.clock import FakeClock
from cnki_mcp.server.app import build_server
from tests.contract.server_fakes import Harness

QUERY = {"query": "违约金 酌减"}


async def test_a_search_that_joined_a_cancelled_one_and_then_runs_its_own_keeps_its_progress_increasing(
    tmp_path: Path,
) -> None:
    # The second identical call waits on the running search (joined); that search is cancelled
    # under it, so the call starts its own (DESIGN.md "One search for identical calls"). Both
    # waits report to the same progress token.
    h = Harness(tmp_path / "data", inline_wait=30.0)
    h.pipeline.block = True
    seen: list[float] = []
    joined = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        joined.set()

    async with Client(build_server(h.open)) as client:
        first = asyncio.create_task(client.call_tool("search", QUERY))
        await h.pipeline.started.wait()
        h.pipeline.started.clear()
        running = (await client.call_tool("operation_status", {})).structured_content
        second = asyncio.create_task(client.call_tool("search", QUERY, progress_callback=on_progress))
        await joined.wait()  # the second call is waiting on the first search, with its progress
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": running["operation_id"]})
        await h.pipeline.started.wait()  # the second call's own search
        h.pipeline.release.set()
        own = (await second).structured_content
        await first
    assert own["joined"] is False and own["operation_id"] != running["operation_id"]
    assert own["status"] == "completed"
    assert len(seen) >= 3
    assert all(later > earlier for earlier, later in itertools.pairwise(seen)), seen


async def test_a_search_that_joined_a_cancelled_one_answers_within_one_inline_wait(tmp_path: Path) -> None:
    # The time spent waiting on the joined search counts towards the call's one inline wait: a
    # client's own timeout (the TypeScript SDK's is 60 s) is set against that one wait, not two.
    clock = FakeClock()
    h = Harness(tmp_path / "data", inline_wait=40.0, clock=clock)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        first = asyncio.create_task(client.call_tool("search", QUERY))
        await h.pipeline.started.wait()
        h.pipeline.started.clear()
        running = (await client.call_tool("operation_status", {})).structured_content
        second = asyncio.create_task(client.call_tool("search", QUERY))
        await clock.advance_settled(30.0)  # the second call has waited 30 s on the first search
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": running["operation_id"]})
        await h.pipeline.started.wait()  # the second call's own search, still blocked
        await clock.advance_settled(15.0)  # 45 s since the second call came in
        done, _ = await asyncio.wait({second}, timeout=20)  # a bound on the loop, not a timing check
        assert second in done
        own = (await second).structured_content
        assert own["status"] == "running" and own["operation_id"] != running["operation_id"]
        h.pipeline.release.set()
        await first
