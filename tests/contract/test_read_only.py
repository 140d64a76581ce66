"""Read-only mode through the SDK's in-memory client: the hidden tools are not listed and are
refused when called anyway (READ_ONLY_MODE), refused arguments likewise; diagnostics shows the
mode. Without the mode every tool stays listed (DESIGN.md "Read-only mode")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.server.app import TOOL_NAMES, build_server
from cnki_mcp.server.readonly import HIDDEN_TOOLS
from cnki_mcp.settings import load_settings
from tests.contract.server_fakes import Harness


def _harness(tmp_path: Path, read_only: bool) -> Harness:
    h = Harness(tmp_path / "data", inline_wait=5.0)
    h.settings = h.settings.with_(read_only=read_only)
    return h


def _code(result: Any) -> str:
    assert result.is_error, result
    return str(result.structured_content["code"])


def test_read_only_is_read_from_the_environment(tmp_path: Path) -> None:
    on = load_settings({"CNKI_DATA_DIR": str(tmp_path), "CNKI_READ_ONLY": "1"})
    off = load_settings({"CNKI_DATA_DIR": str(tmp_path)})
    assert on.read_only is True and off.read_only is False


async def test_read_only_hides_download_and_reader_tools(tmp_path: Path) -> None:
    h = _harness(tmp_path, read_only=True)
    async with Client(build_server(h.open)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        diag = await client.call_tool("diagnostics", {})
    assert {"download_paper", "read_online_html"} == HIDDEN_TOOLS
    assert names == set(TOOL_NAMES) - HIDDEN_TOOLS
    assert diag.structured_content["settings"]["read_only"] is True


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("download_paper", {"record_ref": "rec_0"}),
        ("read_online_html", {"record_ref": "rec_0"}),
        ("export_citations", {"record_refs": ["rec_0"], "format": "bibtex", "filename": "x"}),
    ],
)
async def test_read_only_refuses_hidden_tools_and_file_arguments(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    h = _harness(tmp_path, read_only=True)
    async with Client(build_server(h.open)) as client:
        result = await client.call_tool(tool, arguments)
    assert _code(result) == "READ_ONLY_MODE"
    assert [c for c in h.backend.calls if c != "close"] == []
    assert not (tmp_path / "data" / "exports").exists()


async def test_without_read_only_every_tool_is_listed(tmp_path: Path) -> None:
    h = _harness(tmp_path, read_only=False)
    async with Client(build_server(h.open)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        diag = await client.call_tool("diagnostics", {})
        download = await client.call_tool("download_paper", {"record_ref": "rec_0"})
    assert names == set(TOOL_NAMES)
    assert diag.structured_content["settings"]["read_only"] is False
    # not refused for read-only reasons (the fake store has no such paper)
    assert _code(download) != "READ_ONLY_MODE"
