"""What every client sees of the tools: tools/list under its size cap with no empty schemas,
every result (success or coded error, including an operation that failed) valid against the
tool's published output schema with `isError` telling them apart, and an unknown tool name
answered with the JSON-RPC error the MCP specification asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ListToolsResult

from cnki_mcp.errors import ParserUnsupported, SiteUnavailable
from cnki_mcp.pipeline.models import ResultsPage
from cnki_mcp.server.app import TOOL_NAMES, build_server
from tests.contract.server_fakes import Harness
from tests.contract.test_server_inmemory import BAD_ARGUMENTS

# Characters of the tools/list result on the wire (docs/benchmarks.md): 1,500 per tool on average,
# the density the first 16 tools were cut down to (25,000 for 16).
TOOLS_LIST_CAP = 1_500 * len(TOOL_NAMES)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data", inline_wait=5.0)


def _schemas(node: Any, path: str = "$") -> list[tuple[str, Any]]:
    """Every subschema position of a JSON Schema (property maps walked by name)."""
    found: list[tuple[str, Any]] = [(path, node)]
    if not isinstance(node, dict):
        return found
    for key in ("properties", "$defs", "patternProperties"):
        for name, sub in (node.get(key) or {}).items():
            found += _schemas(sub, f"{path}.{key}.{name}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            found += _schemas(node[key], f"{path}.{key}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(node.get(key) or []):
            found += _schemas(sub, f"{path}.{key}[{i}]")
    return found


async def test_tools_list_is_under_the_cap_with_no_empty_schemas(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = (await client.list_tools()).tools
    wire = ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)
    assert len(wire) <= TOOLS_LIST_CAP, len(wire)
    for tool in tools:
        assert tool.output_schema is not None, tool.name
        for path, sub in _schemas(tool.input_schema) + _schemas(tool.output_schema):
            assert sub != {}, (tool.name, path)
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert "title" not in json.dumps(tool.input_schema.get("properties", {}).get("limit", {}))


async def test_every_coded_error_result_validates_against_the_tools_output_schema(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for name, args in BAD_ARGUMENTS:
            result = await client.call_tool(name, args)
            jsonschema.validate(result.structured_content, schemas[name])
            if name != "diagnostics":
                assert result.is_error and result.structured_content["code"].startswith("INVALID_")


async def test_successful_results_validate_against_the_published_output_schema(h: Harness) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "竞业限制 违约金", "limit": 3}),
        ("structured_search", {"expression": {"field": "title", "value": "违约金"}}),
        ("search_results", {"search_id": "op_x", "limit": 3}),
        ("get_metadata", {"record_refs": ["rec_a"]}),
        ("session_status", {}),
        ("session_status", {"refresh": True}),
        ("operation_status", {}),
        ("operation_control", {"action": "recover"}),
        ("diagnostics", {}),
        ("link_references", {"text": "见《不存在的题名》。"}),
    ]
    async with Client(build_server(h.open)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            jsonschema.validate(result.structured_content, schemas[name])


class FailingMetadataPipeline:
    async def metadata(self, inp: Any, ctx: Any) -> Any:
        raise ParserUnsupported(page="detail")


async def test_a_failed_operation_is_an_error_result_with_its_code(h: Harness) -> None:
    failing = FailingMetadataPipeline()
    h.pipeline.metadata = failing.metadata  # type: ignore[method-assign]
    async with Client(build_server(h.open)) as client:
        schema = next(t for t in (await client.list_tools()).tools if t.name == "get_metadata").output_schema
        result = await client.call_tool("get_metadata", {"record_refs": ["rec_a"]})
    assert result.is_error
    data = result.structured_content
    jsonschema.validate(data, schema)
    assert data["status"] == "failed" and data["code"] == "PARSER_UNSUPPORTED" and data["retryable"] is False
    assert data["errors"][0]["code"] == "PARSER_UNSUPPORTED"
    assert data["operation_id"].startswith("op_")  # the record stays reachable through operation_status
    assert json.loads(result.content[0].text)["code"] == "PARSER_UNSUPPORTED"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unknown_tool_is_a_jsonrpc_invalid_params_error(h: Harness, mode: str) -> None:
    async with Client(build_server(h.open), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {})
        assert raised.value.error.code == -32602
        assert (await client.call_tool("diagnostics", {})).is_error is False
    assert set(TOOL_NAMES) >= {"diagnostics"}


async def test_an_unknown_prompt_is_a_jsonrpc_invalid_params_error(h: Harness) -> None:
    async with Client(build_server(h.open), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("no_such_prompt", {})
        assert raised.value.error.code == -32602
        assert (await client.get_prompt("research_topic", {"topic": "分层作业"})).messages


async def test_a_failed_identity_refresh_keeps_its_code(h: Harness) -> None:
    async def down(op: Any = None) -> Any:
        raise SiteUnavailable(reason="test")

    h.backend.identity = down  # type: ignore[method-assign]
    async with Client(build_server(h.open)) as client:
        schema = next(t for t in (await client.list_tools()).tools if t.name == "session_status").output_schema
        result = await client.call_tool("session_status", {"refresh": True})
    assert result.is_error
    jsonschema.validate(result.structured_content, schema)
    assert result.structured_content["code"] == "SITE_UNAVAILABLE"  # found by tests/fuzz: was INTERNAL
    assert result.structured_content["retryable"] is True
    assert result.structured_content["details"]["operation_id"].startswith("op_")


@pytest.mark.parametrize(("errno_", "reason"), [(28, "disk_full"), (30, "read_only")])  # ENOSPC, EROFS
async def test_a_full_or_read_only_disk_no_code_caught_is_still_coded_not_internal(
    h: Harness, monkeypatch: pytest.MonkeyPatch, errno_: int, reason: str
) -> None:
    """The last net under every write: an OSError only a full or read-only disk raises, reaching
    an operation (session_status refresh) or an inline tool (diagnostics) uncoded, is
    DATA_DIRECTORY_UNUSABLE with the disk's reason. It was INTERNAL, a bug, each time such a path
    was found (an export, a download's copy, the session-cookie file)."""
    import os

    from cnki_mcp.server import tools_session

    async def refused(op: Any = None) -> Any:
        raise OSError(errno_, os.strerror(errno_), "/data/session-cookies.json")

    def also_refused(services: Any) -> Any:
        raise OSError(errno_, os.strerror(errno_))

    h.backend.identity = refused  # type: ignore[method-assign]
    monkeypatch.setattr(tools_session, "build_diagnostics", also_refused)
    async with Client(build_server(h.open)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for tool, args in (("session_status", {"refresh": True}), ("diagnostics", {})):
            result = await client.call_tool(tool, args)
            assert result.is_error
            jsonschema.validate(result.structured_content, schemas[tool])
            assert result.structured_content["code"] == "DATA_DIRECTORY_UNUSABLE", tool
            assert result.structured_content["details"]["reason"] == reason


async def test_an_oserror_a_disk_does_not_explain_stays_internal(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    from cnki_mcp.server import tools_session

    def reset(services: Any) -> Any:
        raise ConnectionResetError(104, "Connection reset by peer")

    monkeypatch.setattr(tools_session, "build_diagnostics", reset)
    async with Client(build_server(h.open)) as client:
        result = await client.call_tool("diagnostics", {})
    assert result.is_error and result.structured_content["code"] == "INTERNAL"


async def test_a_page_of_a_failed_searchs_results_is_still_a_result(h: Harness) -> None:
    def failed_page(inp: Any) -> ResultsPage:
        return ResultsPage(search_id=inp.search_id, status="failed", scope=inp.scope, total=0, offset=0,
                           next_offset=None, results=[])  # fmt: skip

    h.pipeline.results = failed_page  # type: ignore[method-assign]
    async with Client(build_server(h.open)) as client:
        result = await client.call_tool("search_results", {"search_id": "op_x"})
    assert not result.is_error, result.structured_content
    assert result.structured_content["status"] == "failed" and result.structured_content["total"] == 0


async def test_a_results_text_content_is_its_structured_content_as_compact_json(h: Harness) -> None:
    # the text is what clients give the model (and what their output caps count): no indentation
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "竞业限制 违约金", "limit": 3}),
        ("search_results", {"search_id": "op_x", "limit": 3}),
        ("diagnostics", {}),
    ]
    async with Client(build_server(h.open)) as client:
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            (block,) = result.content
            assert block.type == "text"
            assert block.text == json.dumps(result.structured_content, ensure_ascii=False), name
