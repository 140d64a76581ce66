"""`cnki-mcp demo [QUESTION]`: the offline end-to-end demo (simulator + real server + Chromium)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "question",
        nargs="?",
        default=None,
        help="研究问题（默认：自动驾驶汽车产品责任的归责原则） / the research question",
    )


def run(args: argparse.Namespace) -> int:
    from cnki_mcp.cli.serve_cmd import run_like_ctrl_c
    from cnki_mcp.server.demo import run_demo

    # stopped from outside (SIGTERM, its terminal closed, also when started with SIGINT ignored):
    # the temporary data directory, browser profile included, is removed as after Ctrl-C; it was
    # left in the temporary directory
    return run_like_ctrl_c(run_demo, args.question)
