"""`cnki-mcp demo [QUESTION]`: the offline end-to-end demo (simulator + real server + Chromium)."""

from __future__ import annotations

import argparse
import asyncio


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "question",
        nargs="?",
        default=None,
        help="研究问题（默认：自动驾驶汽车产品责任的归责原则） / the research question",
    )


def run(args: argparse.Namespace) -> int:
    from cnki_mcp.server.demo import run_demo

    return asyncio.run(run_demo(args.question))
