"""Streamable HTTP with sessions: progress, sampling-based planning, logging and cancellation
work over HTTP as over the in-memory (stdio-equivalent) transport; the stateless JSON mode
answers a `GET /mcp` at once instead of holding it open."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from cnki_mcp.server.app import build_server
from tests.contract.server_fakes import Harness
from tests.contract.test_server_http import running

ERAS = ["auto", "legacy"]


def _sampler(reply: str, calls: list[str]) -> Any:
    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        calls.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=reply), model="fake", stop_reason="endTurn"
        )

    return sampling


async def _progress_of(client: Client) -> list[float]:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await client.call_tool("search", {"query": "竞业限制 违约金"}, progress_callback=on_progress)
    assert not result.is_error, result.content
    return seen


@pytest.mark.parametrize("mode", ERAS)
async def test_progress_over_http_sessions_matches_the_in_memory_transport(tmp_path: Path, mode: str) -> None:
    local = Harness(tmp_path / "local", inline_wait=5.0)
    async with Client(build_server(local.open), mode=mode) as client:
        expected = await _progress_of(client)
    assert expected, "the fake search reports progress"
    async with running(tmp_path, None) as (url, _h), Client(url, mode=mode) as client:
        over_http = await _progress_of(client)
    assert len(over_http) == len(expected)
    assert over_http == sorted(over_http)


@pytest.mark.parametrize("mode", ERAS)
async def test_concepts_are_planned_by_client_sampling_over_http(tmp_path: Path, mode: str) -> None:
    calls: list[str] = []
    sampler = _sampler('[["竞业限制", "竞业禁止"], ["违约金"]]', calls)
    async with running(tmp_path, None) as (url, h), Client(url, mode=mode, sampling_callback=sampler) as client:
        result = await client.call_tool("search", {"query": "竞业限制违约金的裁判思路"})
        assert not result.is_error, result.content
        assert result.structured_content["result"]["plan"]["method"] == "sampling"
    assert calls and "竞业限制违约金" in calls[0]
    assert h.pipeline.plans[-1].groups == [["竞业限制", "竞业禁止"], ["违约金"]]


# Clients of the earlier protocol versions still send logging/setLevel, deprecated by SEP-2577
# (2026-07-28); the server keeps accepting it, so the SDK's deprecation warning is expected here.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_logging_level_is_accepted_over_an_http_session(tmp_path: Path) -> None:
    log = logging.getLogger("cnki_mcp")
    before = log.level
    try:
        async with running(tmp_path, None) as (url, _h), Client(url, mode="legacy") as client:
            log.setLevel(logging.INFO)
            await client.set_logging_level("error")
            assert log.level == logging.INFO  # the client's wish, not the server's own log level
            assert (await client.call_tool("diagnostics", {})).is_error is False
    finally:
        log.setLevel(before)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_cancelled_request_stops_waiting_and_the_operation_can_still_be_cancelled(
    tmp_path: Path, mode: str
) -> None:
    async with running(tmp_path, None, inline_wait=30.0) as (url, h), Client(url, mode=mode) as client:
        assert h.services is not None
        h.pipeline.block = True
        jobs = h.services.jobs
        waiting_stopped = asyncio.Event()
        subscribe = jobs.subscribe

        def tracking_subscribe(operation_id: str, listener: Any) -> Any:
            unsubscribe = subscribe(operation_id, listener)

            def tracked() -> None:
                unsubscribe()
                waiting_stopped.set()

            return tracked

        jobs.subscribe = tracking_subscribe  # type: ignore[method-assign]
        call = asyncio.create_task(client.call_tool("search", {"query": "初中物理 分层作业"}))
        await h.pipeline.started.wait()
        call.cancel()  # the client abandons the request: notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(waiting_stopped.wait(), 20)  # the server stopped waiting inline
        running_now = (await client.call_tool("operation_status", {})).structured_content
        assert running_now["status"] == "running"
        op_id = running_now["operation_id"]
        cancelled = await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        assert not cancelled.is_error, cancelled.content
        assert cancelled.structured_content["operation"]["status"] == "cancelled"


async def test_stateless_get_is_answered_405_at_once(tmp_path: Path) -> None:
    async with (
        running(tmp_path, None, stateless=True) as (url, _h),
        httpx2.AsyncClient(timeout=10) as http,
    ):
        got = await http.get(url, headers={"Accept": "text/event-stream"})
        assert got.status_code == 405
        assert "POST" in got.headers["allow"]


async def test_session_get_opens_the_standalone_stream(tmp_path: Path) -> None:
    from tests.contract.test_server_http import HEADERS, INIT

    async with running(tmp_path, None) as (url, _h), httpx2.AsyncClient(timeout=10) as http:
        opened = await http.post(url, json=INIT, headers=HEADERS)
        session = opened.headers["mcp-session-id"]
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
        async with http.stream("GET", url, headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
        closed = await http.delete(url, headers={"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
        assert closed.status_code == 200


async def test_cnki_mcp_serve_stateless_flag_serves_json_without_sessions(tmp_path: Path) -> None:
    """The CLI flag reaches the app (sessions, the default, are what tests/clients run against)."""
    from tests.clients.support import http_server, server_env
    from tests.contract.test_server_http import HEADERS, INIT

    with http_server(server_env(tmp_path / "data"), tmp_path, stateless=True) as url:
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(url, json=INIT, headers=HEADERS)
            assert opened.status_code == 200
            assert opened.headers["content-type"].startswith("application/json")
            assert "mcp-session-id" not in opened.headers
            got = await http.get(url, headers={"Accept": "text/event-stream"})
            assert got.status_code == 405
