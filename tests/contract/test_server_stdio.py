"""`cnki-mcp serve` as a subprocess over stdio with the SDK's ClientSession (2025 era)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from cnki_mcp import __version__
from cnki_mcp.clock import SystemClock
from cnki_mcp.server.app import TOOL_NAMES
from cnki_mcp.store import Store
from tests.child_env import child_env


def _env(data_dir: Path) -> dict[str, str]:
    env = child_env()
    env["CNKI_DATA_DIR"] = str(data_dir)
    env["CNKI_HEADLESS"] = "1"
    return env


# Clients of the earlier protocol versions still send logging/setLevel, deprecated by SEP-2577
# (2026-07-28); the server keeps accepting it, so the SDK's deprecation warning is expected here.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_stdio_server_lists_tools_and_answers_diagnostics_without_a_browser(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cnki_mcp", "serve"], env=_env(data_dir), cwd=str(tmp_path)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.version == __version__
        assert init.capabilities.logging is not None
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == set(TOOL_NAMES)
        result = await session.call_tool("diagnostics", {})
        assert not result.is_error
        data = result.structured_content
        assert data["version"] == __version__
        assert data["data_dir"] == str(data_dir.resolve())
        assert data["browser"]["running"] is False
        bad = await session.call_tool("search", {"query": ""})
        assert bad.is_error and bad.structured_content["code"] == "INVALID_ARGUMENT"
        await session.set_logging_level("warning")
    assert not (data_dir / "browser").exists()


def test_serve_on_a_data_directory_in_use_fails_with_a_clear_code(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = Store.open(data_dir, SystemClock())
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cnki_mcp", "serve"],
            env=_env(data_dir),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        store.close()
    assert proc.returncode == 2
    assert "DATA_DIRECTORY_IN_USE" in proc.stderr
    assert str(data_dir.resolve()) in proc.stderr  # which directory: the default one is not obvious


async def test_a_stdio_server_loads_the_segmenter_dictionary_in_the_background_after_its_handshake(
    tmp_path: Path,
) -> None:
    """DESIGN.md "Start-up", step 5: the real `serve`, the handshake answered first; the load is
    reported (debug log) from its own thread, not the one serving the session."""
    import asyncio

    env = {**_env(tmp_path / "data"), "CNKI_LOG_LEVEL": "DEBUG"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cnki_mcp", "serve", env=env, cwd=str(tmp_path),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        await proc.stdin.drain()
        replies: list[dict[str, object]] = []
        while not any(r.get("id") == 2 for r in replies):
            replies.append(json.loads(await asyncio.wait_for(proc.stdout.readline(), 60)))
        loaded = ""
        while "segmenter dictionary loaded in the background" not in loaded:
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            assert line, "the server's stderr ended before the warm-up reported"
            loaded = line.decode("utf-8", "replace")
        assert "(MainThread)" not in loaded
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def _answered_server(data: Path, cwd: Path, *, own_group: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """`cnki-mcp serve` over pipes that has answered a handshake and one diagnostics call, its
    stdin kept open; killed at the end if still running."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cnki_mcp", "serve"],
        env=_env(data),
        cwd=str(cwd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=own_group,
        # as a terminal's foreground job: a shell starting this suite in the background has set
        # SIGINT to ignored, and an ignored SIGINT is inherited (the Ctrl-C test then never ends)
        preexec_fn=_default_sigint,
    )
    assert proc.stdin is not None and proc.stdout is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "diagnostics", "arguments": {}}},
    ]  # fmt: skip
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        replies: list[dict[str, object]] = []
        while not any(r.get("id") == 2 for r in replies):
            line = proc.stdout.readline()
            assert line, "the server's stdout ended before the diagnostics reply"
            replies.append(json.loads(line))
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()


def test_a_start_up_error_with_stderr_closed_never_reaches_the_protocol_channel(tmp_path: Path) -> None:
    """A client that starts the server with fd 2 closed (`2>&-`): the start-up error was printed
    on stdout, the stdio protocol channel, as a line the client could not read."""
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "cnki_mcp", "serve"], env=_env(not_a_folder), cwd=str(tmp_path),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, timeout=60,
        preexec_fn=lambda: os.close(2),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == b""


def test_ctrl_c_ends_a_stdio_server_whose_client_keeps_stdin_open(tmp_path: Path) -> None:
    """Ctrl-C in the terminal that runs `cnki-mcp serve` (SIGINT to its process group) after a
    client connected: the server exits 130 instead of waiting forever on the open stdin (the
    SDK's stdin reader thread used to block the interpreter's exit)."""
    with _answered_server(tmp_path / "data", tmp_path, own_group=True) as proc:
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130  # a bound: TimeoutExpired fails the test


