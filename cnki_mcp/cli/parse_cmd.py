"""`cnki-mcp parse {grid,detail,journal,reader,gate} FILE`: parse a saved CNKI page and print JSON.

FILE `-` reads stdin. Bytes are decoded as UTF-8, falling back to GB18030 (a GBK superset) when
that fails, unless `--encoding` is given. A `CnkiError` propagates: main prints `错误 CODE: …`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

KINDS = ("grid", "detail", "journal", "reader", "gate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS, help="页面类型 / page type")
    parser.add_argument("file", help="保存的 HTML 文件，- 表示标准输入 / saved HTML file, - for stdin")
    parser.add_argument("--url", default=None, help="页面原始地址，用于解析相对链接 / the page URL")
    parser.add_argument("--encoding", default=None, help="强制编码（默认 UTF-8，失败时 GBK）")
    parser.add_argument(
        "--expect",
        default=None,
        help="journal: 期望的来源名称；reader: 期望的题名 / expected source (journal) or title (reader)",
    )
    parser.add_argument("--status", type=int, default=None, help="gate: HTTP 状态码 / HTTP status")


def decode(data: bytes, encoding: str | None = None) -> str:
    """UTF-8 (BOM tolerated), else GB18030; an explicit encoding wins."""
    if encoding:
        return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")


def read_input(file: str, encoding: str | None = None) -> str:
    data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    return decode(data, encoding)


def parse_kind(kind: str, html: str, url: str | None, expect: str | None, status: int | None) -> Any:
    """Run one parser; detail/journal/reader are imported lazily (they live in their own modules)."""
    if kind == "grid":
        from cnki_mcp.parse.grid import parse_grid

        return parse_grid(html, url)
    if kind == "detail":
        from cnki_mcp.parse.detail import parse_detail

        return parse_detail(html, url)
    if kind == "journal":
        from cnki_mcp.parse.journal import parse_journal

        return parse_journal(html, url, expected_source=expect)
    if kind == "reader":
        from cnki_mcp.parse.reader import parse_reader

        return parse_reader(html, url, expected_title=expect)
    from cnki_mcp.parse.gate import classify_page, read_header_identity

    return {
        "verdict": classify_page(html, url, status).model_dump(mode="json"),
        "identity": read_header_identity(html).model_dump(mode="json"),
    }


def run(args: argparse.Namespace) -> int:
    html = read_input(args.file, args.encoding)
    result = parse_kind(args.kind, html, args.url, args.expect, args.status)
    payload = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
    print(json.dumps(payload, ensure_ascii=False, indent=2))
    return 0
