"""The stdio protocol self-check used by `cnki-mcp doctor --protocol` and at the end of `setup`:
spawn the server command exactly as an MCP client would, initialize, list the tools, call
`diagnostics`, and confirm the version and that no browser was started.

A failure names its cause in words: the command cannot be started, the server exited before the
handshake (with the last lines it wrote to stderr, e.g. `No module named cnki_mcp`), or no answer
within the timeout. The SDK wraps these in exception groups; `_leaves` unwraps them."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client

from cnki_mcp import __version__
from cnki_mcp.server.app import TOOL_NAMES
from cnki_mcp.server.readonly import HIDDEN_TOOLS

STDERR_TAIL_LINES = 3
STDERR_TAIL_CHARS = 400


Reason = Literal["ok", "launch_failed", "timeout", "exited", "mismatch", "failed"]


@dataclass(frozen=True, slots=True)
class ProtocolReport:
    ok: bool
    detail: str
    hint: str = ""
    reason: Reason = "ok"  # stable: why the check failed ("ok" when it passed)
    stderr_tail: str = ""  # the last lines the server wrote to stderr, when it failed


async def _handshake(
    command: Sequence[str], env: Mapping[str, str], cwd: str, errlog: TextIO, timeout: float
) -> ProtocolReport:
    child_env = dict(env)
    child_env["CNKI_DATA_DIR"] = str(Path(cwd) / "data")  # never touch the user's data directory or its lock
    child_env.setdefault("CNKI_LOG_LEVEL", "WARNING")
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=child_env, cwd=cwd)
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        init = await asyncio.wait_for(session.initialize(), timeout)
        version = init.server_info.version
        tools = {t.name for t in (await asyncio.wait_for(session.list_tools(), timeout)).tools}
        diag = await asyncio.wait_for(session.call_tool("diagnostics", {}), timeout)
    data = diag.structured_content or {}
    expected = set(TOOL_NAMES)
    if (data.get("settings") or {}).get("read_only"):  # CNKI_READ_ONLY=1: these are hidden on purpose
        expected -= HIDDEN_TOOLS
    missing = sorted(expected - tools)
    if version != __version__:
        return ProtocolReport(
            False, f"服务器版本 {version} 与本机 {__version__} 不一致", "重新安装后再运行 setup", "mismatch"
        )
    if missing:
        return ProtocolReport(False, f"缺少工具：{', '.join(missing)}", "重新安装 cnki-mcp", "mismatch")
    if diag.is_error:
        return ProtocolReport(False, f"diagnostics 返回错误：{data.get('code')}", reason="failed")
    if (data.get("browser") or {}).get("running"):
        return ProtocolReport(False, "diagnostics 启动了浏览器（不应如此）", reason="failed")
    return ProtocolReport(
        True, f"stdio 握手成功：版本 {version}，工具 {len(tools)} 个，diagnostics 正常，未启动浏览器"
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups; `exc` itself when it is not a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _stderr_tail(errlog: TextIO) -> str:
    errlog.flush()
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    return " | ".join(lines[-STDERR_TAIL_LINES:])[-STDERR_TAIL_CHARS:]


def explain_failure(
    exc: BaseException, command: Sequence[str], stderr_tail: str, timeout: float
) -> ProtocolReport:
    """The report for a handshake that raised `exc` (possibly an exception group)."""
    leaves = _leaves(exc)
    said = f"；服务器输出：{stderr_tail}" if stderr_tail else ""
    timed_out = any(isinstance(e, TimeoutError) for e in leaves)  # TimeoutError is an OSError
    launch = next((e for e in leaves if isinstance(e, OSError) and not isinstance(e, TimeoutError)), None)
    if launch is not None and not timed_out:
        return ProtocolReport(
            False,
            f"无法启动 {command[0]}：{launch.strerror or launch}",
            "确认命令路径存在且可执行；移动或重装 cnki-mcp 后请重新运行 setup",
            "launch_failed",
            stderr_tail,
        )
    if timed_out:
        return ProtocolReport(
            False,
            f"{timeout:.0f} 秒内没有完成握手{said}",
            "用 cnki-mcp doctor 检查环境；确认该命令是 cnki-mcp serve",
            "timeout",
            stderr_tail,
        )
    if stderr_tail or any("closed" in str(e).lower() for e in leaves):
        return ProtocolReport(
            False,
            f"服务器进程在握手完成前退出或断开{said}",
            "按上面的服务器输出修正（例如该 Python 环境没有安装 cnki-research-mcp），再运行 setup",
            "exited",
            stderr_tail,
        )
    first = leaves[0]
    return ProtocolReport(
        False,
        f"无法与服务器握手：{type(first).__name__}: {first}",
        "确认命令是 cnki-mcp serve 且可执行",
        "failed",
        stderr_tail,
    )


def protocol_check(
    command: Sequence[str], env: Mapping[str, str], *, timeout: float = 60.0
) -> ProtocolReport:
    """Run the check synchronously (the CLI is not async)."""
    with (
        tempfile.TemporaryDirectory(prefix="cnki-protocol-") as tmp,
        open(Path(tmp) / "stderr.log", "w+", encoding="utf-8", errors="replace") as errlog,
    ):
        try:
            return asyncio.run(_handshake(command, env, tmp, errlog, timeout))
        # the child may be missing, crash, hang or speak no MCP: report, do not raise
        except Exception as exc:
            return explain_failure(exc, command, _stderr_tail(errlog), timeout)
