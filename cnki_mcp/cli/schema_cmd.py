"""`cnki-mcp schema`: print the MCP tool definitions, resources and prompts as sorted JSON
(what docs/tool-schema.json holds)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cnki_mcp.errors import InvalidInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", "-o", type=Path, default=None, help="写入这个文件而不是标准输出（- 为标准输出）/ write to this file instead of stdout (- for stdout)"
    )


def run(args: argparse.Namespace) -> int:
    import anyio

    from cnki_mcp.server.schema import collect_schema, render

    text = render(anyio.run(collect_schema))
    if args.output is not None and str(args.output) != "-":  # `-o -`: stdout, as `parse`'s `-` is stdin
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"无法写入 {args.output}：{exc.strerror or exc}", field="output") from exc
    else:
        sys.stdout.write(text)
    return 0
