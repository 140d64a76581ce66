"""Regenerate cnki_mcp/server/tool_catalog.json (what `tools/list` publishes without importing
the tool modules) from the tool modules themselves, then cnki_mcp/server/handshake.json (the
SDK's answers to a client's first messages, replayed before the SDK is imported) from the
server; run it after changing a tool's models, description or annotations, the guide, the
prompts, the version, or the mcp SDK, and after adding a module to `server.app.TOOL_MODULES`.

    .venv/bin/python scripts/update_tool_catalog.py [--check]"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from cnki_mcp.server.catalog import CATALOG_PATH, current_catalog_text
from cnki_mcp.server.fast_start import SNAPSHOT_PATH
from cnki_mcp.server.stdio import current_snapshot_text

# In this order: the handshake snapshot is captured from a server publishing the catalog.
FILES: tuple[tuple[Path, Callable[[], Awaitable[str]]], ...] = (
    (CATALOG_PATH, current_catalog_text),
    (SNAPSHOT_PATH, current_snapshot_text),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is stale, write nothing")
    args = parser.parse_args(argv)
    any_stale = False
    for path, produce in FILES:
        text = anyio.run(produce)
        stale = not path.exists() or path.read_text(encoding="utf-8") != text
        any_stale |= stale
        if args.check:
            print(f"{path.name}: {'stale' if stale else 'up to date'}")
            continue
        if stale:
            path.write_text(text, encoding="utf-8")
        print(f"{path}: {'written' if stale else 'unchanged'}")
    return 1 if args.check and any_stale else 0


if __name__ == "__main__":
    sys.exit(main())
