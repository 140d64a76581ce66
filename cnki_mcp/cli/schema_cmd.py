"""`cnki-mcp schema`: the MCP surface as JSON (tools with annotations and schemas, resources,
prompts), read through an in-memory client from a server whose services are never opened
for real (a temporary data directory, no browser). Sorted and stable: docs/tool-schema.json."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", "-o", type=Path, default=None, help="write to this file instead of stdout"
    )


async def collect_schema() -> dict[str, Any]:
    from mcp import Client

    from cnki_mcp.server.app import build_server
    from cnki_mcp.services import Services
    from cnki_mcp.settings import Settings

    with tempfile.TemporaryDirectory(prefix="cnki-schema-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        server = build_server(lambda: Services.open(settings))
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            prompts = (await client.list_prompts()).prompts
    return {
        "tools": sorted(
            (t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools),
            key=lambda t: t["name"],
        ),
        "resources": sorted(
            (r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources),
            key=lambda r: r["uri"],
        ),
        "prompts": sorted(
            (p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in prompts),
            key=lambda p: p["name"],
        ),
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def run(args: argparse.Namespace) -> int:
    import anyio

    text = render(anyio.run(collect_schema))
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