def test_sigterm_ends_a_stdio_server_as_ctrl_c_does(tmp_path: Path) -> None:
    """SIGTERM (a client or a process manager stopping the server) closes it as Ctrl-C does:
    operations ended, browser and store closed (the WAL checkpointed away). It used to kill the
    process on the spot: operations left `running`, the browser orphaned for a while."""
    data = tmp_path / "data"
    with _answered_server(data, tmp_path) as proc:
        assert (data / "cnki.sqlite3-wal").exists()  # the store is open
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130  # the Ctrl-C path, not death by the signal (-15)
        assert not (data / "cnki.sqlite3-wal").exists()  # the store was closed


def test_a_client_gone_while_a_reply_is_written_ends_the_server_cleanly(tmp_path: Path) -> None:
    """The client died (its end of our stdout closed) with a call in flight, stdin still open: the
    reply's write fails and the session ends as at stdin's end, status 0, store closed. It ended
    with status 1 and a 60-line BrokenPipeError traceback in the client's log."""
    data = tmp_path / "data"
    with _answered_server(data, tmp_path) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdout.close()
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "diagnostics", "arguments": {}}}
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
        assert not (data / "cnki.sqlite3-wal").exists()  # the store was closed


def test_the_stdin_reader_ends_quietly_when_its_loop_goes_away_while_it_hands_over_a_line() -> None:
    """The session ended with lines still unread (the loop closes while the reader thread waits
    to hand one over): the thread stops without an uncaught exception on stderr."""
    import asyncio

    from cnki_mcp.server.stdio import StdinLines

    read_fd, write_fd = os.pipe()
    os.write(write_fd, b'{"jsonrpc": "2.0", "method": "x"}\n' * 8)
    uncaught: list[threading.ExceptHookArgs] = []
    hook = threading.excepthook
    threading.excepthook = uncaught.append

    async def session() -> StdinLines:
        lines = StdinLines(read_fd, ahead=1)
        assert (await anext(lines)).startswith("{")
        async with asyncio.timeout(30):
            while not lines._queue._putters:  # type: ignore[attr-defined]  # the thread waits on a full queue
                await asyncio.sleep(0)
        return lines

    try:
        lines = asyncio.run(session())  # closing the loop cancels the pending hand-over
        lines.thread.join(timeout=30)
        assert not lines.thread.is_alive()
        assert uncaught == []
    finally:
        threading.excepthook = hook
        os.close(write_fd)
        os.close(read_fd)


def _replies_until(proc: subprocess.Popen[bytes], ids: set[int]) -> dict[object, dict[str, Any]]:
    """The replies read until every id in `ids` is answered (bounded: 60 s fails the test). Read
    by a thread from the buffered pipe: a `select` on the pipe between `readline`s missed a reply
    that had come in the same read as the one before it (already in the file's buffer), so under
    load the test waited its whole bound for an answer it had read."""
    assert proc.stdout is not None
    stdout = proc.stdout
    got: dict[object, dict[str, Any]] = {}

    def read() -> None:
        while not ids <= set(got):
            line = stdout.readline()
            if not line:
                return
            reply = json.loads(line)
            got[reply.get("id")] = reply

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)
    assert ids <= set(got), f"no answer to {sorted(ids - set(got))}"  # type: ignore[type-var]
    return got


def test_a_request_the_sdk_cannot_read_is_answered_with_a_json_rpc_error(tmp_path: Path) -> None:
    """A lone surrogate escape (JavaScript's JSON.stringify of a string cut inside a surrogate
    pair) or an integer over 4,300 digits: the SDK's parser drops the line, and the request was
    never answered (the client waited for its own timeout). Both while the start-up handshake
    hands over and afterwards."""
    def call(rid: int, arguments: str, name: str = "search_library") -> bytes:
        head = '{"jsonrpc":"2.0","id":' + str(rid) + ',"method":"tools/call","params":{"name":"' + name
        return (head + '","arguments":' + arguments + "}}\n").encode()

    surrogate = call(3, '{"query":"违约金\\ud800"}')
    with _answered_server(tmp_path / "data", tmp_path) as proc:  # the handshake was answered
        assert proc.stdin is not None
        proc.stdin.write(surrogate + call(4, '{"query":"x","offset":' + "9" * 5000 + "}") + call(5, "{}", "diagnostics"))
        proc.stdin.flush()
        replies = _replies_until(proc, {3, 4, 5})
        assert replies[3]["error"]["code"] == replies[4]["error"]["code"] == -32700
        assert "result" in replies[5]

    proc = subprocess.Popen([sys.executable, "-m", "cnki_mcp", "serve"], env=_env(tmp_path / "data2"),
                            cwd=str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert proc.stdin is not None
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        # sent with the handshake: the start-up fast path reads it and hands it over
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in (initialize, initialized)) + surrogate)
        proc.stdin.flush()
        assert _replies_until(proc, {1, 3})[3]["error"]["code"] == -32700
    finally:
        _kill(proc)


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"ping"}', None),  # the SDK reads it
        ('{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\ud800"}}', None),  # nothing to answer
        ("{not json", None),  # no id to answer
        ('{"jsonrpc":"2.0","id":"a","method":"ping","params":{"a":"\\udc00"}}', -32700),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":' + "[" * 300 + "]" * 300 + "}}", -32700),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', -32600),
    ],
)
def test_which_unreadable_lines_are_answered(line: str, code: int | None) -> None:
    from cnki_mcp.server.stdio import unreadable_request

    reply = unreadable_request(line)
    if code is None:
        assert reply is None
    else:
        assert reply is not None
        wire = json.loads(reply.message.model_dump_json(by_alias=True, exclude_unset=True))
        assert wire["error"]["code"] == code and wire["id"] == json.loads(line)["id"]


