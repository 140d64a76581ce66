"""`cnki-mcp serve` over stdio answers the handshake before importing the MCP SDK
(server/fast_start.py), and the SDK session then carries on without repeating a reply
(docs/benchmarks.md §Start-up). One subprocess run under `python -X importtime`, whose stderr
records, in order, every import and the log line written when the handshake was handed over."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cnki_mcp.server.app import TOOL_NAMES
from tests.child_env import child_env

# Nothing of these may load before the handshake is answered.
NOT_BEFORE_HANDSHAKE = (
    "mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "httpx", "httpx2", "playwright",
    "pypinyin", "jieba", "rapidfuzz", "selectolax", "pypdf", "cnki_mcp.sim", "cnki_mcp.server.tools_",
    "cnki_mcp.server.app", "cnki_mcp.pipeline", "cnki_mcp.cite", "cnki_mcp.site.cnki",
)
# Nor these at all in a session that lists tools and calls a local tool.
NEVER = ("playwright", "pypinyin", "jieba", "cnki_mcp.sim", "trustme")


def _imported(lines: list[str]) -> list[str]:
    return [line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:") and "|" in line]


def _matches(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p if p.endswith("_") else p + ".") for p in prefixes)


def test_the_handshake_is_answered_before_the_sdk_loads_and_no_reply_is_repeated(tmp_path: Path) -> None:
    env = child_env()
    env.update(CNKI_DATA_DIR=str(tmp_path / "data"), CNKI_HEADLESS="1")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"},
    ]
    errlog = (tmp_path / "stderr.log").open("wb")  # a file: a full stderr pipe would stall the server
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "cnki_mcp", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env, cwd=str(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # All at once, as clients pipeline them: the answers do not depend on timing.
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(3)]
        call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "diagnostics", "arguments": {}}}
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        replies.append(json.loads(proc.stdout.readline()))
        rest, _ = proc.communicate(timeout=60)  # end of input: the server exits
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        errlog.close()
    err = (tmp_path / "stderr.log").read_bytes()
    assert proc.returncode == 0
    assert rest.strip() == b""  # the replayed initialize was not answered twice
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert {t["name"] for t in replies[1]["result"]["tools"]} == set(TOOL_NAMES)
    assert {p["name"] for p in replies[2]["result"]["prompts"]} == {"research_topic", "literature_review"}
    assert not replies[3]["result"].get("isError") and replies[3]["result"]["structuredContent"]["status"] == "ok"

    lines = err.decode("utf-8", "replace").splitlines()
    handed = [i for i, line in enumerate(lines) if "handshake replies sent before loading the MCP SDK" in line]
    assert len(handed) == 1 and "stdio: 3 handshake replies" in lines[handed[0]]
    # the session answered the replayed requests again, identically (server/stdio.py compares)
    assert not [line for line in lines if "snapshot differs" in line]
    before, after = _imported(lines[: handed[0]]), _imported(lines[handed[0] :])
    assert "cnki_mcp.server.fast_start" in before and "mcp" in after  # the log really orders them
    assert [m for m in before if _matches(m, NOT_BEFORE_HANDSHAKE)] == []
    assert [m for m in before + after if _matches(m, NEVER)] == []


def test_a_read_only_stdio_server_lists_no_hidden_tool_in_its_first_tools_list(tmp_path: Path) -> None:
    """The snapshot lists every tool, so read-only mode must not answer from it
    (DESIGN.md "Read-only mode")."""
    from cnki_mcp.server.readonly import HIDDEN_TOOLS

    env = child_env()
    env.update(CNKI_DATA_DIR=str(tmp_path / "data"), CNKI_HEADLESS="1", CNKI_READ_ONLY="1")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cnki_mcp", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
        proc.communicate(timeout=60)  # end of input: the server exits
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert [r["id"] for r in replies] == [1, 2]
    listed = {t["name"] for t in replies[1]["result"]["tools"]}
    assert HIDDEN_TOOLS and not (listed & set(HIDDEN_TOOLS))
    assert listed == set(TOOL_NAMES) - set(HIDDEN_TOOLS)
