"""The stdio handshake answered before the SDK loads (cnki_mcp/server/fast_start.py): the
snapshot is what the SDK answers now, and `serve_handshake` answers only the messages it knows,
consumes nothing past the line it stops at, and hands the rest to the SDK session."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from cnki_mcp.server import fast_start
from cnki_mcp.server.fast_start import Snapshot, load_snapshot, serve_handshake
from cnki_mcp.server.stdio import capture_replies, current_snapshot_text


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def _initialize(version: str = LATEST_HANDSHAKE_VERSION, rid: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture
def snapshot() -> Snapshot:
    loaded = load_snapshot()
    assert loaded is not None, "handshake.json does not match the installed SDK"
    return loaded


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """(client writes, server reads, server writes, client reads)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    yield in_w, in_r, out_w, out_r
    for fd in (in_r, in_w, out_r, out_w):
        with contextlib.suppress(OSError):
            os.close(fd)


def _replies(fd: int) -> list[dict[str, Any]]:
    os.set_blocking(fd, False)
    try:
        data = os.read(fd, 1 << 20)
    except BlockingIOError:
        return []
    return [json.loads(line) for line in data.splitlines()]


async def test_snapshot_file_is_what_the_sdk_answers_now() -> None:
    assert fast_start.SNAPSHOT_PATH.read_text(encoding="utf-8") == await current_snapshot_text(), (
        "cnki_mcp/server/handshake.json is stale: run `python scripts/update_tool_catalog.py`"
    )


async def test_snapshot_answers_do_not_depend_on_the_clients_capabilities(snapshot: Snapshot) -> None:
    rich = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {}, "experimental": {"x": {}}}
    assert await capture_replies(LATEST_HANDSHAKE_VERSION, rich) == snapshot.replies[LATEST_HANDSHAKE_VERSION]
    assert set(snapshot.replies) == set(HANDSHAKE_PROTOCOL_VERSIONS)


def test_the_handshake_is_answered_and_the_session_continues_from_the_first_unknown_message(
    snapshot: Snapshot, pipes: tuple[int, int, int, int]
) -> None:
    c_write, s_read, s_write, c_read = pipes
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    after = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "diagnostics"}}
    sent = [_initialize(), INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, ping, after]
    os.write(c_write, b"".join(_line(m) for m in sent))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    replies = _replies(c_read)
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"] == snapshot.replies[LATEST_HANDSHAKE_VERSION]["initialize"]
    assert replies[1]["result"] == snapshot.replies[LATEST_HANDSHAKE_VERSION]["tools/list"]
    assert handover.replay == [_line(m) for m in sent[:4]]  # the session sees every message read
    assert set(handover.answered) == {"1", "2"} and handover.replies == 2  # replies the session's are dropped for
    assert os.read(s_read, 1 << 16) == _line(after)  # nothing past the stop line was consumed


@pytest.mark.parametrize(
    "first",
    [
        _initialize(version="1999-01-01"),
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}},
        {"jsonrpc": "2.0", "id": True, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        [_initialize()],  # a batch
        {**_initialize(), "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}},
        {**_initialize(), "params": {**_initialize()["params"], "capabilities": {"sampling": True}}},
    ],
    ids=["unknown_version", "modern_era", "bad_id", "batch", "no_client_info", "bad_capability"],
)
def test_anything_but_a_known_initialize_goes_straight_to_the_sdk(
    first: Any, snapshot: Snapshot, pipes: tuple[int, int, int, int]
) -> None:
    c_write, s_read, s_write, c_read = pipes
    os.write(c_write, _line(first))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert _replies(c_read) == []
    assert handover.replay == [_line(first)] and handover.answered == {}


def test_lists_before_the_initialized_notification_or_with_params_are_left_to_the_sdk(
    snapshot: Snapshot, pipes: tuple[int, int, int, int]
) -> None:
    c_write, s_read, s_write, c_read = pipes
    early = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    os.write(c_write, _line(_initialize()) + _line(early))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert [r["id"] for r in _replies(c_read)] == [1]
    assert handover.replay[-1] == _line(early)

    paged = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"cursor": "x"}}
    os.write(c_write, _line(_initialize()) + _line(INITIALIZED) + _line(paged))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert [r["id"] for r in _replies(c_read)] == [1]
    assert handover.replay[-1] == _line(paged)


def test_end_of_input_or_idle_input_ends_the_handshake(snapshot: Snapshot, pipes: tuple[int, int, int, int]) -> None:
    c_write, s_read, s_write, c_read = pipes
    os.write(c_write, _line(_initialize(rid="a")) + _line(INITIALIZED))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)  # nothing more waiting: hand over
    assert [r["id"] for r in _replies(c_read)] == ["a"]
    assert set(handover.answered) == {'"a"'} and len(handover.replay) == 2
    os.close(c_write)
    assert serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0).replay == []


def test_a_snapshot_from_another_sdk_version_is_not_used(tmp_path: Path) -> None:
    data = json.loads(fast_start.SNAPSHOT_PATH.read_text(encoding="utf-8"))
    data["sdk"] = "0.0.1"
    other = tmp_path / "handshake.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    assert load_snapshot(other) is None
    assert load_snapshot(tmp_path / "missing.json") is None


