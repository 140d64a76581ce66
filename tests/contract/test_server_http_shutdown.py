"""Stopping `cnki-mcp serve --transport http` (SIGTERM) while a call waits on an operation: the
operation ends `interrupted` first and the call is answered with its record and next_step before
the server stops. Before, the exit flag closed every SSE stream at once (sse-starlette watches it):
the waiting call got no answer and the client never learnt its operation_id."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sse_starlette.sse
from mcp import Client

from cnki_mcp.server.app import build_server
from cnki_mcp.server.http import http_server
from tests.contract.server_fakes import Harness
from tests.contract.test_server_http import HEADERS, INIT, first_message


@pytest.fixture
def sigterm_in_a_test() -> Iterator[None]:
    """uvicorn raises the signals it handled again once serve() returns, with the handler it found
    at start: a no-op here, not the test process's end. sse-starlette's process-wide exit flag,
    set by the handler, is reset for later tests."""
    before = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
        sse_starlette.sse.AppStatus.should_exit = False


def messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


@asynccontextmanager
async def served(h: Harness) -> AsyncIterator[tuple[Any, str]]:
    """The HTTP server of `h` on a free loopback port: (server, its /mcp URL); stopped on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    srv = http_server(build_server(h.open), host="127.0.0.1", port=port, token=None)
    serving = asyncio.create_task(srv.serve(sockets=[sock]))
    try:
        yield srv, f"http://127.0.0.1:{port}/mcp"
    finally:
        srv.should_exit = True
        await serving
        sock.close()


async def initialized_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """Initialize a handshake-era session; the headers its later requests carry."""
    init = await http.post(url, json=INIT, headers=HEADERS)
    assert first_message(init)["result"]["serverInfo"]["name"] == "cnki"
    session = {**HEADERS, "mcp-session-id": init.headers["mcp-session-id"],
               "mcp-protocol-version": INIT["params"]["protocolVersion"]}  # fmt: skip
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    return session


SEARCH_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "search", "arguments": {"query": "竞业限制 违约金"}}}  # fmt: skip


async def test_a_call_waiting_on_an_operation_is_answered_interrupted_at_sigterm(
    tmp_path: Path, sigterm_in_a_test: None
) -> None:
    h = Harness(tmp_path / "data", inline_wait=30.0)
    h.pipeline.block = True  # the search runs until the server stops
    async with served(h) as (srv, url), httpx2.AsyncClient(timeout=60) as http:
        session = await initialized_session(http, url)
        answer = asyncio.create_task(http.post(url, json=SEARCH_CALL, headers=session))
        await h.pipeline.started.wait()
        srv.handle_exit(signal.SIGTERM, None)  # what the process's SIGTERM handler calls
        response = await answer
    [reply] = [m for m in messages(response.text) if m.get("id") == 2]
    record = reply["result"]["structuredContent"]
    assert record["status"] == "interrupted"
    continue_call = f"operation_control(action='continue', operation_id='{record['operation_id']}')"
    assert record["next_step"].startswith(continue_call)
    assert h.services is not None and h.services.closed


async def test_a_call_still_before_its_operation_at_sigterm_starts_none_and_is_answered_server_stopping(
    tmp_path: Path, sigterm_in_a_test: None
) -> None:
    """The search tool plans (and looks in its cache) before it starts its operation. A SIGTERM in
    that window used to find no operation to stop; the search then started during the shutdown
    (a real server launched the browser), ran past the answer window and its answer was lost."""
    h = Harness(tmp_path / "data", inline_wait=30.0)
    planning = asyncio.Event()
    release = asyncio.Event()
    stopped = asyncio.Event()

    async def cached_async(inp: Any, plan: Any) -> None:
        planning.set()
        await release.wait()
        return None

    h.pipeline.cached_async = cached_async  # type: ignore[method-assign]
    async with served(h) as (srv, url), httpx2.AsyncClient(timeout=60) as http:
        session = await initialized_session(http, url)
        assert h.services is not None
        jobs = h.services.jobs
        shutdown = jobs.shutdown

        async def tracked_shutdown() -> None:
            await shutdown()
            stopped.set()

        jobs.shutdown = tracked_shutdown  # type: ignore[method-assign]
        answer = asyncio.create_task(http.post(url, json=SEARCH_CALL, headers=session))
        await planning.wait()
        srv.handle_exit(signal.SIGTERM, None)
        await stopped.wait()
        release.set()  # planning ends after the operations were stopped
        response = await answer
    [reply] = [m for m in messages(response.text) if m.get("id") == 2]
    result = reply["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["code"] == "SERVER_STOPPING"
    assert result["structuredContent"]["retryable"] is True
    assert not h.pipeline.started.is_set()


async def test_a_listen_stream_of_a_2026_client_is_closed_gracefully_at_sigterm(
    tmp_path: Path, sigterm_in_a_test: None
) -> None:
    """A `subscriptions/listen` request is a POST whose stream never ends by itself. It used to
    hold the answer window for its whole bound and then uvicorn's graceful timeout, which cancelled
    it (the client saw the subscription lost, the server logged an ASGI exception): every SIGTERM
    took over 10 s, past `docker stop`'s grace. Now the stream ends with its final result."""
    h = Harness(tmp_path / "data", inline_wait=30.0)
    async with served(h) as (srv, url), Client(url) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            srv.handle_exit(signal.SIGTERM, None)
            events = [event async for event in subscription]  # SubscriptionLost if cut off
        assert events == []
    assert h.services is not None and h.services.closed


@pytest.fixture
def sighup_in_a_test(sigterm_in_a_test: None) -> Iterator[None]:
    """A no-op handler at start for the SIGHUP uvicorn raises again once serve() returns."""
    before = signal.signal(signal.SIGHUP, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)


async def test_sighup_stops_the_http_server_as_sigterm_does(tmp_path: Path, sighup_in_a_test: None) -> None:
    """Closing the terminal that runs `cnki-mcp serve --transport http` (SIGHUP): the server
    stops as at SIGTERM, operations ended and the services closed. uvicorn handles SIGINT and
    SIGTERM only: SIGHUP killed it on the spot (operations left running, the store not closed)."""
    h = Harness(tmp_path / "data", inline_wait=30.0)
    async with served(h) as (srv, url), httpx2.AsyncClient(timeout=60) as http:
        await initialized_session(http, url)
        signal.raise_signal(signal.SIGHUP)  # the handler runs before the next line
        assert srv._stopping
    assert h.services is not None and h.services.closed