async def test_a_line_the_fast_path_answered_is_not_answered_again_when_the_sdk_refuses_it(tmp_path: Path) -> None:
    """review 9 finding 4: `fast_start` reads with Python's json, which takes lines the SDK's
    parser refuses. A refused line it had answered was answered again from the replay, with
    PARSE_ERROR: one id got two replies (the TS SDK reports "unknown message ID")."""
    from cnki_mcp.server.app import build_server
    from cnki_mcp.server.fast_start import Handover
    from cnki_mcp.server.stdio import _Lines, _serve_stdio, _Sink
    from cnki_mcp.services import Services
    from cnki_mcp.settings import Settings

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    refused = '{"jsonrpc":"2.0","id":2,"method":"tools/list","x":"\\ud800"}\n'  # read here, not by the SDK
    answered = {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}
    handover = Handover(
        replay=[(json.dumps(m) + "\n").encode() for m in (initialize, initialized)] + [refused.encode()],
        answered={"2": answered},
        replies=1,
    )
    settings = Settings(data_dir=tmp_path / "data")
    sink = _Sink(expected=2)
    ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}) + "\n"
    with anyio.fail_after(60):
        await _serve_stdio(build_server(lambda: Services.open(settings)), handover, _Lines([ping], sink), sink)
    assert sorted(json.loads(line)["id"] for line in sink.lines) == [1, 3]


def test_the_handshake_sent_with_a_refused_initialize_gets_one_reply_per_id(tmp_path: Path) -> None:
    """The reviewer's case end to end: an initialize with a lone surrogate in clientInfo.name,
    sent with the rest of the handshake, got a result and then PARSE_ERROR for id 1."""
    proc = subprocess.Popen([sys.executable, "-m", "cnki_mcp", "serve"], env=_env(tmp_path / "data"),
                            cwd=str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        initialize = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                      '"capabilities":{},"clientInfo":{"name":"client\\ud83d","version":"0"}}}\n')  # fmt: skip
        rest = [{"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
        proc.stdin.write(initialize.encode() + b"".join(json.dumps(m).encode() + b"\n" for m in rest))
        proc.stdin.flush()
        ids = []
        while 2 not in ids:
            line = proc.stdout.readline()
            assert line, "the server ended before answering"
            ids.append(json.loads(line).get("id"))
        proc.stdin.write(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
        proc.stdin.flush()
        while 3 not in ids:
            line = proc.stdout.readline()
            assert line, "the server ended before answering"
            ids.append(json.loads(line).get("id"))
        assert sorted(ids) == [1, 2, 3], ids
    finally:
        _kill(proc)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"jsonrpc":"2.0","id":"a","method":"ping","params":{"a":"\\udc00"}}', "lone_surrogate"),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":' + "[" * 300 + "]" * 300 + "}}", "nesting"),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":' + "9" * 5000 + "}}", "long_number"),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', "params_not_object"),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}', "params_not_object"),
        ('{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{}}', "jsonrpc_version"),
        ('{"id":7,"method":"tools/call","params":{}}', "jsonrpc_version"),
    ],
)
def test_an_unreadable_request_is_told_which_problem_it_has(line: str, problem: str) -> None:
    """review 9 finding 4: the refusal always blamed surrogates, nesting or long numbers, also
    for a wrong `jsonrpc` or params that are not an object."""
    from cnki_mcp.server.stdio import PROBLEMS, unreadable_request

    reply = unreadable_request(line)
    assert reply is not None
    wire = json.loads(reply.message.model_dump_json(by_alias=True, exclude_unset=True))
    assert wire["error"]["data"] == {"problem": problem}
    assert wire["error"]["message"].endswith(PROBLEMS[problem])
