"""The stdio protocol self-check used by `cnki-mcp doctor --protocol` and at the end of `setup`:
spawn the server command exactly as an MCP client would, initialize, list the tools, call
`diagnostics`, and confirm the version and that no browser was started."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcp import ClientSession, StdioServerParameters, stdio_client

from cnki_mcp import __version__
from cnki_mcp.server.app import TOOL_NAMES


@dataclass(frozen=True, slots=True)
class ProtocolReport:
    ok: bool
    detail: str
    hint: str = ""


async def _check(command: Sequence[str], env: Mapping[str, str], timeout: float) -> ProtocolReport:
    with tempfile.TemporaryDirectory(prefix="cnki-protocol-") as tmp:
        child_env = dict(env)
        child_env["CNKI_DATA_DIR"] = tmp  # never touch the user's data directory or its lock
        child_env.setdefault("CNKI_LOG_LEVEL", "WARNING")
        params = StdioServerParameters(command=command[0], args=list(command[1:]), env=child_env, cwd=tmp)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await asyncio.wait_for(session.initialize(), timeout)
            version = init.server_info.version
            tools = {t.name for t in (await asyncio.wait_for(session.list_tools(), timeout)).tools}
            diag = await asyncio.wait_for(session.call_tool("diagnostics", {}), timeout)
    missing = sorted(set(TOOL_NAMES) - tools)
    if version != __version__:
        return ProtocolReport(False, f"服务器版本 {version} 与本机 {__version__} 不一致", "重新安装后再运行 setup")
    if missing:
        return ProtocolReport(False, f"缺少工具：{', '.join(missing)}", "重新安装 cnki-mcp")
    data = diag.structured_content or {}
    if diag.is_error:
        return ProtocolReport(False, f"diagnostics 返回错误：{data.get('code')}")
    if (data.get("browser") or {}).get("running"):
        return ProtocolReport(False, "diagnostics 启动了浏览器（不应如此）")
    return ProtocolReport(True, f"stdio 握手成功：版本 {version}，工具 {len(tools)} 个，diagnostics 正常，未启动浏览器")


def protocol_check(command: Sequence[str], env: Mapping[str, str], *, timeout: float = 60.0) -> ProtocolReport:
    """Run the check synchronously (the CLI is not async)."""
    try:
        return asyncio.run(_check(command, env, timeout))
    except TimeoutError:
        return ProtocolReport(False, f"{timeout:.0f} 秒内没有完成握手", "用 cnki-mcp doctor 检查环境")
    except Exception as exc:  # the child may be missing, crash or speak no MCP: report, do not raise
        return ProtocolReport(False, f"无法与服务器握手：{type(exc).__name__}: {exc}", "确认命令路径正确且可执行")
