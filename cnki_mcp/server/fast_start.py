"""The stdio handshake answered before the MCP SDK is imported (docs/benchmarks.md §Start-up).

Importing the SDK is most of a start (it builds the pydantic models of every protocol revision
and imports its HTTP stack whatever the transport). A client's first messages are always the same
`initialize`, `notifications/initialized` and the parameterless lists (`tools/list`,
`prompts/list`, `resources/list`), whose answers depend on nothing but this package and the SDK
version. `handshake.json` holds the SDK's own answers to them for every handshake protocol
revision, captured through the SDK's stdio transport (`scripts/update_tool_catalog.py`;
`tests/unit/test_fast_start.py` proves it equal to what the SDK answers now).

`serve_handshake` answers exactly those messages from the snapshot, reading fd 0 one byte at a
time so that nothing past the last line it took is consumed, and stops at the first message it
does not know, when the input is idle, or at end of input. It returns a `Handover`: every line
it read, which the SDK session still sees in order (the session needs the client's capabilities
from `initialize`), and the replies already written, which `server/stdio.py` drops when the SDK
produces them again, logging any that differ (a snapshot that no longer matches the server, e.g.
a setting that changes the tool list: such a setting must turn the fast path off). Only POSIX (the wait uses `select` on the pipe) and only when the
installed SDK is the one the snapshot was captured with; otherwise the SDK answers everything.

This module imports no third-party package."""

from __future__ import annotations

import json
import os
import select
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SNAPSHOT_PATH = Path(__file__).with_name("handshake.json")
# Methods answered from the snapshot after `initialize` (requests without params).
LIST_METHODS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
# Input quiet this long: hand over and import the SDK. Until a list has been answered the wait is
# longer (a client sends `initialized` and `tools/list` once it has read the initialize reply,
# which a busy machine delays); after it, only lists sent together with it are still awaited.
FIRST_LIST_WAIT_SECONDS = 0.5
IDLE_SECONDS = 0.1
# A handshake message is a few hundred bytes: a longer line is never parsed here, only read whole
# (to its newline) and handed over, so the session still sees it as one message.
MAX_PARSED_LINE = 1 << 16


@dataclass
class Handover:
    """What the SDK session continues from."""

    replay: list[bytes] = field(default_factory=list)  # every line read, fed to the session
    # json.dumps(request id) -> the reply sent; the session answers these requests again and
    # those replies are dropped (a repeated id is never answered here)
    answered: dict[str, Any] = field(default_factory=dict)
    replies: int = 0  # replies written from the snapshot


@dataclass(frozen=True, slots=True)
class Snapshot:
    sdk_version: str
    replies: dict[str, dict[str, Any]]  # protocol version -> method -> result


def load_snapshot(path: Path = SNAPSHOT_PATH) -> Snapshot | None:
    """The snapshot when it applies to this installation: POSIX, and captured with the SDK
    version that is installed."""
    if os.name != "posix" or not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    installed = installed_sdk_version()
    if installed is None or data.get("sdk") != installed:
        return None
    results: list[Any] = data["results"]
    replies = {
        version: {method: results[index] for method, index in methods.items()}
        for version, methods in data["versions"].items()
    }
    return Snapshot(sdk_version=installed, replies=replies)


def installed_sdk_version() -> str | None:
    """The installed `mcp` distribution's version, read from the name of its `.dist-info` folder
    beside the package (importlib.metadata would import the email parser and scan every
    distribution); the metadata lookup only when that is ambiguous."""
    import importlib.util

    spec = importlib.util.find_spec("mcp")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = [p.name.removeprefix("mcp-").removesuffix(".dist-info") for p in site.glob("mcp-*.dist-info")]
    if len(found) == 1:
        return found[0]
    from importlib import metadata

    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None


def render_snapshot(sdk_version: str, replies: dict[str, dict[str, Any]]) -> str:
    """The snapshot file; results shared by several revisions are stored once."""
    results: list[Any] = []
    keys: dict[str, int] = {}
    versions: dict[str, dict[str, int]] = {}
    for version, methods in replies.items():
        versions[version] = {}
        for method, result in methods.items():
            key = json.dumps(result, sort_keys=True, ensure_ascii=False)
            if key not in keys:
                keys[key] = len(results)
                results.append(result)
            versions[version][method] = keys[key]
    content = {"sdk": sdk_version, "versions": versions, "results": results}
    return json.dumps(content, ensure_ascii=False, indent=1) + "\n"


