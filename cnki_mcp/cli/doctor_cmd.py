"""`cnki-mcp doctor`: local health checks, one line each, exit 1 when any fails (a WARN line,
such as the data directory held by a running server, does not fail).

Checks: settings (environment variables), browser found, browser launchable (headless, in
a temporary profile), data directory writable, data directory not locked by another
cnki-mcp, browser profile not locked by another computer, store readable, package versions, display,
the browser's proxy (a WARN: CNKI's CDN refuses many proxies). Nothing here contacts CNKI.

`--protocol` adds the stdio protocol check (`protocol_check(command, env) -> Check`): spawn
`cnki-mcp serve` as a client would, with a temporary CNKI_DATA_DIR, initialize, list the tools,
call `diagnostics`, check the version and that no browser started. `setup` runs it last.

`--pages DIR` runs no checks: it surveys pages saved from the live site (browser "Save page") and
prints, per page, its kind and which fields the parsers read (`parse_cmd.survey_folder`); exit 1
when a parser refuses a page, so a changed site shows at once."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import secrets
import socket
import sqlite3
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from cnki_mcp import datadir
from cnki_mcp.browser_route import Route, browser_route
from cnki_mcp.errors import CnkiError, DataDirectoryInUse, DataDirectoryUnusable, InvalidInput
from cnki_mcp.settings import Settings, load_settings, paths_of, unknown_variables

PACKAGES = ("cnki-research-mcp", "playwright", "mcp", "tomlkit", "selectolax", "pydantic", "filelock", "platformdirs")


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""
    warning: bool = False  # shown as WARN; does not change the exit code


ProbeFn = Callable[[str], tuple[bool, str]]
# launches the browser inside Chromium's sandbox, as the server does: (started, refused by this
# machine, what it said)
SandboxProbeFn = Callable[[str], tuple[bool, bool, str]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "检查本机环境：浏览器能否找到并启动、数据目录可写且未被占用、数据库可读、依赖版本、"
        "有无图形显示。每项一行；任何一项失败（FAIL）时退出码为 1，WARN 不算失败。"
    )
    parser.add_argument("--json", action="store_true", help="以 JSON 输出 / print JSON")
    parser.add_argument(
        "--protocol",
        action="store_true",
        help="另外以 stdio 启动 cnki-mcp serve 做一次 MCP 握手自检 / also run the stdio MCP handshake check",
    )
    parser.add_argument(
        "--pages",
        metavar="DIR",
        default=None,
        help="逐页报告保存的知网页面读到了哪些字段（不做其它检查）/ report the fields read from each saved page in DIR",
    )


# --- the checks ----------------------------------------------------------------------


# Read by the project's own test scripts (scripts/test.sh, tests/), never by cnki-mcp: a
# developer's shell that sets them is not misspelling a setting.
_DEVELOPER_VARIABLES = re.compile(r"CNKI_(CHAOS_\w+|PEERS|REQUIRE_NODE_CLIENTS|SETUP_FOR_TESTS|TEST_TMP|TEST_WORKERS)")


def check_settings(environ: Mapping[str, str]) -> tuple[Check, Settings]:
    try:
        settings = load_settings(environ)
    except CnkiError as exc:  # the data directory and browser asked for are still the ones checked
        return Check("settings", False, f"{exc.code}: {exc.message}", "修正上面提到的环境变量"), paths_of(environ)
    unknown = {k: v for k, v in unknown_variables(environ).items() if not _DEVELOPER_VARIABLES.fullmatch(k.upper())}
    if unknown:
        names = "、".join(f"{name}（是不是 {like}？）" if like else name for name, like in unknown.items())
        return Check(
            "settings",
            True,
            f"环境变量有效；以下变量 cnki-mcp 不认识，已忽略：{names}",
            "改正拼写，或删去它们；README 的“配置”一节列出全部变量",
            warning=True,
        ), settings
    return Check("settings", True, "环境变量有效"), settings


def check_proxy(environ: Mapping[str, str], settings: Settings, *, platform: str) -> Check:
    """WARN when the browser will reach CNKI through a proxy: CNKI's CDN often refuses a proxy's
    or data centre's address (SITE_UNAVAILABLE `cdn_refused`), and sends a foreign one to its
    overseas site (`overseas_site`); docs/simulator.md "The network path". Chromium's rules for
    where its proxy comes from: browser_route.py."""
    from cnki_mcp.site.locate import decide_headless

    headless = decide_headless(settings.headless, platform=platform, display=settings.display)
    route = browser_route(environ, settings.extra_browser_args, platform=platform, headless=headless)
    # the verdict is this command's environment; an AI client starts the server with its own (its
    # config's env, or its desktop launcher's), which the server's diagnostics tool reads
    where = "以上按本命令的环境判断；AI 客户端启动的服务器用客户端给它的环境，以服务器 diagnostics 工具的 browser.network 为准"
    if route.kind == "direct":
        detail = f"浏览器直接连接知网（未经代理；{route.via}）" if route.via else "浏览器直接连接知网（未经代理）"
        return Check("network", True, detail, where)
    if route.kind == "unchecked":
        return Check(
            "network",
            True,
            f"浏览器按{route.via}决定是否经代理访问知网；这里未检查",
            f"开着代理（如 Clash 的“系统代理”）时，知网的 CDN 常拒绝代理的 IP（SITE_UNAVAILABLE，reason: cdn_refused）：{_direct_advice(route)}。{where}",
        )
    fix = (
        "或在 CNKI_BROWSER_ARGS 中加 --proxy-bypass-list=*.cnki.net"
        if route.via.startswith("CNKI_BROWSER_ARGS")
        else "或在 AI 客户端配置的 env 中设置 NO_PROXY=cnki.net,.cnki.net"
    )
    return Check(
        "network",
        True,
        f"浏览器将经代理 {route.address}（{route.via}）访问知网；知网的 CDN 常拒绝代理或数据中心的 IP"
        "（SITE_UNAVAILABLE，reason: cdn_refused），境外代理会被转到海外版（reason: overseas_site）",
        f"出现这些错误时关闭代理，或让知网直连：在代理软件中把 cnki.net 设为直连，{fix}。{where}",
        warning=True,
    )


def _direct_advice(route: Route) -> str:
    """How to let CNKI through directly where `route` (unchecked) says the proxy is decided. A desktop
    session's browser reads that desktop's proxy settings, not NO_PROXY (browser_route.py)."""
    if "GNOME" in route.via:
        return "在代理软件中把 cnki.net 设为直连，或在 GNOME 的“设置 → 网络 → 网络代理”中把 *.cnki.net 加入忽略的主机（这里 NO_PROXY 不起作用）"
    if "KDE" in route.via:
        return "在代理软件中把 cnki.net 设为直连，或在 KDE 的“系统设置 → 网络设置 → 代理”中把 .cnki.net 加入例外"
    if route.via.startswith("CNKI_BROWSER_ARGS"):
        return "在代理软件（或 PAC 脚本）中把 cnki.net 设为直连，或从 CNKI_BROWSER_ARGS 删去该开关"
    return "在代理软件中把 cnki.net 设为直连（Linux 上也可在 AI 客户端配置的 env 中设 NO_PROXY=cnki.net,.cnki.net）"


def check_browser_found(
    settings: Settings, *, platform: str, environ: Mapping[str, str]
) -> tuple[Check, str | None]:
    from cnki_mcp.site.locate import all_candidates, find_browser

    try:
        found = find_browser(settings.browser_path, platform=platform, environ=environ, exists=os.path.isfile)
    except CnkiError as exc:
        return (
            Check(
                "browser",
                False,
                f"CNKI_BROWSER_PATH={settings.browser_path}：{exc.message}",
                "改正 CNKI_BROWSER_PATH，或删除它以自动查找 Chrome/Edge/Chromium",
            ),
            None,
        )
    if found is None:
        checked = len(all_candidates(None, platform=platform, environ=environ, exists=lambda _p: False))
        return (
            Check(
                "browser",
                False,
                f"在 {checked} 个常见位置都没有找到 Chrome/Edge/Chromium",
                "安装 Google Chrome 或 Microsoft Edge，或用 CNKI_BROWSER_PATH 指定浏览器程序",
            ),
            None,
        )
    source = "CNKI_BROWSER_PATH" if found.source == "configured" else "自动查找"
    return Check("browser", True, f"{found.path}（{found.kind}，{source}）"), found.path


def _default_probe(path: str) -> tuple[bool, str]:
    from cnki_mcp.site.probe import probe_browser

    result = probe_browser(path, environ=dict(os.environ))  # the browser's own files stay out of HOME
    return result.ok, (result.version or "") if result.ok else (result.error or "启动失败")


def check_browser_launch(path: str | None, probe: ProbeFn) -> Check:
    from cnki_mcp.site.launch_error import temp_unusable

    if path is None:
        return Check("browser_launch", False, "未检查：没有找到浏览器", "先解决上面的浏览器问题")
    if (temp := temp_unusable()) is not None:  # not the browser's fault: its hint misled
        return Check("browser_launch", False, temp.message, "例如 mkdir -p ~/tmp，并设置 TMPDIR=$HOME/tmp")
    ok, info = probe(path)
    if ok:
        return Check("browser_launch", True, f"无界面启动成功，版本 {info}")
    return Check(
        "browser_launch",
        False,
        f"无法启动：{info}",
        "确认该文件是 Chrome/Edge/Chromium 程序且当前用户能运行；服务账号可能无法启动系统浏览器",
    )


def _default_sandbox_probe(path: str) -> tuple[bool, bool, str]:
    from cnki_mcp.site.probe import probe_browser

    result = probe_browser(path, environ=dict(os.environ), sandbox=True)
    return result.ok, result.sandbox_refused, result.error or ""


def check_sandbox(
    settings: Settings, launched: bool, path: str | None, probe: SandboxProbeFn, *, platform: str, euid: int | None
) -> Check:
    """Whether the server's browser will run inside Chromium's sandbox (the browser holds the
    CNKI login and runs the site's scripts); site/launch_error.py `sandbox_state`."""
    from cnki_mcp.site.launch_error import SANDBOX_OFF_ARGS, SANDBOX_OFF_ROOT, sandbox_state

    state = sandbox_state(platform, euid, settings.browser_args)
    if state == SANDBOX_OFF_ROOT:
        return Check("sandbox", True, "以 root 运行：Chromium 不能在沙箱中运行，浏览器将在沙箱外运行",
                     "以普通用户运行 cnki-mcp", warning=True)  # fmt: skip
    if state == SANDBOX_OFF_ARGS:
        return Check("sandbox", True, "CNKI_BROWSER_ARGS 含 --no-sandbox：浏览器将在沙箱外运行",
                     "不需要时从 CNKI_BROWSER_ARGS 去掉 --no-sandbox", warning=True)  # fmt: skip
    if not launched or path is None:
        return Check("sandbox", True, "未检查：浏览器未能启动", warning=True)
    started, refused, said = probe(path)
    if started:
        return Check("sandbox", True, "浏览器在 Chromium 沙箱中运行")
    if refused:
        return Check(
            "sandbox",
            True,
            "本机无法启动 Chromium 沙箱（没有可用的用户命名空间或 setuid 沙箱辅助程序）：浏览器将在沙箱外运行",
            "允许非特权用户命名空间，或安装 Chromium 的 setuid 沙箱辅助程序（chrome-sandbox）",
            warning=True,
        )
    return Check("sandbox", False, f"浏览器在沙箱中无法启动：{said}", "服务以沙箱启动浏览器；检查上面的浏览器问题")


# what to do about a data directory the disk refuses, by errno (else DATA_DIR_HINT)
_DISK_HINTS = {
    errno.ENOSPC: "数据目录所在的磁盘已满：释放空间（或用 CNKI_DATA_DIR 换到有空间的磁盘）",
    errno.EDQUOT: "磁盘配额已满：释放空间（或用 CNKI_DATA_DIR 换到有空间的磁盘）",
    errno.EROFS: "数据目录所在的文件系统只读：重新以可写方式挂载，或用 CNKI_DATA_DIR 指向可写的文件夹",
    errno.ENAMETOOLONG: "路径过长：用 CNKI_DATA_DIR 指向一个较短的路径",
}
DATA_DIR_HINT = "用 CNKI_DATA_DIR 指向一个当前用户可写的文件夹"


def check_data_dir(data_dir: Path, environ: Mapping[str, str] | None = None) -> Check:
    hint = DATA_DIR_HINT
    probe = data_dir / f".doctor-{secrets.token_hex(4)}"
    try:
        # inside the try: a path too long for the file system (ENAMETOOLONG) raised from exists()
        # and ended doctor in a traceback
        if data_dir.exists() and not data_dir.is_dir():
            return Check("data_dir", False, f"{data_dir} 不是文件夹", hint)
        if environ is not None:  # what the browser launch refuses (a non-UTF-8 locale, a Chinese path)
            datadir.check_browser_path_encoding(data_dir, environ, sys.getfilesystemencoding())
        datadir.ensure_root(data_dir)  # created 0700 like the server does (DESIGN.md "Data directory")
        datadir.check_entries(data_dir)  # what `serve` refuses at start (symlinks, a folder for the DB)
        probe.write_bytes(b"ok")
    except DataDirectoryUnusable as exc:
        cause = exc.__cause__
        if isinstance(cause, OSError):
            hint = _DISK_HINTS.get(cause.errno or 0, hint)
        if exc.details.get("reason") == "other_owner":
            hint = f"以 root 运行：chown -R {exc.details['chown_to']} '{data_dir}'（或用 CNKI_DATA_DIR 换一个数据目录）"
        return Check("data_dir", False, f"{data_dir}：{exc.code}: {exc.message}", hint)
    except OSError as exc:
        hint = _DISK_HINTS.get(exc.errno or 0, hint)
        return Check("data_dir", False, f"{data_dir} 不可写：{exc.strerror or exc}", hint)
    finally:
        # a write the full disk refused left the empty probe behind
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
    return Check("data_dir", True, f"{data_dir} 可写")


def check_data_dir_lock(data_dir: Path, writable: bool) -> Check:
    if not writable:
        return Check("data_dir_lock", False, "未检查：数据目录不可用", "先解决数据目录问题")
    from cnki_mcp.store.db import acquire_lock

    try:
        lock = acquire_lock(data_dir, 0.05)
    except DataDirectoryInUse as exc:  # normal while the user's AI client runs the server: a warning, not a failure
        return Check(
            "data_dir_lock",
            True,
            f"{exc.code}: 另一个 cnki-mcp 进程正在使用 {data_dir}",
            "若 AI 客户端正在运行 cnki-mcp，这是正常的；否则结束那个进程，或换一个 CNKI_DATA_DIR",
            warning=True,
        )
    except CnkiError as exc:  # not another process: the lock file cannot be made (another user's)
        return Check("data_dir_lock", False, f"{exc.code}: {exc.message}", "检查数据目录权限")
    except OSError as exc:
        return Check("data_dir_lock", False, f"无法创建锁文件：{exc.strerror or exc}", "检查数据目录权限")
    lock.release()
    return Check("data_dir_lock", True, "未被其他进程占用")


def check_browser_profile(data_dir: Path, hostname: str) -> Check:
    """The profile's SingletonLock naming another host (a crash on a machine since renamed, a
    container with a new hostname, a data directory another computer uses): the browser refuses
    to start in it (BROWSER_PROFILE_IN_USE), though a temporary profile starts fine."""
    from cnki_mcp.site.launch_error import SINGLETON_LOCK, foreign_profile_lock

    profile = data_dir / datadir.PROFILE_DIR
    other = foreign_profile_lock(profile, hostname)
    if other is None:
        return Check("browser_profile", True, "浏览器资料目录未被其他计算机锁定")
    lock = profile / SINGLETON_LOCK
    return Check(
        "browser_profile",
        False,
        f"浏览器资料目录被另一台计算机（{other[0]}，进程 {other[1]}）锁定：{lock}",
        f"如果那台计算机没有在用这个数据目录（例如换了主机名或容器后上次崩溃留下的锁），删除 {lock}",
    )


def check_store(data_dir: Path) -> Check:
    from cnki_mcp.store.db import DB_NAME, SCHEMA_VERSION

    path = data_dir / DB_NAME
    if not path.exists():
        return Check("store", True, "数据库尚未创建（首次使用时创建）")
    if path.is_symlink() or not path.is_file():
        return Check("store", False, f"{path} 不是普通文件", "移走它（数据目录检查说明了原因）")
    hint = "数据库损坏时，服务器启动会把它移到一旁并新建；也可手动移走该文件"
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error as exc:
        return Check("store", False, f"{path} 无法打开：{exc}", hint)
    try:
        check = conn.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            return Check("store", False, f"{path} 损坏：{check[0][0]}", hint)
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            return Check(
                "store", False, f"数据库版本 {version} 比本程序支持的 {SCHEMA_VERSION} 新", "升级 cnki-mcp"
            )
        counts = []
        for table in ("papers", "searches", "operations"):
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone():
                counts.append(f"{table}={conn.execute(f'SELECT COUNT(*) FROM {table}').fetchone()[0]}")
    except sqlite3.Error as exc:
        return Check("store", False, f"{path} 无法读取：{exc}", hint)
    finally:
        conn.close()
    # read above through a read-only connection: a file this user cannot write (another user's,
    # from a `sudo` run; immutable) read fine here while `serve` refused it (DATABASE_UNUSABLE)
    unwritable = [p.name for p in (path, *_sides(path)) if not os.access(p, os.W_OK)]
    if unwritable:
        return Check(
            "store",
            False,
            f"{path} 可读但不可写（{'、'.join(unwritable)}）：服务启动会以 DATABASE_UNUSABLE 结束",
            "恢复这些文件的写权限（例如它们属于另一个用户：用 chown 改回当前用户），或用 CNKI_DATA_DIR 换一个数据目录",
        )
    return Check("store", True, f"{path} 可读（版本 {version}，{' '.join(counts) or '空'}）")


def _sides(path: Path) -> list[Path]:
    """The database's -wal and -shm files that exist."""
    return [side for suffix in ("-wal", "-shm") if (side := path.with_name(path.name + suffix)).is_file()]


def check_versions() -> Check:
    parts = [f"python={sys.version.split()[0]}"]
    missing = []
    for name in PACKAGES:
        try:
            parts.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return Check("versions", False, "缺少依赖：" + ", ".join(missing), "重新安装 cnki-research-mcp")
    return Check("versions", True, " ".join(parts))


def check_path_command() -> Check:
    """Warn when the `cnki-mcp` on PATH belongs to another distribution (DESIGN.md §Distribution)."""
    from cnki_mcp.cli.path_owner import current_path_owner

    owner = current_path_owner()
    return Check("path_command", True, owner.detail, owner.hint, warning=not owner.ok)


# Opens the X display named in argv[1] with the X library the browser itself uses and closes it;
# Xlib prints why it was refused ("Authorization required, …", "Invalid MIT-MAGIC-COOKIE-1 key")
# on stderr. Exit 3: no X library to ask (the check then trusts DISPLAY, as the server's choice does).
_OPEN_X_DISPLAY = """import ctypes, sys
try:
    x = ctypes.CDLL("libX11.so.6")
except OSError:
    sys.exit(3)
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XCloseDisplay.argtypes = [ctypes.c_void_p]
d = x.XOpenDisplay(sys.argv[1].encode())
if not d:
    sys.exit(1)
x.XCloseDisplay(d)
"""
X_OPEN_SECONDS = 5.0


def x_display_refusal(display: str) -> str | None:
    """Why the X display `display` cannot be opened by this user (None: it opens, or no X library
    to ask). DISPLAY set to a display this user is not authorised for (another user's X server,
    a mismatched XAUTHORITY) was called OK while the server fell back to headless
    (site/browser.py, `NO_DISPLAY`). A separate process: Xlib writes to stderr and may hang on a
    forwarded display whose SSH tunnel is gone."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-c", _OPEN_X_DISPLAY, display],
            capture_output=True, text=True, errors="replace", timeout=X_OPEN_SECONDS, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"{X_OPEN_SECONDS:g} 秒内没有应答"
    except OSError:
        return None
    if done.returncode != 1:
        return None
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return said[-1][:200] if said else "无法打开"


def check_display(
    settings: Settings, *, platform: str, open_display: Callable[[str], str | None] = x_display_refusal
) -> Check:
    from cnki_mcp.site.locate import decide_headless, display_available

    has_display = display_available(platform, settings.display)
    headless = decide_headless(settings.headless, platform=platform, display=settings.display)
    x11 = platform not in {"darwin", "win32", "cygwin"}  # and an X display name: a Wayland socket has no ":"
    if has_display and not headless and x11 and settings.display and ":" in settings.display:
        refused = open_display(settings.display)
        if refused is not None:
            cause = f"DISPLAY={settings.display} 无法打开（{refused}）"
            hint = "检查 XAUTHORITY（X 授权）或 DISPLAY，或设置 CNKI_HEADLESS=1"
            if settings.headless is None:  # the server falls back to headless (site/browser.py)
                return Check("display", True, f"{cause}；浏览器将以无界面（headless）运行", hint, warning=True)
            return Check("display", False, f"{cause}，而 CNKI_HEADLESS=0 要求有界面的浏览器：浏览器无法启动（BROWSER_UNAVAILABLE）", hint)
    mode = "无界面（headless）" if headless else "有界面（窗口最小化）"
    detail = f"{'有' if has_display else '没有'}图形显示；浏览器将以{mode}运行"
    if not headless and not has_display:  # CNKI_HEADLESS=0 without a display: no browser can start
        return Check(
            "display",
            False,
            "没有图形显示，而 CNKI_HEADLESS=0 要求有界面的浏览器：浏览器无法启动（BROWSER_UNAVAILABLE）",
            "删除 CNKI_HEADLESS 或设为 1，或在有图形显示（DISPLAY / WAYLAND_DISPLAY）的环境中运行",
        )
    hint = "" if has_display else "无界面时知网更常要求人工验证；需要验证时请在有显示的环境下运行"
    return Check("display", True, detail, hint)


def run_checks(
    environ: Mapping[str, str],
    *,
    platform: str = sys.platform,
    probe: ProbeFn | None = None,
    sandbox_probe: SandboxProbeFn | None = None,
) -> list[Check]:
    settings_check, settings = check_settings(environ)
    found_check, browser_path = check_browser_found(settings, platform=platform, environ=environ)
    data_check = check_data_dir(settings.data_dir, environ)
    launch_check = check_browser_launch(browser_path, probe or _default_probe)
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    sandbox = sandbox_probe or _default_sandbox_probe
    sandbox_check = check_sandbox(settings, launch_check.ok, browser_path, sandbox, platform=platform, euid=euid)
    checks = [
        settings_check,
        found_check,
        launch_check,
        sandbox_check,
        data_check,
        check_data_dir_lock(settings.data_dir, data_check.ok),
        check_browser_profile(settings.data_dir, socket.gethostname()),
        check_store(settings.data_dir) if data_check.ok else Check("store", False, "未检查：数据目录不可用"),
        check_versions(),
        check_path_command(),
        check_display(settings, platform=platform),
        check_proxy(environ, settings, platform=platform),
    ]
    return checks


# --- output --------------------------------------------------------------------------


def format_line(check: Check) -> str:
    status = "FAIL" if not check.ok else "WARN" if check.warning else "OK  "
    line = f"{status}  {check.name:<15} {check.detail}"
    if check.hint:
        line += f"\n      提示：{check.hint}"
    return line


def report_json(checks: list[Check]) -> str:
    from cnki_mcp import __version__

    payload = {
        "ok": all(c.ok for c in checks),
        "version": __version__,
        "checks": [asdict(c) for c in checks],
    }
    return json.dumps(payload, ensure_ascii=False, indent=2)


def protocol_check(command: list[str], env: dict[str, str]) -> Check:
    """The MCP handshake against `command` (see the module docstring)."""
    from cnki_mcp.server.selfcheck import protocol_check as handshake

    report = handshake(command, env)
    return Check("protocol", report.ok, report.detail, report.hint)


def run_pages(folder: Path, as_json: bool) -> int:
    """`doctor --pages DIR`: one report per saved page; exit 1 when any page is refused."""
    from cnki_mcp.cli.parse_cmd import format_survey, survey_folder

    if not folder.is_dir():
        raise InvalidInput(f"{folder} 不是目录 / not a directory", field="pages")
    reports = survey_folder(folder)
    ok = bool(reports) and all(r.ok for r in reports)  # a folder without saved pages checks nothing
    if as_json:
        print(json.dumps({"ok": ok, "pages": [asdict(r) for r in reports]}, ensure_ascii=False, indent=2))
    else:
        for report in reports:
            print(format_survey(report))
        print(f"{sum(r.ok for r in reports)}/{len(reports)} 页解析成功 / pages parsed")
        if not reports:
            print("没有找到保存的页面（.html/.htm/.mhtml/.txt）/ no saved pages found")
    return 0 if ok else 1


def run(args: argparse.Namespace) -> int:
    if getattr(args, "pages", None):
        return run_pages(Path(args.pages), bool(args.json))
    checks = run_checks(os.environ)
    if getattr(args, "protocol", False):
        from cnki_mcp.cli.launcher import current_launcher

        checks.append(protocol_check(current_launcher().serve(), dict(os.environ)))
    if args.json:
        print(report_json(checks))
    else:
        for check in checks:
            print(format_line(check))
    return 0 if all(c.ok for c in checks) else 1