def test_the_installed_sdk_version_is_read_without_importlib_metadata() -> None:
    from importlib import metadata

    assert fast_start.installed_sdk_version() == metadata.version("mcp")


def test_an_unreadable_input_is_left_to_the_sdk(snapshot: Snapshot, pipes: tuple[int, int, int, int]) -> None:
    _c_write, s_read, s_write, _c_read = pipes
    os.close(s_read)
    assert serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0).replay == []


def test_the_fast_path_imports_no_third_party_package(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"  # what the interpreter's site hooks loaded
        "from cnki_mcp.server.fast_start import load_snapshot\n"
        "assert load_snapshot() is not None\n"
        "new = set(sys.modules) - before\n"
        "print(json.dumps(sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=str(tmp_path), check=True).stdout
    assert [m for m in json.loads(out) if not m.startswith("cnki_mcp")] == []


def test_a_repeated_request_id_is_left_to_the_sdk(snapshot: Snapshot, pipes: tuple[int, int, int, int]) -> None:
    c_write, s_read, s_write, c_read = pipes
    again = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}  # the id of initialize
    os.write(c_write, _line(_initialize()) + _line(INITIALIZED) + _line(again))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert [r["id"] for r in _replies(c_read)] == [1]
    assert handover.replay[-1] == _line(again) and set(handover.answered) == {"1"}


def test_json_nested_deeper_than_the_recursion_limit_is_left_to_the_sdk(
    snapshot: Snapshot, pipes: tuple[int, int, int, int]
) -> None:
    """json.loads raised RecursionError on it, which ended the server before the SDK started."""
    c_write, s_read, s_write, c_read = pipes
    depth = sys.getrecursionlimit() * 2
    deep = ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_library","arguments":{"query":'
            + "[" * depth + "]" * depth + "}}}\n").encode()  # fmt: skip
    os.write(c_write, _line(_initialize()) + _line(INITIALIZED) + deep)
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert [r["id"] for r in _replies(c_read)] == [1]
    assert handover.replay == [_line(_initialize()), _line(INITIALIZED), deep]


def test_a_line_over_a_mebibyte_is_handed_over_whole(snapshot: Snapshot, pipes: tuple[int, int, int, int]) -> None:
    """A first call of 1.35 MB (675 KB of Chinese text sent as \\u escapes) sent with the handshake
    was cut at 1 MiB: the session saw two invalid lines and the call was never answered."""
    c_write, s_read, s_write, c_read = pipes
    text = "违约金酌减规则研究" * 25_000
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "link_references", "arguments": {"text": text}}}
    after = _line({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    data = _line(_initialize()) + _line(INITIALIZED) + _line(call) + after
    writer = threading.Thread(target=lambda: os.write(c_write, data))  # more than a pipe holds
    writer.start()
    try:
        handover = serve_handshake(snapshot, s_read, s_write, idle=5, first_list_wait=5)
    finally:
        writer.join(timeout=30)
    assert len(_line(call)) > 1 << 20
    assert [r["id"] for r in _replies(c_read)] == [1]
    assert handover.replay == [_line(_initialize()), _line(INITIALIZED), _line(call)]
    assert os.read(s_read, 1 << 16) == after  # the session reads on from the next line


def _deep(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    "refused",
    [
        {**_initialize(), "params": {**_initialize()["params"], "clientInfo": {"name": "client\ud83d", "version": "0"}}},
        {**_initialize(), "params": {**_initialize()["params"], "capabilities": {"experimental": _deep(250)}}},
    ],
    ids=["lone_surrogate", "nesting"],
)
def test_an_initialize_the_sdks_parser_refuses_is_left_to_the_sdk(
    refused: dict[str, Any], snapshot: Snapshot, pipes: tuple[int, int, int, int]
) -> None:
    """review 9 finding 4: Python's json reads a lone surrogate escape (and deep nesting) the SDK's
    parser refuses. Such an initialize was answered here, then refused when the SDK read it: one
    id got a result and a PARSE_ERROR, and the session never saw the client's initialize."""
    c_write, s_read, s_write, c_read = pipes
    os.write(c_write, _line(refused))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert _replies(c_read) == []
    assert handover.replay == [_line(refused)] and handover.answered == {}


def test_a_list_whose_id_the_sdks_parser_refuses_is_left_to_the_sdk(
    snapshot: Snapshot, pipes: tuple[int, int, int, int]
) -> None:
    c_write, s_read, s_write, c_read = pipes
    refused = {"jsonrpc": "2.0", "id": "a\udc00", "method": "tools/list"}
    os.write(c_write, _line(_initialize()) + _line(INITIALIZED) + _line(refused))
    handover = serve_handshake(snapshot, s_read, s_write, idle=0, first_list_wait=0)
    assert [r["id"] for r in _replies(c_read)] == [1]
    assert handover.replay[-1] == _line(refused) and set(handover.answered) == {"1"}
