"""The tool catalog: what `tools/list` publishes, kept as a packaged file (`tool_catalog.json`)
so a server start answers `tools/list` without importing the tool modules or building their
pydantic argument models (docs/benchmarks.md §Start-up).

The catalog holds, in registration order, each tool's published definition (the compact schemas
of `wire_schema`, exactly as `CnkiServer.list_tools` derives them from the models) and the module
whose `register(server)` defines it. A tool's module is imported and registered on the tool's
first call (`CnkiServer.load_tool`). `tests/unit/test_tool_catalog.py` proves the file equal to
what the modules produce; regenerate it with `python scripts/update_tool_catalog.py`."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cnki_mcp.server.errors import CnkiServer

CATALOG_PATH = Path(__file__).with_name("tool_catalog.json")


@dataclass(frozen=True, slots=True)
class ToolCatalog:
    """Published tool definitions (wire JSON, registration order) and each tool's module."""

    tools: tuple[dict[str, Any], ...]
    modules: dict[str, str]  # tool name -> module defining it


def load_catalog(path: Path = CATALOG_PATH) -> ToolCatalog | None:
    """The packaged catalog; None when the file is missing (the server then registers every
    module at start)."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return ToolCatalog(tools=tuple(data["tools"]), modules=dict(data["modules"]))


def register_modules(server: CnkiServer, modules: Iterable[str]) -> dict[str, str]:
    """Import and register each module in order; tool name -> the module that registered it."""
    owners: dict[str, str] = {}
    for module in modules:
        before = {tool.name for tool in server._tool_manager.list_tools()}
        importlib.import_module(module).register(server)
        for tool in server._tool_manager.list_tools():
            if tool.name not in before:
                owners[tool.name] = module
    return owners


async def build_catalog(server: CnkiServer) -> dict[str, Any]:
    """The catalog file's content from an eagerly registered server."""
    published = await server.list_tools()
    return {
        "tools": [tool.model_dump(mode="json", by_alias=True, exclude_unset=True) for tool in published],
        "modules": {tool.name: server.tool_modules[tool.name] for tool in published},
    }


def render_catalog(content: dict[str, Any]) -> str:
    return json.dumps(content, ensure_ascii=False, indent=1) + "\n"



async def current_catalog_text() -> str:
    """The catalog file as the tool modules produce it now (a server with no services opened)."""
    from cnki_mcp.server.app import build_server

    def no_services() -> Any:  # never called: listing tools opens no session
        raise RuntimeError("the catalog is built without services")

    server = build_server(no_services, lazy_tools=False)
    return render_catalog(await build_catalog(server))
