"""Serving stdio after `fast_start` answered the handshake, and capturing the SDK's own handshake
answers that `fast_start` replays (docs/benchmarks.md §Start-up).

`run_stdio(server, handover)` runs the SDK's stdio transport (with its claim of fds 0 and 1)
and first feeds the server every line `fast_start` already read (the session needs the client's
capabilities from `initialize`), dropping the server's replies to the requests `fast_start`
already answered. The SDK reads fd 0 from the
byte after those lines. Each dropped reply is compared with the one that was sent; a difference
is logged (the snapshot is stale: `scripts/update_tool_catalog.py`)."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import AsyncIterator
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.fast_start import LIST_METHODS, Handover, render_snapshot

log = logging.getLogger("cnki_mcp.server")


def _message(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # what the SDK's own reader does with a bad line
        return exc


def _wire(message: SessionMessage) -> dict[str, Any]:
    return json.loads(message.message.model_dump_json(by_alias=True, exclude_unset=True))


async def run_stdio(server: CnkiServer, handover: Handover) -> None:
    """Serve the session over stdio, continuing from what `fast_start` read and answered."""
    lowlevel = server._lowlevel_server
    answered = dict(handover.answered)  # request id -> the reply already written
    async with stdio_server() as (sdk_read, sdk_write):
        read_send, read_recv = create_context_streams[SessionMessage | Exception](0)
        write_send, write_recv = create_context_streams[SessionMessage](0)

        async def feed() -> None:
            async with read_send:
                for line in handover.replay:
                    await read_send.send(_message(line))
                async for item in sdk_read:
                    await read_send.send(item)

        async def drain() -> None:
            async with sdk_write:
                async for message in write_recv:
                    reply_id = getattr(message.message, "id", None)
                    key = json.dumps(reply_id)
                    if reply_id is not None and key in answered and not hasattr(message.message, "method"):
                        sent = answered.pop(key)
                        if _wire(message) != sent:
                            log.warning("start-up snapshot differs from the server's answer (id %s): "
                                        "run scripts/update_tool_catalog.py", key)
                        continue
                    await sdk_write.send(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            tg.start_soon(drain)
            async with write_send:
                await lowlevel.run(read_recv, write_send, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


class _Sink:
    """An async text file collecting the replies; `done` once `expected` lines arrived."""

    def __init__(self, expected: int) -> None:
        self.lines: list[str] = []
        self.expected = expected
        self.done = anyio.Event()

    async def write(self, text: str) -> None:
        self.lines.extend(line for line in text.splitlines() if line.strip())
        if len(self.lines) >= self.expected:
            self.done.set()

    async def flush(self) -> None:
        return None


class _Lines:
    """An async text file over given lines that ends once every reply arrived (end of input
    earlier would cancel requests still being answered)."""

    def __init__(self, lines: list[str], sink: _Sink) -> None:
        self._lines = lines
        self._sink = sink

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line
        await self._sink.done.wait()


async def capture(server: CnkiServer, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server's replies, as wire JSON, to these messages sent over the SDK's stdio transport
    (explicit streams: no fd is claimed)."""
    lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in requests]
    sink = _Sink(expected=sum(1 for r in requests if "id" in r))
    lowlevel = server._lowlevel_server
    with anyio.fail_after(60):
        async with stdio_server(stdin=_Lines(lines, sink), stdout=sink) as (read, write):  # type: ignore[arg-type]
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
    return [json.loads(line) for line in sink.lines]


def handshake_requests(version: str, capabilities: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A client's first messages: initialize at `version`, the notification, every list method."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "snapshot", "version": "0"},
        },
    }
    lists = [{"jsonrpc": "2.0", "id": i + 1, "method": m} for i, m in enumerate(LIST_METHODS)]
    return [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"}, *lists]


async def capture_replies(version: str, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """method -> result the server answers at this revision (a server on a temporary data
    directory, built as `serve` builds it)."""
    from cnki_mcp.server.app import build_server
    from cnki_mcp.services import Services
    from cnki_mcp.settings import Settings

    requests = handshake_requests(version, capabilities)
    with tempfile.TemporaryDirectory(prefix="cnki-handshake-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        replies = await capture(build_server(lambda: Services.open(settings)), requests)
    methods = {r["id"]: r["method"] for r in requests if "id" in r}
    return {methods[reply["id"]]: reply["result"] for reply in replies if "result" in reply}


async def current_snapshot_text() -> str:
    """handshake.json as the installed SDK answers now, for every handshake revision."""
    replies = {version: await capture_replies(version) for version in HANDSHAKE_PROTOCOL_VERSIONS}
    return render_snapshot(metadata.version("mcp"), replies)