def _read_line(fd: int) -> bytes | None:
    """One whole line from fd, nothing past its newline; None at end of input. A line cut at some
    length (1 MiB once) reached the session as two messages, neither of them valid: a client's
    first call over that size, sent with the handshake, was never answered."""
    data = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return bytes(data) if data else None
        data += byte
        if byte == b"\n":
            return bytes(data)


def _readable(fd: int, timeout: float) -> bool:
    ready, _, _ = select.select([fd], [], [], timeout)
    return bool(ready)


def _write(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    while data:
        data = data[os.write(fd, data) :]


def _parse(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC message this module may answer, else None (left to the SDK, which answers or
    drops it as it does any line). JSON nested deeper than the interpreter's recursion limit
    raised RecursionError here and ended the server before the SDK was started."""
    if len(line) > MAX_PARSED_LINE:
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not _sdk_reads(message):
        return None
    return message


# No handshake message nests deeper; a deeper one is left to the SDK (whose parser stops at 200).
MAX_DEPTH = 32


def _sdk_reads(message: dict[str, Any]) -> bool:
    """No lone surrogate escape (Python's json reads `"\\ud800"`, the SDK's parser refuses the
    line) and no deep nesting: such a line is left to the SDK, which answers it (or refuses it) as
    it would without this module. An initialize answered here that the SDK then refused got a
    result and a PARSE_ERROR for one id, and the session never saw the client's initialize."""
    stack: list[tuple[Any, int]] = [(message, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                return False
        elif isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return False
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def _request_id(message: dict[str, Any]) -> str | None:
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    return json.dumps(value)


def serve_handshake(
    snapshot: Snapshot,
    fd_in: int = 0,
    fd_out: int = 1,
    idle: float = IDLE_SECONDS,
    first_list_wait: float = FIRST_LIST_WAIT_SECONDS,
) -> Handover:
    """Answer the handshake from the snapshot; stop at anything else (see the module docstring).
    An input that cannot be read or waited on (closed, not a pipe select accepts) is left to the
    SDK's transport with whatever was read."""
    handover = Handover()
    try:
        _serve(snapshot, fd_in, fd_out, (first_list_wait, idle), handover)
    except BrokenPipeError:
        raise
    except (OSError, ValueError):
        pass
    return handover


def _serve(
    snapshot: Snapshot, fd_in: int, fd_out: int, waits: tuple[float, float], handover: Handover
) -> Handover:
    line = _read_line(fd_in)
    if line is None:
        return handover
    handover.replay.append(line)
    first = _parse(line)
    params = first.get("params") if first else None
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if (
        first is None
        or first.get("method") != "initialize"
        or _request_id(first) is None
        or not isinstance(version, str)
        or version not in snapshot.replies
        or not _well_formed_initialize(params)
    ):
        return handover
    answers = snapshot.replies[version]
    key = _request_id(first)
    assert key is not None
    handover.answered[key] = _reply(fd_out, first, answers["initialize"])
    handover.replies += 1
    initialized = False
    while _readable(fd_in, waits[0] if handover.replies < 2 else waits[1]):
        line = _read_line(fd_in)
        if line is None:
            return handover
        message = _parse(line)
        method = message.get("method") if message else None
        if message is not None and method == "notifications/initialized" and "id" not in message:
            initialized = True
            handover.replay.append(line)
            continue
        if (
            message is not None
            and initialized
            and method in LIST_METHODS
            and method in answers
            and _request_id(message) not in (None, *handover.answered)
            and not message.get("params")
        ):
            handover.answered[str(_request_id(message))] = _reply(fd_out, message, answers[method])
            handover.replies += 1
            handover.replay.append(line)
            continue
        handover.replay.append(line)
        return handover
    return handover


def _well_formed_initialize(params: Any) -> bool:
    """The shape the SDK validates (`clientInfo` name and version, every capability an object):
    a request it would refuse is left to it, so it can answer the error itself."""
    if not isinstance(params, dict):
        return False
    info, capabilities = params.get("clientInfo"), params.get("capabilities")
    return (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and isinstance(capabilities, dict)
        and all(isinstance(value, dict) for value in capabilities.values())
    )


def _reply(fd_out: int, request: dict[str, Any], result: Any) -> dict[str, Any]:
    reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    _write(fd_out, reply)
    return reply
