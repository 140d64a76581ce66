"""The one edge between failures and the MCP wire.

A `CnkiError` (or bad arguments, which become INVALID_ARGUMENT) is answered as a tool result
with `isError: true` whose structured content is `{status: "failed", code, message, retryable,
details, errors: [...]}`; so is an operation that ended `failed` (its record, with the first
error's code on top). An OSError only a full or read-only disk raises is
DATA_DIRECTORY_UNUSABLE (`datadir.disk_refused`). Anything else is a bug: logged with its
traceback and answered as INTERNAL without its text. An unknown tool name is a protocol error (JSON-RPC -32602), as the
MCP specification asks, not a tool result (an unknown prompt name, or a prompt argument that is
missing, unknown or invalid, likewise). `tools/list`
publishes the compact schemas of `wire_schema`, whose output envelope every one of these
results satisfies (DESIGN.md "Tool results"). With a tool catalog (`server/catalog.py`) the list
comes from the packaged file and a tool's module is registered on its first call."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from cnki_mcp import datadir
from cnki_mcp.errors import CnkiError, InvalidInput
from cnki_mcp.server import readonly
from cnki_mcp.server.arg_forms import check_linked_refs
from cnki_mcp.server.catalog import ToolCatalog, register_modules
from cnki_mcp.server.wire_schema import compact_input, output_envelope
from cnki_mcp.tool_args import reject_booleans_for_numbers, reject_unknown_arguments, trim_ids
from cnki_mcp.tool_coerce import coerce_object

log = logging.getLogger("cnki_mcp.server")


def recorded_error(code: str, message: str, *, retryable: bool = False, **details: Any) -> CnkiError:
    """An error an operation recorded, to raise again from a tool with its own code and
    retryable flag (a bare CnkiError would say INTERNAL). No new class: every error class in
    `cnki_mcp.errors` owns one unique code."""
    error = CnkiError(message, **details)
    error.code = code  # type: ignore[misc]  # the instance's value shadows the class default
    error.retryable = retryable  # type: ignore[misc]
    return error


def received(value: Any) -> str:
    """What a client sent, short enough to show: a scalar as JSON (a string cut at 40
    characters, controls escaped), a list or object by its size."""
    if isinstance(value, list):
        return f"含 {len(value)} 项的数组"
    if isinstance(value, dict):
        return "对象"
    if isinstance(value, str) and len(value) > 40:
        return json.dumps(value[:40] + "…", ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str)


def validation_error(exc: ValidationError) -> InvalidInput:
    """Bad arguments as INVALID_ARGUMENT: each field path, what it should be (pydantic's words,
    with the allowed values or bounds) and what was received (`received`, kept short), in the
    message itself, where a model reads it."""
    problems: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False):
        problem: dict[str, Any] = {"field": ".".join(str(p) for p in err["loc"]) or "(root)", "problem": err["msg"]}
        if err["type"] != "missing":  # a missing field's input is the whole argument object
            problem["received"] = received(err.get("input"))
        problems.append(problem)
    said = "；".join(
        f"{p['field']}：{p['problem']}" + (f"（收到 {p['received']}）" if "received" in p else "") for p in problems[:6]
    )
    return InvalidInput(f"参数无效：{said}", errors=problems)


def payload(error: CnkiError) -> dict[str, Any]:
    info = error.to_dict()
    return {"status": "failed", **info, "errors": [info]}


def _result(data: dict[str, Any], *, is_error: bool) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False, default=str))],
        structured_content=data,
        is_error=is_error,
    )


def compact_text(result: CallToolResult) -> CallToolResult:
    """The result with its text content written as compact JSON of its structured content.

    The SDK renders a tool's return value with two-space indentation; the text content is what
    clients put in the model's context (and what Claude Code's MAX_MCP_OUTPUT_TOKENS counts), and
    the indentation alone added 32-86 % to it (a citation graph's edge pairs span four lines each).
    Only a text that is that JSON is rewritten: the data stays the same, as error results."""
    data = result.structured_content
    blocks = result.content
    if not isinstance(data, dict) or len(blocks) != 1 or not isinstance(blocks[0], TextContent):
        return result
    try:
        same = json.loads(blocks[0].text) == data
    except ValueError:
        same = False
    if not same:
        return result
    text = json.dumps(data, ensure_ascii=False, default=str)
    return result.model_copy(update={"content": [TextContent(type="text", text=text)]})


def error_result(error: CnkiError) -> CallToolResult:
    return _result(payload(error), is_error=True)


def is_failed_operation(data: Any) -> bool:
    """An operation record (it has `operation_id` and `kind`) whose status is `failed`; other
    results that carry a `status` (a page of a failed search's results) stay results."""
    return isinstance(data, dict) and data.get("status") == "failed" and {"operation_id", "kind"} <= set(data)


def failed_operation_result(data: dict[str, Any]) -> CallToolResult:
    """An operation record that ended `failed`, as an error result: the record's fields with the
    first error's `code`, `message`, `retryable` and `details` on top (the error payload's shape)."""
    errors = [e for e in data.get("errors") or [] if isinstance(e, dict) and e.get("code")]
    first = errors[0] if errors else CnkiError(data.get("message") or "任务失败").to_dict()
    merged = {
        **data,
        "status": "failed",
        "code": first["code"],
        "message": first.get("message") or data.get("message") or "",
        "retryable": bool(first.get("retryable", False)),
        "details": dict(first.get("details") or {}),
        "errors": errors or [first],
    }
    return _result(merged, is_error=True)


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
        return InvalidInput(str(exc), tool=tool)
    refused = datadir.disk_refused(cause) if cause is not None else None
    if refused is not None:  # a full or read-only disk is no bug
        log.warning("tool %s: %s", tool, refused.message)
        return refused
    log.error("tool %s crashed", tool, exc_info=(type(cause), cause, cause.__traceback__) if cause else True)
    return CnkiError(f"内部错误：{type(cause).__name__ if cause else 'Exception'}（详见服务日志）", tool=tool)


def _validation_cause(exc: BaseException) -> ValidationError | None:
    """The pydantic ValidationError at the bottom of `exc`'s cause chain (a prompt's arguments)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ValidationError):
            return cause
        cause = cause.__cause__
    return None


def _lifespan_of(context: Context[Any, Any] | None) -> Any:
    """The running Services of a tool call (None for a call made without a session)."""
    try:
        return None if context is None else context.request_context.lifespan_context
    except ValueError:  # no request context: a direct call in tests
        return None


class CnkiServer(MCPServer[Any]):
    """MCPServer whose tool failures are coded `isError` results (see the module docstring)."""

    _published: list[MCPTool] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool_modules: dict[str, str] = {}  # tool name -> the module defining it
        self._lazy: dict[str, str] = {}  # tool name -> module not registered yet
        self.services: Any = None  # the lifespan's Services while it runs (server/http.py shutdown)

    def register_tool_modules(self, modules: Iterable[str]) -> None:
        """Import and register these tool modules now, in order."""
        self.tool_modules.update(register_modules(self, modules))

    def use_catalog(self, catalog: ToolCatalog) -> None:
        """Publish the catalog's tools; register each tool's module on its first call."""
        self._published = [MCPTool.model_validate(tool) for tool in catalog.tools]
        self.tool_modules = dict(catalog.modules)
        self._lazy = dict(catalog.modules)

    def load_tool(self, name: str) -> None:
        """Register the module defining `name` if that has not happened yet (no await: one
        coroutine registers it before any other can look)."""
        module = self._lazy.get(name)
        if module is not None:
            register_modules(self, [module])  # tool_modules already names its tools
            self._lazy = {tool: owner for tool, owner in self._lazy.items() if owner != module}

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        self.load_tool(name)  # streamable HTTP checks Mcp-Param headers before the call
        return super()._tool_input_schema(name)

    async def list_tools(self) -> list[MCPTool]:
        if self._published is None:  # the tools are all registered before the first request
            self._published = [
                tool.model_copy(
                    update={
                        "input_schema": compact_input(tool.input_schema),
                        "output_schema": output_envelope(tool.output_schema),
                    }
                )
                for tool in await super().list_tools()
            ]
        return self._published

    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        # Read-only mode hides the tools of `server/readonly.py` (DESIGN.md "Read-only mode").
        result = await super()._handle_list_tools(ctx, params)
        if readonly.is_read_only(getattr(ctx, "lifespan_context", None)):
            result.tools = [t for t in result.tools if t.name not in readonly.HIDDEN_TOOLS]
        return result

    def close_listen_streams(self) -> None:
        """End every open `subscriptions/listen` stream (2026-07-28 era) gracefully: each sends
        its final result and its POST completes (the HTTP server is stopping, server/http.py)."""
        entry = self._lowlevel_server.get_request_handler("subscriptions/listen")
        if entry is not None and isinstance(entry.handler, ListenHandler):
            entry.handler.close()

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> Any:
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:  # the specification's answer: -32602
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"prompt": name})
        # Missing, unknown or invalid arguments are the client's mistake: -32602 naming them. The
        # SDK turned each into a bare ValueError: code 0 (handshake era) or -32603 "Internal
        # server error" with a logged traceback (2026-07-28 era).
        declared = {arg.name: arg for arg in prompt.arguments or []}
        given = dict(arguments or {})
        missing = [n for n, arg in declared.items() if arg.required and n not in given]
        unknown = [n for n in given if n not in declared]
        if missing or unknown:
            parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"unknown {', '.join(unknown)}"] if unknown else []
            )
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid arguments for prompt {name}: {'; '.join(parts)}",
                data={"prompt": name, "missing": missing, "unknown": unknown},
            )
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            invalid = _validation_cause(exc)
            if invalid is None:
                raise
            problems = validation_error(invalid).details["errors"]
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid arguments for prompt {name}: {', '.join(p['field'] for p in problems)}",
                data={"prompt": name, "errors": problems},
            ) from exc

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        self.load_tool(name)
        if self._tool_manager.get_tool(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}", data={"tool": name})
        tool = self._tool_manager.get_tool(name)
        # the forms clients send (null, "", "a" for ["a"], "Selected"), read as meant (tool_coerce.py)
        arguments = trim_ids(coerce_object(arguments or {}, tool.parameters) if tool is not None else arguments or {})
        try:
            if tool is not None:  # pydantic would read `true` as 1, and drop an unknown name (tool_args.py)
                reject_unknown_arguments(name, tool.parameters, arguments or {})
                reject_booleans_for_numbers(tool.parameters, arguments or {})
                check_linked_refs(name, arguments or {}, getattr(_lifespan_of(context), "store", None))
            if readonly.is_read_only(_lifespan_of(context)):
                readonly.check_call(name, arguments or {})
            result = await super().call_tool(name, arguments, context)
        except CnkiError as exc:
            return error_result(exc)
        except ToolError as exc:
            return error_result(to_cnki_error(exc, name))
        data = getattr(result, "structured_content", None)
        if isinstance(data, dict) and data.get("action") == "continue":  # the record it continued
            data = data.get("operation")
        if isinstance(result, CallToolResult) and not result.is_error and is_failed_operation(data):
            assert isinstance(data, dict)
            return failed_operation_result(data)
        if isinstance(result, CallToolResult):
            return compact_text(result)
        return result
