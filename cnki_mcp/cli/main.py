"""The `cnki-mcp` command: parses arguments and dispatches to one module per command.

Each command module exposes `add_arguments(parser)` and `run(args) -> int`. Imports are lazy,
so `cnki-mcp --help` and `cnki-mcp version` never load Playwright or the MCP SDK."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from cnki_mcp import __version__
from cnki_mcp.errors import CnkiError

# name -> (module, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "sim": ("cnki_mcp.cli.sim_cmd", "启动本地知网模拟站 / start the offline CNKI simulator"),
    "parse": ("cnki_mcp.cli.parse_cmd", "解析保存的知网页面并输出 JSON / parse a saved CNKI page to JSON"),
    "setup": ("cnki_mcp.cli.setup_cmd", "安装向导：浏览器、AI 客户端配置、协议检查 / guided setup"),
    "config": ("cnki_mcp.cli.config_cmd", "打印某个 AI 客户端的配置片段，不写文件 / print a client's config entry"),
    "doctor": ("cnki_mcp.cli.doctor_cmd", "检查浏览器、数据目录、数据库与依赖 / local health checks"),
    "serve": ("cnki_mcp.cli.serve_cmd", "启动 MCP 服务（stdio 或 HTTP）/ run the MCP server"),
    "schema": ("cnki_mcp.cli.schema_cmd", "输出工具定义 JSON / print the MCP tool definitions"),
    "logout": ("cnki_mcp.cli.logout_cmd", "退出知网登录：删除浏览器资料与会话 Cookie / sign out of CNKI"),
    "watch": ("cnki_mcp.cli.watch_cmd", "检查订阅的检索有无更新（适合 cron）/ check saved searches (for cron)"),
    "demo": ("cnki_mcp.cli.demo_cmd", "离线演示：模拟站 + 真实服务 + Chromium 端到端检索 / offline end-to-end demo"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI parser. With `only`, just that command's module is imported to add its arguments
    (the others are listed by name and help): `serve` starts without importing setup's client
    registry, config writers and the like (docs/benchmarks.md §Start-up)."""
    parser = argparse.ArgumentParser(
        prog="cnki-mcp",
        description="cnki-mcp: 通过 AI 助手使用中国知网 / an MCP server for CNKI",
    )
    parser.add_argument("--version", action="version", version=f"cnki-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("version", help="打印版本 / print the version")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            importlib.import_module(module).add_arguments(p)
    return parser


def escape_unencodable_output() -> None:
    """stdout and stderr escape what their encoding cannot hold (`\\u2082`) instead of ending the
    command in a UnicodeEncodeError traceback: under a GBK locale a title with CO₂ in `parse` or a
    cron `watch check` digest, under Latin-1 or PYTHONIOENCODING=ascii every Chinese line of
    --help, schema and doctor. `serve` is untouched: its stdio transport writes UTF-8 bytes itself."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if reconfigure is None or stream.errors not in ("strict", None) or encoding == "utf8":
            continue
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stderr is None:
        # started with fd 2 closed (`2>&-`): print(file=None) writes to stdout, which `serve`
        # speaks the protocol on, so a start-up error reached the client as a line of its stream
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's own stderr
    escape_unencodable_output()
    given = list(sys.argv[1:] if argv is None else argv)
    first = given[0] if given else None
    parser = build_parser(first if first in COMMANDS else None)
    code: int | None = None
    try:
        try:
            args = parser.parse_args(argv)  # --help prints, then SystemExit
        except SystemExit:
            _flush_stdout()
            raise
        code = _command(parser, args)
        # Output to a pipe is buffered: a reader gone is met here, not at the interpreter's exit
        # flush ("Exception ignored … BrokenPipeError", exit 120, the command's own code lost).
        sys.stdout.flush()
        return code
    except CnkiError as exc:
        print(f"错误 {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `cnki-mcp config --list | head`, `cnki-mcp version | true`: the reader went away; not an
        # error worth a traceback. The command's exit code stands (doctor's 1 for a failed check).
        stdout_gone()
        return code if code is not None else 0


def _command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command is None:
        # a usage error as argparse gives one (`cnki-mcp $CMD` with CMD empty in a script): the help
        # on stderr, exit 2; before, the help on stdout and exit 0 told the script it had worked
        parser.print_help(sys.stderr)
        return 2
    if args.command == "version":
        print(f"cnki-mcp {__version__}")
        return 0
    module = importlib.import_module(COMMANDS[args.command][0])
    return int(module.run(args) or 0)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()


def stdout_gone() -> None:
    """After a BrokenPipeError on stdout: point it at the null device, so the interpreter's own
    flush at exit does not fail again with a second traceback."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    raise SystemExit(main())
