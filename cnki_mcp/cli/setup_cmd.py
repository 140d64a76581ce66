"""`cnki-mcp setup`: pick and probe the browser, choose the MCP client, show the entry and
install it (merge into the client's config file with a backup, open a one-click link, or
say where to paste it), then run the stdio protocol check when it is available.

Interactive by default (numbered choices through input()); `--yes` asks nothing and takes
the defaults (first browser found, client `generic`), writing a client file only with
`--install-client`. `--dry-run` writes nothing."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import webbrowser
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from cnki_mcp.cli import configfile
from cnki_mcp.cli.clients import (
    CLIENTS,
    ENV_KEYS,
    Client,
    ConfigFormat,
    InstallMethod,
    OSFamily,
    Plan,
    get_client,
    home_of,
    installed_entry,
    launch_env,
    make_plan,
    merge_into,
    os_family,
    required_dir,
    rerun_command,
)
from cnki_mcp.cli.keep import keep_user_settings, kept_names
from cnki_mcp.errors import BrowserUnavailable, ClientNotInitialized, DataDirectoryUnusable, InvalidInput

DEFAULT_CLIENT = "generic"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "安装向导：选择并试启动浏览器（无界面、临时资料目录），选择 AI 客户端，"
        "生成 cnki 条目并写入客户端配置（先备份、保留其它设置、拒绝符号链接），最后做协议检查。"
        "不带参数时逐步提问；--yes 不提问。"
    )
    parser.add_argument(
        "--client", metavar="ID", help="客户端 ID（见 cnki-mcp config --list）；默认提问，--yes 时为 generic / client id (default: asked)"
    )
    parser.add_argument(
        "--browser", metavar="PATH", help="浏览器程序路径；默认用环境变量 CNKI_BROWSER_PATH，未设置时自动查找 / the browser program"
    )
    parser.add_argument(
        "--install-client",
        action="store_true",
        help="直接写入客户端配置文件（或打开一键导入链接），不再询问 / write the client config without asking",
    )
    parser.add_argument(
        "--uvx",
        action="store_true",
        help="写入 uvx --from cnki-research-mcp cnki-mcp serve（每次由 uv 运行），而不是本机安装的绝对路径 "
        "/ write a uvx entry instead of this installation's path",
    )
    parser.add_argument("--yes", "-y", action="store_true", help="不提问，使用默认值 / non-interactive")
    parser.add_argument("--dry-run", action="store_true", help="只显示将要做的事，不写任何文件 / show what would be done, write nothing")
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="写入 CNKI_DATA_DIR 的数据目录（默认用环境变量 CNKI_DATA_DIR；未设置时不写，用默认位置）"
        " / the data directory to write as CNKI_DATA_DIR",
    )


# --- prompts -------------------------------------------------------------------------


def ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError as exc:
        raise InvalidInput("没有可交互的输入；请用 --yes，并用 --client/--browser 指定选择") from exc


def ask_yes(prompt: str) -> bool:
    return ask(prompt).strip().lower() in ("", "y", "yes", "是", "好")


def choose(title: str, options: Sequence[str], default: int) -> int:
    """Numbered menu; returns the 0-based index. Empty input takes `default`."""
    print(title)
    for i, option in enumerate(options, 1):
        print(f"  {i:>2}. {option}")
    while True:
        raw = ask(f"请输入编号 [{default + 1}]: ").strip()
        if not raw:
            return default
        if raw.isdigit() and 1 <= int(raw) <= len(options):
            return int(raw) - 1
        print(f"请输入 1 到 {len(options)} 之间的编号")


# --- steps ---------------------------------------------------------------------------


def browser_candidates(
    environ: Mapping[str, str],
    *,
    platform: str = sys.platform,
    exists: Callable[[str], bool] = os.path.isfile,
    realpath: Callable[[str], str] = os.path.realpath,
) -> list[str]:
    """The installed browsers, each once: a symlink, or a package's launcher script
    (/usr/bin/chromium for /usr/lib/chromium/chromium), is not a second browser."""
    from cnki_mcp.site.locate import all_candidates, install_key

    seen: set[str] = set()
    out: list[str] = []
    for cand in all_candidates(
        environ.get("CNKI_BROWSER_PATH") or None,
        platform=platform,
        environ=environ,
        exists=exists,
    ):
        key = install_key(realpath(cand.path))
        if cand.found and key not in seen:
            seen.add(key)
            out.append(cand.path)
    return out


def absolute(path: str) -> str:
    """`path` as the entry needs it: `~` expanded and absolute, because the client starts the
    server in a folder of its own choosing (a relative path would name another place there)."""
    return str(Path(path).expanduser().absolute())


def pick_browser(explicit: str | None, environ: Mapping[str, str], interactive: bool) -> str:
    from cnki_mcp.site.locate import program_path

    if explicit:
        path = program_path(absolute(explicit), sys.platform)  # a macOS .app bundle: its binary
        if not os.path.isfile(path):
            raise BrowserUnavailable(f"浏览器程序不存在：{path}", path=path)
        return path
    configured = environ.get("CNKI_BROWSER_PATH")
    if configured and not os.path.isfile(program_path(absolute(configured), sys.platform)):
        # serve and doctor refuse it too: do not silently write another browser into the entry
        raise BrowserUnavailable(
            f"CNKI_BROWSER_PATH 指向的浏览器不存在：{configured}；改正或删除这个环境变量，或用 --browser 指定浏览器",
            path=configured,
        )
    found = browser_candidates(environ)
    if not found:
        raise BrowserUnavailable("没有找到 Chrome/Edge/Chromium；请先安装，或用 --browser 指定浏览器程序路径")
    if interactive and len(found) > 1:
        return absolute(found[choose("找到以下浏览器：", found, 0)])
    return absolute(found[0])


def check_data_dir(data_dir: Path) -> None:
    """Refuse, before anything is written, a data directory `serve` would refuse at start (it is
    a file, cannot be created or written, or holds what `serve` refuses): the protocol check runs
    with a temporary one and would not notice. Creates nothing."""
    from cnki_mcp import datadir

    hint = "；用 --data-dir 指定一个当前用户可写的文件夹"
    if data_dir.exists() or data_dir.is_symlink():
        if not data_dir.is_dir():
            raise DataDirectoryUnusable(
                f"数据目录 {data_dir} 不是文件夹{hint}", path=str(data_dir), reason="not_a_directory"
            )
        if not os.access(data_dir, os.W_OK | os.X_OK):
            raise DataDirectoryUnusable(f"数据目录 {data_dir} 不可写{hint}", path=str(data_dir), reason="not_writable")
        datadir.check_entries(data_dir)
        return
    parent = data_dir.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise DataDirectoryUnusable(
            f"无法创建数据目录 {data_dir}（{parent} 不是可写的文件夹）{hint}", path=str(data_dir), reason="cannot_create"
        )


def probe(path: str) -> tuple[bool, str]:
    from cnki_mcp.site.probe import probe_browser

    result = probe_browser(path, environ=dict(os.environ))  # the browser's own files stay out of HOME
    return (True, result.version or "") if result.ok else (False, result.error or "启动失败")


def pick_client(explicit: str | None, interactive: bool) -> Client:
    if explicit:
        return get_client(explicit)
    if not interactive:
        return get_client(DEFAULT_CLIENT)
    default = [c.id for c in CLIENTS].index(DEFAULT_CLIENT)
    labels = [f"{c.name}（{c.id}）" for c in CLIENTS]
    return CLIENTS[choose("选择要配置的 AI 客户端：", labels, default)]


def _peek(path: Path) -> str | None:
    """The client's config text, for what the installed entry holds (None when unreadable: the
    install itself then reports why)."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def open_link(link: str) -> bool:
    return webbrowser.open(link)


