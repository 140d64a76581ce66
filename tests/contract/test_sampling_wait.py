"""A search planned by the client's model answers within the inline wait of the whole call.

The server's own sampling request (protocol revisions before input-required) is part of the tool
call: the 40 s inline wait started only after it, so a model answering in 30 s made the call last
70 s, and a client that gives up on a tool call after 60 s (the TypeScript SDK's default request
timeout) never saw the operation_id of the search that went on running."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from cnki_mcp.clock import FakeClock
from cnki_mcp.server.app import build_server
from tests.contract.server_fakes import Harness

INLINE_WAIT = 40.0
MODEL_SECONDS = 30.0


async def test_the_time_the_client_model_takes_to_plan_comes_off_the_inline_wait(tmp_path: Path) -> None:
    clock = FakeClock()
    h = Harness(tmp_path / "data", inline_wait=INLINE_WAIT, clock=clock)
    h.pipeline.block = True  # the search goes on longer than any wait here
    called_at: list[float] = []

    async def sampler(context: Any, params: Any) -> CreateMessageResult:
        called_at.append(clock.monotonic())
        await clock.advance(MODEL_SECONDS)  # the client's model (or the person approving it) takes 30 s
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text='[["竞业限制"], ["违约金"]]'), model="fake"
        )

    async with Client(build_server(h.open), sampling_callback=sampler, mode="legacy") as client:
        call = asyncio.ensure_future(client.call_tool("search", {"query": "竞业限制违约金的裁判思路"}))
        await h.pipeline.started.wait()
        while not call.done() and clock.monotonic() < called_at[0] + 2 * INLINE_WAIT + MODEL_SECONDS:
            await clock.advance_settled(1.0)
        answered_at = clock.monotonic()
        result = await call
        h.pipeline.release.set()

    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer["status"] == "running"
    assert answer["operation_id"]
    assert answer["result"] is None or answer["result"]["plan"]["method"] == "sampling"
    assert h.pipeline.plans[-1].groups == [["竞业限制"], ["违约金"]]
    # the call, sampling included, answered within the inline wait (one tick of the loop above)
    assert answered_at - called_at[0] <= INLINE_WAIT + 1.0
