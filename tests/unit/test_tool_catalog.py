"""The packaged tool catalog (cnki_mcp/server/catalog.py): equal to what the tool modules
produce, published as the eagerly registered server publishes it, and a module registered only
when one of its tools is first called."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.types import ListToolsResult

from cnki_mcp.server import app, catalog
from cnki_mcp.server.app import TOOL_MODULES, build_server


def _no_services() -> Any:
    raise AssertionError("listing tools opens no session")


async def test_catalog_file_is_what_the_tool_modules_produce() -> None:
    assert catalog.CATALOG_PATH.read_text(encoding="utf-8") == await catalog.current_catalog_text(), (
        "cnki_mcp/server/tool_catalog.json is stale: run `python scripts/update_tool_catalog.py`"
    )


@pytest.mark.parametrize("dump", [{"exclude_unset": True}, {"exclude_none": True}])
async def test_lazy_server_publishes_exactly_what_the_eager_server_does(dump: dict[str, bool]) -> None:
    lazy = build_server(_no_services)
    eager = build_server(_no_services, lazy_tools=False)
    published = [ListToolsResult(tools=await s.list_tools()).model_dump(by_alias=True, mode="json", **dump)
                 for s in (lazy, eager)]
    assert published[0] == published[1]
    assert {t["name"] for t in published[0]["tools"]} == set(app.TOOL_NAMES)


def test_a_tool_module_is_registered_on_the_first_call_of_one_of_its_tools() -> None:
    server = build_server(_no_services)
    assert server._tool_manager.list_tools() == []
    server.load_tool("operation_status")
    registered = {t.name for t in server._tool_manager.list_tools()}
    assert registered == {n for n, m in server.tool_modules.items() if m == "cnki_mcp.server.tools_ops"}
    server.load_tool("operation_control")  # same module: not registered twice
    assert {t.name for t in server._tool_manager.list_tools()} == registered
    server.load_tool("no_such_tool")  # unknown names stay unknown (call_tool answers -32602)
    assert server._tool_manager.get_tool("no_such_tool") is None


def test_every_tool_module_is_in_the_catalog() -> None:
    loaded = catalog.load_catalog()
    assert loaded is not None
    assert set(loaded.modules.values()) == set(TOOL_MODULES)
    assert set(loaded.modules) == set(app.TOOL_NAMES)


def test_a_catalog_missing_a_module_falls_back_to_registering_every_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loaded = catalog.load_catalog()
    assert loaded is not None
    stale = catalog.ToolCatalog(
        tools=loaded.tools[:-1], modules={k: v for k, v in loaded.modules.items() if k != "search_library"}
    )
    monkeypatch.setattr(app, "load_catalog", lambda: stale)
    server = build_server(_no_services)
    assert {t.name for t in server._tool_manager.list_tools()} == set(app.TOOL_NAMES)


# What building the server (as `serve` does, before any tool call) must not import.
NOT_AT_BUILD = (
    "cnki_mcp.server.tools_", "cnki_mcp.pipeline", "cnki_mcp.cite", "cnki_mcp.parse", "cnki_mcp.query",
    "cnki_mcp.site.cnki", "cnki_mcp.sim", "playwright", "pypinyin", "jieba", "rapidfuzz", "selectolax", "pypdf",
)


def test_building_the_server_imports_no_tool_module_and_no_heavy_dependency(tmp_path: Path) -> None:
    """In a fresh interpreter: other tests have imported everything into this one."""
    code = (
        "import json, sys\n"
        "from cnki_mcp.server.app import build_server\n"
        "build_server(lambda: None)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(tmp_path), check=True).stdout
    modules = json.loads(out)
    assert "mcp.server.mcpserver" in modules  # the server really was built
    assert [m for m in modules if m.startswith(NOT_AT_BUILD)] == []
