"""`cnki-mcp config CLIENT`: print the entry for one MCP client without touching any file.

The snippet goes to stdout (redirectable); where it belongs (the file setup would write,
the one-click link, or where to paste it) goes to stderr. `--list` shows the 34 clients."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from cnki_mcp.cli.clients import (
    CLIENTS,
    ConfigFormat,
    InstallMethod,
    OSFamily,
    Plan,
    describe_location,
    get_client,
    home_of,
    launch_env,
    make_plan,
    os_family,
    rerun_command,
)
from cnki_mcp.errors import InvalidInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "打印某个 MCP 客户端的 cnki 配置片段（不写任何文件）。客户端 ID 见 --list；"
        "片段输出到 stdout，写入位置/导入链接/粘贴位置输出到 stderr。"
    )
    parser.add_argument(
        "client", nargs="?", metavar="CLIENT", help="客户端 ID，例如 claude-desktop、codex、cursor / client id"
    )
    parser.add_argument("--list", action="store_true", help="列出支持的客户端 / list the clients")
    parser.add_argument("--browser", metavar="PATH", help="写入 CNKI_BROWSER_PATH 的浏览器程序路径 / browser program for CNKI_BROWSER_PATH")
    parser.add_argument("--data-dir", metavar="DIR", help="写入 CNKI_DATA_DIR 的数据目录 / data directory for CNKI_DATA_DIR")
    parser.add_argument(
        "--uvx",
        action="store_true",
        help="写入 uvx --from cnki-research-mcp cnki-mcp serve（每次由 uv 运行），而不是本机安装的绝对路径 "
        "/ write a uvx entry instead of this installation's path",
    )
    parser.add_argument(
        "--os",
        choices=[o.value for o in OSFamily],
        help="按指定系统显示配置路径（默认本机）/ show the entry and path for another system",
    )


def list_clients() -> str:
    lines = [f"{'ID':<15} {'格式':<9} {'安装方式':<7} 名称 / 位置"]
    for client in CLIENTS:
        where = "; ".join(f"{k}: {v}" for k, v in describe_location(client).items())
        if client.install is InstallMethod.LINK:
            where = "一键导入链接"
        elif client.install is InstallMethod.PASTE:
            where = client.where
        lines.append(
            f"{client.id:<15} {client.format.value:<9} {client.install.value:<7} {client.name} — {where}"
        )
    return "\n".join(lines)


def auto_browser(explicit: str | None, environ: Mapping[str, str]) -> str | None:
    """The browser for the entry: the given one, else CNKI_BROWSER_PATH, else the first
    found in the usual places (no launch)."""
    from cnki_mcp.cli.setup_cmd import absolute
    from cnki_mcp.site.locate import find_browser, program_path

    if explicit or environ.get("CNKI_BROWSER_PATH"):  # absolute: the client starts the server elsewhere
        return program_path(absolute(explicit or environ["CNKI_BROWSER_PATH"]), sys.platform)
    found = find_browser(None, platform=sys.platform, environ=environ, exists=os.path.isfile)
    return found.path if found else None


def where_text(plan: Plan, env: Mapping[str, str], *, uvx: bool) -> str:
    client = plan.client
    if plan.link:
        return f"一键导入（在浏览器或终端中打开此链接）：\n{plan.link}"
    if plan.path is not None:
        how = "追加" if client.format is ConfigFormat.DSH else f"合并到 {client.servers_key}.cnki"
        return f"写入位置：{plan.path}（{how}；可用 {rerun_command(client.id, env, uvx=uvx, windows=os_family(sys.platform) is OSFamily.WINDOWS)} 自动写入）"
    if client.where:
        return f"粘贴位置：{client.where}"
    return "本系统上没有该客户端的配置文件位置；请手动粘贴"


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(list_clients())
        return 0
    if not args.client:
        raise InvalidInput("请指定客户端 ID（cnki-mcp config --list 查看全部）")
    from cnki_mcp.cli.launcher import current_launcher, uvx_launcher
    from cnki_mcp.cli.setup_cmd import absolute

    client = get_client(args.client)
    environ = os.environ
    os_name = OSFamily(args.os) if args.os else os_family(sys.platform)
    if os_name is not os_family(sys.platform):
        # For another machine nothing here applies: paths are written as given, no browser is
        # looked for, and the server runs through uvx (this machine's paths mean nothing there).
        env = launch_env(browser_path=args.browser or None, data_dir=args.data_dir or None)
        launcher = uvx_launcher(lambda _name: None)  # `uvx` by name: no path of this machine
    else:
        env = launch_env(
            browser_path=auto_browser(args.browser, environ),
            data_dir=absolute(args.data_dir or environ["CNKI_DATA_DIR"])
            if args.data_dir or environ.get("CNKI_DATA_DIR")
            else None,
        )
        launcher = current_launcher(prefer_uvx=args.uvx)
    plan = make_plan(
        client,
        launcher.serve(),
        env,
        os_name=os_name,
        home=home_of(os_name, environ, str(Path.home())),
        environ=environ,
    )
    sys.stdout.write(plan.snippet)
    sys.stdout.flush()
    if os_name is not os_family(sys.platform) and plan.path is not None:
        # Another OS: its home and variables are unknown here, so show the rule, not a path.
        where = f"写入位置（{os_name.value}）：{describe_location(client)[os_name.value]}"
    else:
        where = where_text(plan, env, uvx=bool(args.uvx))
    print(f"\n# {client.name}：{where}", file=sys.stderr)
    return 0
