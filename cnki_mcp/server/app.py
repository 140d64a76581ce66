"""The MCP server: `build_server(open_services)` registers the tools, the `cnki://guide`
resource, the prompts and a `logging/setLevel` handler. Services are created in the lifespan
(`open_services()`) and closed there, so stdin EOF or an HTTP shutdown closes the browser."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.types import EmptyResult, SetLevelRequestParams

from cnki_mcp import __version__
from cnki_mcp.server import (
    prompts,
    tools_citations,
    tools_cite,
    tools_library,
    tools_ops,
    tools_read,
    tools_search,
    tools_session,
    tools_verify,
)
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.guide import GUIDE
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings

SERVER_NAME = "cnki"
TOOL_NAMES = (
    "search",
    "structured_search",
    "search_results",
    "search_library",
    "get_metadata",
    "read_online_html",
    "download_paper",
    "read_pdf_text",
    "export_citations",
    "link_references",
    "verify_references",
    "get_references",
    "get_citing",
    "citation_graph",
    "find_citation_path",
    "login",
    "session_status",
    "operation_status",
    "operation_control",
    "diagnostics",
)

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def build_server(open_services: Callable[[], Services]) -> CnkiServer:
    """The server; `open_services` runs when a session (stdio) or the HTTP app starts."""

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[Services]:
        services = open_services()
        try:
            yield services
        finally:
            await services.close()

    server = CnkiServer(
        SERVER_NAME,
        title="CNKI 中国知网",
        instructions=GUIDE,
        version=__version__,
        lifespan=lifespan,
    )
    tools_search.register(server)
    tools_read.register(server)
    tools_cite.register(server)
    tools_verify.register(server)
    tools_session.register(server)
    tools_ops.register(server)
    tools_library.register(server)
    tools_citations.register(server)
    prompts.register(server)

    @server.resource(
        "cnki://guide",
        name="guide",
        title="cnki-mcp 使用说明",
        description="工具选择、任务轮询、人工步骤与请求开销（与服务 instructions 相同）",
        mime_type="text/plain",
    )
    def guide() -> str:
        return GUIDE

    async def set_level(_ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        logging.getLogger("cnki_mcp").setLevel(_LEVELS.get(str(params.level), logging.INFO))
        return EmptyResult()

    # MCPServer has no logging/setLevel handler of its own; the low-level server accepts one.
    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    return server


def services_opener(settings: Settings, environ: dict[str, str] | None = None) -> Callable[[], Services]:
    """The production opener: real site, browser and store from Settings."""

    def open_services() -> Services:
        return Services.open(settings, environ=environ)

    return open_services
