"""The MCP server: `build_server(open_services)` registers the tools, the `cnki://guide`
resource, the prompts and a `logging/setLevel` handler (accepted, changing nothing). Services
are created in the lifespan (`open_services()`) and closed there, so stdin EOF or an HTTP
shutdown closes the browser.

Tools: each module in `TOOL_MODULES` defines its tools in `register(server)`. By default the
server publishes them from the packaged catalog (`server/catalog.py`) and registers a module on
the first call of one of its tools, so a start imports none of them (docs/benchmarks.md
§Start-up). A new tool module is added to `TOOL_MODULES`, then the catalog is regenerated with
`python scripts/update_tool_catalog.py`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.types import EmptyResult, SetLevelRequestParams

from cnki_mcp import __version__
from cnki_mcp.server import prompts
from cnki_mcp.server.catalog import load_catalog
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.guide import GUIDE

if TYPE_CHECKING:
    from cnki_mcp.services import Services
    from cnki_mcp.settings import Settings

log = logging.getLogger("cnki_mcp.server")

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
    "export_search_log",
    "watch_search",
    "list_watches",
    "check_updates",
)

# Registration order is the order of tools/list.
TOOL_MODULES = (
    "cnki_mcp.server.tools_search",
    "cnki_mcp.server.tools_read",
    "cnki_mcp.server.tools_cite",
    "cnki_mcp.server.tools_verify",
    "cnki_mcp.server.tools_session",
    "cnki_mcp.server.tools_ops",
    "cnki_mcp.server.tools_library",
    "cnki_mcp.server.tools_watch",
    "cnki_mcp.server.tools_citations",
)

def build_server(open_services: Callable[[], Services], *, lazy_tools: bool = True) -> CnkiServer:
    """The server; `open_services` runs when a session (stdio) or the HTTP app starts.
    `lazy_tools=False` registers every tool module now (what the catalog is generated from)."""

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[Services]:
        services = open_services()
        server.services = services
        try:
            yield services
        finally:
            server.services = None
            await services.close()

    server = CnkiServer(
        SERVER_NAME,
        title="CNKI 中国知网",
        instructions=GUIDE,
        version=__version__,
        lifespan=lifespan,
    )
    catalog = load_catalog() if lazy_tools else None
    if catalog is not None and set(catalog.modules.values()) == set(TOOL_MODULES):
        server.use_catalog(catalog)
    else:
        if catalog is not None:  # a module added without regenerating the catalog: still correct
            log.warning("tool catalog is stale; run scripts/update_tool_catalog.py")
        server.register_tool_modules(TOOL_MODULES)
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

    async def set_level(_ctx: Any, _params: SetLevelRequestParams) -> EmptyResult:
        # The level is what the client wants to receive, and no log notification is ever sent:
        # nothing changes. It set the process's own log level (stderr), so a client sending
        # `error` on connect hid the operator's warnings, `debug` flooded them, and over HTTP
        # one session changed it for every other (DESIGN.md "Tool results").
        return EmptyResult()

    # MCPServer has no logging/setLevel handler of its own; the low-level server accepts one
    # (clients such as MCPJam send it on connect and fail on -32601).
    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    return server


def services_opener(settings: Settings, environ: dict[str, str] | None = None) -> Callable[[], Services]:
    """The production opener: real site, browser and store from Settings."""

    from cnki_mcp.services import Services

    def open_services() -> Services:
        return Services.open(settings, environ=environ)

    return open_services