def install(plan: Plan, *, args: argparse.Namespace, interactive: bool, env: Mapping[str, str]) -> None:
    client = plan.client
    if plan.path is not None:
        target = Path(str(plan.path))
        if args.dry_run:
            print(f"（--dry-run）将把 cnki 条目合并进 {target}；未改动任何文件")
            return
        wanted = args.install_client or (interactive and ask_yes(f"写入 {target} 并备份原配置？[Y/n] "))
        if not wanted:
            print(f"未写入。需要时运行：{rerun_command(client.id, env, uvx=bool(args.uvx), windows=os_family(sys.platform) is OSFamily.WINDOWS)}")
            return
        folder = required_dir(client, plan.path)
        if folder is not None and not Path(str(folder)).is_dir():
            raise ClientNotInitialized(
                f"{folder} 不存在：请先启动一次 {client.name}，再运行 setup", path=str(folder)
            )
        current = installed_entry(client, _peek(target))
        kept = kept_names(plan.entry, current, ENV_KEYS[client.style]) if client.format is not ConfigFormat.DSH else []
        if kept:
            print(f"    保留已安装条目中本次未设置的项：{', '.join(kept)}")
        exe = shutil.which(client.cli) if client.cli else None
        if exe is not None:
            from cnki_mcp.cli.client_cli import install_with_cli, run_subprocess

            print(f"    使用 {client.name} 自带的命令行写入：{client.cli} mcp add-json --scope user cnki …")
            result = install_with_cli(
                exe,
                target,
                servers_key=client.servers_key,
                name="cnki",
                entry=keep_user_settings(plan.entry, current, ENV_KEYS[client.style]),
                now=datetime.now(),
                run=run_subprocess,
            )
        else:
            result = configfile.install_file(
                target, lambda text: merge_into(client, text, plan.entry), now=datetime.now()
            )
        if result.status == "unchanged":
            print(f"{target} 里已有相同的 cnki 条目，未改动")
        elif result.status == "created":
            print(f"已创建 {target}")
        else:
            print(f"已更新 {target}（原文件备份为 {result.backup}）")
        print(f"请完全退出并重新打开 {client.name}，新配置才会生效")
        return
    if plan.link:
        print(f"一键导入链接：\n{plan.link}")
        if args.dry_run:
            return
        wanted = args.install_client or (interactive and ask_yes(f"现在打开链接导入到 {client.name}？[Y/n] "))
        if wanted and not open_link(plan.link):
            print("无法自动打开链接；请复制上面的链接到浏览器地址栏打开")
        return
    if client.install is InstallMethod.WRITE:
        print(
            "本系统上没有该客户端的配置文件位置；"
            + (client.where or "请把上面的片段粘贴到客户端的 MCP 设置中")
        )
    else:
        print(f"请把上面的片段粘贴到：{client.where}")


