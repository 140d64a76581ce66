"""Streamable HTTP on a free 127.0.0.1 port (uvicorn in-process on a pre-bound socket): bearer
token required when configured, DNS-rebinding protection on Host/Origin, both eras served, in
session (SSE) mode and in stateless JSON mode."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from cnki_mcp.server.app import TOOL_NAMES, build_server
from cnki_mcp.server.http import http_server
from tests.contract.server_fakes import Harness

TOKEN = "s3cret-token"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path, token: str | None, *, stateless: bool = False, inline_wait: float = 5.0
) -> AsyncIterator[tuple[str, Harness]]:
    h = Harness(tmp_path / "data", inline_wait=inline_wait)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue here until uvicorn accepts: no readiness polling
    port = sock.getsockname()[1]
    srv = http_server(build_server(h.open), host="127.0.0.1", port=port, token=token, stateless=stateless)
    task = asyncio.create_task(srv.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}/mcp", h
    finally:
        srv.should_exit = True
        await task
        sock.close()
    assert h.services is not None and h.services.closed


def first_message(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a POST answer: the JSON body, or the first SSE `data:` event."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise AssertionError(f"no message in {response.text!r}")


@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
async def test_requests_without_the_bearer_token_get_401_and_with_it_work(
    tmp_path: Path, stateless: bool
) -> None:
    async with (
        running(tmp_path, TOKEN, stateless=stateless) as (url, h),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        missing = await http.post(url, json=INIT, headers=HEADERS)
        assert missing.status_code == 401
        wrong = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200
        assert first_message(ok)["result"]["serverInfo"]["name"] == "cnki"
        assert ("mcp-session-id" in ok.headers) is (not stateless)

        authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with (
            authed,
            streamable_http_client(url, http_client=authed) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert tools == set(TOOL_NAMES)
            diag = await session.call_tool("diagnostics", {})
            assert not diag.is_error and diag.structured_content["browser"]["running"] is False
        assert h.services is not None and h.services.host.started is False


@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
async def test_a_foreign_host_or_origin_header_is_rejected(tmp_path: Path, stateless: bool) -> None:
    async with (
        running(tmp_path, None, stateless=stateless) as (url, _h),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        bad_host = await http.post(url, json=INIT, headers={**HEADERS, "Host": "evil.example:80"})
        assert bad_host.status_code == 421
        bad_origin = await http.post(url, json=INIT, headers={**HEADERS, "Origin": "http://evil.example"})
        assert bad_origin.status_code == 403
        fine = await http.post(url, json=INIT, headers=HEADERS)
        assert fine.status_code == 200


async def test_loopback_host_and_origin_without_a_port_are_accepted(tmp_path: Path) -> None:
    """A server on the scheme's default port (80) gets `Host: localhost`, and a page on
    http://localhost sends that origin; only the loopback names with a port used to pass (421 /
    403 for every client of `serve --port 80`). Other names still do not."""
    async with running(tmp_path, None) as (url, _h), httpx2.AsyncClient(timeout=30) as http:
        for host in ("127.0.0.1", "localhost", "[::1]"):
            answer = await http.post(url, json=INIT, headers={**HEADERS, "Host": host})
            assert answer.status_code == 200, host
        for origin in ("http://127.0.0.1", "http://localhost", "http://[::1]"):
            answer = await http.post(url, json=INIT, headers={**HEADERS, "Origin": origin})
            assert answer.status_code == 200, origin
        assert (await http.post(url, json=INIT, headers={**HEADERS, "Host": "localhost.evil"})).status_code == 421
        assert (await http.post(url, json=INIT, headers={**HEADERS, "Host": "evil.example"})).status_code == 421
        bad_origin = await http.post(url, json=INIT, headers={**HEADERS, "Origin": "http://localhost.evil"})
        assert bad_origin.status_code == 403


@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_both_protocol_eras_are_served_over_http(tmp_path: Path, mode: str, stateless: bool) -> None:
    async with running(tmp_path, None, stateless=stateless) as (url, _h), Client(url, mode=mode) as client:
        result = await client.call_tool("search_results", {"search_id": "op_x", "limit": 3})
        assert not result.is_error
        assert result.structured_content["total"] == 120


async def test_a_server_on_every_interface_answers_clients_that_address_it_by_its_own_ip(tmp_path: Path) -> None:
    """`serve --transport http --host 0.0.0.0` with a token (README "安全"): a client on the
    network addresses the machine by its IP, so its Host is that address and port; it used to be
    refused 421 like a rebinding page. 127.0.0.2 stands for the machine's network address; a
    foreign host name on the same connection is still refused."""
    h = Harness(tmp_path / "data", inline_wait=5.0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("0.0.0.0", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    srv = http_server(build_server(h.open), host="0.0.0.0", port=port, token=TOKEN)
    task = asyncio.create_task(srv.serve(sockets=[sock]))
    auth = {**HEADERS, "Authorization": f"Bearer {TOKEN}"}
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            direct = await http.post(f"http://127.0.0.2:{port}/mcp", json=INIT, headers=auth)
            assert direct.status_code == 200 and first_message(direct)["result"]["serverInfo"]["name"] == "cnki"
            foreign = await http.post(
                f"http://127.0.0.2:{port}/mcp", json=INIT, headers={**auth, "Host": f"evil.example:{port}"}
            )
            assert foreign.status_code == 421
            other_ip = await http.post(
                f"http://127.0.0.2:{port}/mcp", json=INIT, headers={**auth, "Host": f"127.0.0.3:{port}"}
            )
            assert other_ip.status_code == 421  # only the address the connection arrived on
    finally:
        srv.should_exit = True
        await task
        sock.close()


BAD_PROMPT_ARGUMENTS = [
    (None, {"missing": ["topic"], "unknown": []}),
    ({}, {"missing": ["topic"], "unknown": []}),
    ({"subject": "竞业限制"}, {"missing": ["topic"], "unknown": ["subject"]}),
    ({"topic": "竞业限制", "extra": "x"}, {"missing": [], "unknown": ["extra"]}),
    ({"topic": ""}, None),
    ({"topic": "x" * 501}, None),
]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_prompt_arguments_that_are_missing_unknown_or_invalid_are_invalid_params(
    tmp_path: Path, mode: str
) -> None:
    """prompts/get with a bad argument is the client's mistake, -32602 as for an unknown prompt
    name; it used to be JSON-RPC code 0 (handshake era) or -32603 with a logged traceback (2026)."""
    async with running(tmp_path, None) as (url, _h), Client(url, mode=mode) as client:
        for name in ("research_topic", "literature_review"):
            for arguments, named in BAD_PROMPT_ARGUMENTS:
                with pytest.raises(MCPError) as raised:
                    await client.get_prompt(name, arguments)
                assert raised.value.code == INVALID_PARAMS, (name, arguments, raised.value)
                data = raised.value.data
                assert data["prompt"] == name
                if named is not None:
                    assert {k: data[k] for k in named} == named
                else:
                    assert [e["field"] for e in data["errors"]] == ["topic"]
            got = await client.get_prompt(name, {"topic": "竞业限制"})
            assert "竞业限制" in got.messages[0].content.text
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nope", {"topic": "x"})
        assert unknown.value.code == INVALID_PARAMS
