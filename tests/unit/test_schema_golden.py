"""docs/tool-schema.json is what `cnki-mcp schema` prints; regenerate with
`cnki-mcp schema -o docs/tool-schema.json` when the MCP surface changes on purpose."""

from __future__ import annotations

import json
from pathlib import Path

from cnki_mcp.server.app import TOOL_NAMES
from cnki_mcp.server.schema import collect_schema, render

GOLDEN = Path(__file__).resolve().parents[2] / "docs" / "tool-schema.json"


async def test_tool_schema_file_matches_the_server() -> None:
    current = render(await collect_schema())
    assert GOLDEN.read_text(encoding="utf-8") == current, (
        "docs/tool-schema.json is stale: run `cnki-mcp schema -o docs/tool-schema.json`"
    )


async def test_schema_lists_tools_sorted_with_annotations_and_schemas() -> None:
    schema = json.loads(render(await collect_schema()))
    names = [t["name"] for t in schema["tools"]]
    assert names == sorted(names) and names == sorted(TOOL_NAMES)
    for tool in schema["tools"]:
        assert {"name", "title", "description", "annotations", "inputSchema", "outputSchema"} <= set(tool)
    assert [r["uri"] for r in schema["resources"]] == ["cnki://guide"]
    assert [p["name"] for p in schema["prompts"]] == ["literature_review", "research_topic"]
