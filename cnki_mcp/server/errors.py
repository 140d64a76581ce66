"""The one edge between failures and the MCP wire.

A `CnkiError` (or bad arguments, which become INVALID_ARGUMENT) is answered as a tool result
with `isError: true` whose structured content is `{status: "failed", code, message, retryable,
details, errors: [...]}`. Anything else is a bug: logged with its traceback and answered as
INTERNAL without its text."""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from cnki_mcp.errors import CnkiError, InvalidInput
from cnki_mcp.tool_args import reject_booleans_for_numbers

log = logging.getLogger("cnki_mcp.server")


def validation_error(exc: ValidationError) -> InvalidInput:
    """Bad arguments as INVALID_ARGUMENT: field paths and reasons, never the values."""
    problems = [
        {"field": ".".join(str(p) for p in err["loc"]) or "(root)", "problem": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]
    fields = ", ".join(p["field"] for p in problems[:6])
    return InvalidInput(f"参数无效：{fields}", errors=problems)


def payload(error: CnkiError) -> dict[str, Any]:
    info = error.to_dict()
    return {"status": "failed", **info, "errors": [info]}


def error_result(error: CnkiError) -> CallToolResult:
    data = payload(error)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False, default=str))],
        structured_content=data,
        is_error=True,
    )


def to_cnki_error(exc: BaseException, tool: str) -> CnkiError:
    """Map what a tool call raised to the error the client sees (logging bugs)."""
    cause = exc.__cause__ if isinstance(exc, ToolError) else exc
    # nested wrappers (resolver -> tool) keep the original at the bottom
    while isinstance(cause, ToolError) and cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, CnkiError):
        return cause
    if isinstance(cause, ValidationError):
        return validation_error(cause)
    if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError) and cause is None:
        text = str(exc)
        if "Unknown tool" in text:
            return InvalidInput(f"未知工具：{tool}", tool=tool)
        return InvalidInput(text, tool=tool)
    log.error("tool %s crashed", tool, exc_info=(type(cause), cause, cause.__traceback__) if cause else True)
    return CnkiError(f"内部错误：{type(cause).__name__ if cause else 'Exception'}（详见服务日志）", tool=tool)


class CnkiServer(MCPServer[Any]):
    """MCPServer whose tool failures are coded `isError` results (see the module docstring)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            tool = self._tool_manager.get_tool(name)
            if tool is not None:  # pydantic would read `true` as 1 (cnki_mcp/tool_args.py)
                reject_booleans_for_numbers(tool.parameters, arguments or {})
            return await super().call_tool(name, arguments, context)
        except CnkiError as exc:
            return error_result(exc)
        except ToolError as exc:
            return error_result(to_cnki_error(exc, name))
