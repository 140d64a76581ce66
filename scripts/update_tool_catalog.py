"""Regenerate cnki_mcp/server/tool_catalog.json (what `tools/list` publishes without importing
the tool modules) from the tool modules themselves; run it after changing a tool's models,
description or annotations, or after adding a module to `server.app.TOOL_MODULES`.

    .venv/bin/python scripts/update_tool_catalog.py [--check]"""

from __future__ import annotations

import argparse
import sys

import anyio

from cnki_mcp.server.catalog import CATALOG_PATH, current_catalog_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale, write nothing")
    args = parser.parse_args(argv)
    text = anyio.run(current_catalog_text)
    stale = not CATALOG_PATH.exists() or CATALOG_PATH.read_text(encoding="utf-8") != text
    if args.check:
        print(f"{CATALOG_PATH.name}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    if stale:
        CATALOG_PATH.write_text(text, encoding="utf-8")
    print(f"{CATALOG_PATH}: {'written' if stale else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
