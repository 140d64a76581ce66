"""Serving stdio after `fast_start` answered the handshake, and capturing the SDK's own handshake
answers that `fast_start` replays (docs/benchmarks.md §Start-up).

`run_stdio(server, handover)` runs the SDK's stdio transport (with its claim of fd 1; fd 0 is
claimed here, `claimed_stdin`) and first feeds the server every line `fast_start` already read (the session needs the client's
capabilities from `initialize`), dropping the server's replies to the requests `fast_start`
already answered. Serving reads fd 0 from the
byte after those lines. Each dropped reply is compared with the one that was sent; a difference
is logged (the snapshot is stale: `scripts/update_tool_catalog.py`).

stdin is read by a daemon thread (`StdinLines`), not the SDK's worker thread: a client or a
terminal that keeps stdin open would otherwise hold the process after Ctrl-C for ever (the SDK
waits for its blocked read before the session can end, and the interpreter waits for the thread
before it exits)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.fast_start import LIST_METHODS, Handover, render_snapshot

log = logging.getLogger("cnki_mcp.server")


def _message(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # what the SDK's own reader does with a bad line
        return exc


# An integer this long is nobody's request id; Python refuses to convert longer ones at all.
_ID_DIGITS = 4000


def unreadable_request(line: bytes | str) -> SessionMessage | None:
    """The JSON-RPC error that answers a request the SDK cannot read, else None.

    The SDK's parser refuses some lines Python's reads: a lone surrogate escape (`"\\ud800"`, what
    JavaScript's JSON.stringify writes for a string cut inside a surrogate pair), nesting past
    pydantic-core's 200 levels, an integer over 4,300 digits, params that are not an object, a
    `jsonrpc` other than "2.0". It drops such a line, so the client waited for the answer to its
    request until its own timeout. A line that names a request id gets PARSE_ERROR (the JSON) or
    INVALID_REQUEST (its shape); the message gives the parser's reason and says which of these it
    is, as `data.problem` does (`PROBLEMS`). A line the SDK reads, or one without a request to
    answer, gets None."""
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValueError as exc:
        errors = exc.errors() if isinstance(exc, ValidationError) else []
        reason = str(errors[0].get("msg", "")) if errors else str(exc)
        invalid_json = not errors or errors[0].get("type") == "json_invalid"
    long_numbers: list[str] = []

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) <= _ID_DIGITS:
            return int(digits)
        long_numbers.append(digits)
        return 0

    try:
        data = json.loads(line, parse_int=parse_int)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("method"), str):
        return None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None  # a notification, or no id an answer could carry
    code = mcp_types.PARSE_ERROR if invalid_json else mcp_types.INVALID_REQUEST
    problem = _problem(data, invalid_json=invalid_json, long_number=bool(long_numbers))
    message = f"无法读取的请求（{reason[:200]}）：{PROBLEMS[problem]}"
    error = mcp_types.ErrorData(code=code, message=message, data={"problem": problem})
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


# What `unreadable_request` names as the problem (`data.problem`), and what it tells the client.
PROBLEMS: dict[str, str] = {
    "lone_surrogate": "字符串中有不成对的代理字符转义（\\ud800–\\udfff 单独出现，常见于在代理对中间截断的字符串）",
    "nesting": "JSON 嵌套超过 200 层",
    "long_number": "数字超过 4,300 位",
    "unreadable_json": "JSON 无法读取",
    "jsonrpc_version": 'jsonrpc 字段须为 "2.0"',
    "params_not_object": "params 须为 JSON 对象（不能是数组、字符串或数字）",
    "request_shape": "请求的结构不符合 JSON-RPC 2.0",
}
# Nesting deeper than this is refused by the SDK's parser (pydantic-core's recursion limit).
_SDK_DEPTH = 200


def _problem(data: dict[str, Any], *, invalid_json: bool, long_number: bool) -> str:
    """Which of `PROBLEMS` made the SDK refuse `data` (as Python's json read it)."""
    if invalid_json:
        if _has_lone_surrogate(data):
            return "lone_surrogate"
        if long_number:
            return "long_number"
        if _depth(data) > _SDK_DEPTH:
            return "nesting"
        return "unreadable_json"
    if data.get("jsonrpc") != "2.0":
        return "jsonrpc_version"
    if "params" in data and not isinstance(data["params"], dict):
        return "params_not_object"
    return "request_shape"


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _wire(message: SessionMessage) -> dict[str, Any]:
    return json.loads(message.message.model_dump_json(by_alias=True, exclude_unset=True))


class StdinLines:
    """The lines of a file descriptor as an async iterator of text, read by a daemon thread.
    Waiting for a line is cancellable, and the thread never delays the interpreter's exit."""

    def __init__(self, fd: int, *, ahead: int = 16) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(ahead)
        self.thread = threading.Thread(target=self._read, name="cnki-mcp stdin", daemon=True)
        self.thread.start()

    def _put(self, line: bytes) -> bool:
        """Hand a line to the loop; False once nobody will read any more (the loop closed, or
        the hand-over was cancelled while the loop shut down)."""
        try:
            asyncio.run_coroutine_threadsafe(self._queue.put(line), self._loop).result()
        except (RuntimeError, concurrent.futures.CancelledError):
            return False
        return True

    def _read(self) -> None:
        try:
            with open(self._fd, "rb", closefd=False) as source:
                for line in iter(source.readline, b""):
                    if not self._put(line):
                        return
        except (OSError, ValueError):
            pass
        self._put(b"")  # end of input

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await self._queue.get()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


@contextlib.contextmanager
def claimed_stdin() -> Iterator[int]:
    """A private duplicate of fd 0 to read the client from, fd 0 itself pointing at the null
    device meanwhile (children and stray reads get EOF, as with the SDK's own claim); restored
    on exit. The duplicate is never closed: the reader thread may still be blocked on it."""
    try:
        private = os.dup(0)
    except OSError:
        yield 0
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:  # fd 0 stays the client's; reading the duplicate is still right
        yield private
        return
    _rebind_std_handle(0)
    try:
        yield private
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)
            _rebind_std_handle(0)


def _rebind_std_handle(fd: int) -> None:
    """Windows: children inherit the Win32 standard handle, which os.dup2 leaves alone; point it
    at the descriptor too (the SDK does the same for its own claim). A no-op elsewhere."""
    from mcp.os.win32.utilities import rebind_std_handle_to_fd

    with contextlib.suppress(OSError):
        rebind_std_handle_to_fd(fd)


async def run_stdio(server: CnkiServer, handover: Handover) -> None:
    """Serve the session over stdio, continuing from what `fast_start` read and answered. A client
    that went away while a reply or a progress notification was being written (killed, or closed
    the pipe without waiting) ends the session as stdin's end does: one log line, exit status 0.
    Before, the writer's BrokenPipeError ended the server with status 1 and a 60-line traceback in
    the client's log, after the same clean-up."""
    try:
        with claimed_stdin() as fd:
            await _serve_stdio(server, handover, StdinLines(fd))
    except* (BrokenPipeError, ConnectionResetError):
        log.info("stdio: the client closed its end of stdout; the session ended")


class _Screened:
    """The client's lines as the SDK's transport reads them, less the requests it could not read:
    those are answered through `refused` instead (`unreadable_request`)."""

    def __init__(self, lines: AsyncIterator[str], refused: MemoryObjectSendStream[SessionMessage]) -> None:
        self._lines = lines
        self._refused = refused

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[str]:
        async for line in self._lines:
            reply = unreadable_request(line)
            if reply is None:
                yield line
            else:
                await self._refused.send(reply)


async def _serve_stdio(
    server: CnkiServer, handover: Handover, stdin: AsyncIterator[str], stdout: Any = None
) -> None:
    """`stdout`: an async text file for the replies (default: the SDK's claim of fd 1)."""
    lowlevel = server._lowlevel_server
    answered = dict(handover.answered)  # request id -> the reply already written
    refused_send, refused_recv = anyio.create_memory_object_stream[SessionMessage](16)
    screened = _Screened(stdin, refused_send)
    async with stdio_server(stdin=screened, stdout=stdout) as (sdk_read, sdk_write):  # type: ignore[arg-type]
        read_send, read_recv = create_context_streams[SessionMessage | Exception](0)
        write_send, write_recv = create_context_streams[SessionMessage](0)

        async def feed() -> None:
            async with read_send:
                for line in handover.replay:
                    reply = unreadable_request(line)
                    if reply is None:
                        await read_send.send(_message(line))
                        continue
                    key = json.dumps(getattr(reply.message, "id", None))
                    if answered.pop(key, None) is not None:
                        # fast_start answered this line (Python's json read it); the SDK never will
                        # (review 9 finding 4: one id got a result and then PARSE_ERROR)
                        continue
                    await refused_send.send(reply)
                async for item in sdk_read:
                    await read_send.send(item)

        async def answer_refused() -> None:
            async with refused_recv:
                async for reply in refused_recv:
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await sdk_write.send(reply)

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
            tg.start_soon(answer_refused)
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