def protocol_step(command: Sequence[str], env: Mapping[str, str]) -> int:
    """The stdio protocol check, once the MCP server provides `doctor_cmd.protocol_check`."""
    from cnki_mcp.cli import doctor_cmd

    check_fn = getattr(doctor_cmd, "protocol_check", None)
    if check_fn is None:
        print("协议检查暂不可用（MCP 服务器尚未提供 protocol_check）；已跳过")
        return 0
    result = check_fn(list(command), dict(env))
    print(doctor_cmd.format_line(result))
    return 0 if result.ok else 1


def run(args: argparse.Namespace) -> int:
    from cnki_mcp.cli.launcher import current_launcher
    from cnki_mcp.settings import load_settings

    environ = os.environ
    settings = load_settings(environ)  # a bad CNKI_* variable is reported (CONFIG_INVALID) before anything else
    interactive = not args.yes
    if args.client:
        get_client(args.client)  # a mistyped --client is UNKNOWN_CLIENT before the browser is probed
    launcher = current_launcher(prefer_uvx=args.uvx)

    print("1/4 浏览器")
    browser = pick_browser(args.browser, environ, interactive)
    ok, info = probe(browser)
    if not ok:
        raise BrowserUnavailable(f"浏览器无法启动：{info}", path=browser)
    print(f"    {browser}：无界面启动成功（版本 {info}）")

    print("2/4 客户端")
    client = pick_client(args.client, interactive)
    print(f"    {client.name}（{client.id}）")

    print("3/4 配置条目")
    given_dir = args.data_dir or environ.get("CNKI_DATA_DIR") or None
    data_dir = absolute(given_dir) if given_dir else None
    check_data_dir(Path(data_dir) if data_dir else settings.data_dir)
    env = launch_env(browser_path=browser, data_dir=data_dir)
    os_name = os_family(sys.platform)
    plan = make_plan(
        client,
        launcher.serve(),
        env,
        os_name=os_name,
        home=home_of(os_name, environ, str(Path.home())),
        environ=environ,
    )
    print(f"    启动方式：{launcher.describe()}")
    print(plan.snippet, end="" if plan.snippet.endswith("\n") else "\n")
    install(plan, args=args, interactive=interactive, env=env)

    print("4/4 协议检查")
    return protocol_step(launcher.serve(), env)
