"""The MCP surface as JSON (tools with annotations and schemas, resources, prompts), read through
an in-memory client from a server on a temporary data directory (no browser). Sorted and stable:
this is docs/tool-schema.json."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client

from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings


async def collect_schema() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cnki-schema-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        server = build_server(lambda: Services.open(settings), lazy_tools=False)  # from the models
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            prompts = (await client.list_prompts()).prompts

    def dump(items: Any, key: str) -> list[dict[str, Any]]:
        rows = [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in items]
        return sorted(rows, key=lambda r: r[key])

    return {
        "tools": dump(tools, "name"),
        "resources": dump(resources, "uri"),
        "prompts": dump(prompts, "name"),
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
