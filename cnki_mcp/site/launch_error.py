"""What a failed browser launch is, in the product's typed errors (site/browser.py launches).

Playwright reports every failed launch as "Target page, context or browser has been closed" on
its first line and quotes the browser's own stderr further down; the cause is there (a profile
locked by another computer, a missing library, a sandbox refusal), so the error carries it."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from cnki_mcp.errors import BrowserProfileInUse, BrowserUnavailable
from cnki_mcp.files import free_space

# Playwright's launch error quotes the browser's own stderr, one `[pid=N][err] …` line each.
_BROWSER_SAID = re.compile(r"^\[pid=\d+\]\[err\] (.*)$", re.MULTILINE)
# Chromium's process singleton (process_singleton_posix.cc) refusing a profile whose SingletonLock
# names another host: a crash left it there on a machine since renamed (or in a container that got
# a new hostname), or another computer uses the profile through a shared folder. Chromium never
# takes such a lock over by itself.
_OTHER_HOST = re.compile(r"in use by another \S+ process \((\d+)\) on another computer \(([^)]*)\)")
SINGLETON_LOCK = "SingletonLock"
# Below this free space on the temp directory's or the profile's disk the browser cannot work: with
# TMPDIR on a full disk every Network.loadNetworkResource body read fails ("Protocol error
# (IO.read): Read failed"); with the profile's disk full the browser dies under the next page.
TEMP_LOW_BYTES = 32 * 1024 * 1024
TEMP_DISK_FULL = "temp_disk_full"  # details.reason: the temp directory's disk is full
TEMP_PATH_TOO_LONG = "temp_path_too_long"  # details.reason: no room for Chromium's socket path
TEMP_UNWRITABLE = "temp_unwritable"  # details.reason: this user cannot write in the temp directory
BROWSER_DIED = "browser_died"  # details.reason: the browser died under the same request twice
NO_DISPLAY = "no_display"  # details.reason of a headed launch the display refused
LAUNCH_SECONDS = 60.0  # a browser that has not started by then never will (a hung launcher)


def launch_error(exc: Exception, *, profile: Path, launch_seconds: float) -> Exception:
    """The typed error for a failed launch, carrying what the browser itself said: Playwright's
    first line ("Target page, context or browser has been closed") names no cause."""
    text = str(exc)
    first = text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__
    said = [line.strip()[:300] for line in _BROWSER_SAID.findall(text) if line.strip()][-5:]
    other = _OTHER_HOST.search(text)
    if other is not None:
        lock = profile / SINGLETON_LOCK
        return BrowserProfileInUse(
            f"浏览器资料目录被另一台计算机（{other.group(2)}）上的浏览器锁定（{lock}）。如果那台计算机没有在用"
            f"这个数据目录（例如换了主机名或容器后，上次崩溃留下的锁），删除 {lock} 后重试；否则先关闭那边的 cnki-mcp",
            reason="locked_by_other_host",
            host=other.group(2),
            pid=int(other.group(1)),
            lock_file=str(lock),
        )
    if "ProcessSingleton" in text or "SingletonLock" in text or "profile is already in use" in text:
        return BrowserProfileInUse("浏览器资料目录正被另一个浏览器进程使用", reason=first, browser_output=said)
    if "XServer" in text or "Missing X server" in text or "$DISPLAY" in text:
        return BrowserUnavailable(
            "没有可用的显示，无法打开有界面的浏览器；可设置 CNKI_HEADLESS=1", reason=NO_DISPLAY, browser_output=said
        )
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    if isinstance(exc, PlaywrightTimeout):
        return BrowserUnavailable(
            f"浏览器在 {launch_seconds:g} 秒内没有启动完成；用 cnki-mcp doctor 检查 CNKI_BROWSER_PATH 指向的浏览器",
            reason="launch_timeout",
            timeout_seconds=launch_seconds,
            browser_output=said,
        )
    message = f"浏览器启动失败：{said[-1]}" if said else "浏览器启动失败"
    return BrowserUnavailable(message, reason=first, browser_output=said)


def browser_temp_dir(*, windows: bool | None = None) -> Path:
    """The browser's temp directory as Playwright's driver (Node's os.tmpdir) reads it: TMPDIR
    (else TMP, TEMP) and then /tmp on POSIX; TEMP, then TMP on Windows, where TMPDIR means nothing
    to it (a leftover TMPDIR refused launches that would have worked). Not tempfile.gettempdir():
    that one writes a probe file and, on a full or unwritable TMPDIR or /tmp, quietly falls back
    to another directory (/var/tmp)."""
    on_windows = os.name == "nt" if windows is None else windows
    for name in ("TEMP", "TMP") if on_windows else ("TMPDIR", "TMP", "TEMP"):
        if os.environ.get(name):
            return Path(os.environ[name])
    return Path(tempfile.gettempdir()) if on_windows else Path("/tmp")


# Chromium on Linux puts its singleton socket at <temp>/org.chromium.Chromium.XXXXXX/SingletonSocket
# (45 bytes after the temp path), and a socket path holds at most 107: a TMPDIR of 63 bytes or more
# and the browser does not start (measured with /usr/bin/chromium: 62 starts, 63 fails).
SOCKET_PATH_MAX = 107
SOCKET_TAIL = len("/org.chromium.Chromium.XXXXXX/SingletonSocket")


def temp_unusable(*, linux: bool | None = None) -> BrowserUnavailable | None:
    """BROWSER_UNAVAILABLE when the browser cannot use the temp directory: `temp_unwritable` when
    it is missing or this user cannot write in it (TMPDIR naming a folder gone or another user's,
    a /tmp without the sticky world-writable mode): every launch failed in Playwright's driver
    ("EACCES: permission denied, mkdtemp '/tmp/playwright-artifacts-…'"), told as 浏览器启动失败,
    and doctor sent the person to check the browser program; Python's own temp files had quietly
    moved elsewhere. `temp_path_too_long` on Linux when its path leaves no room for Chromium's
    socket path: the launch failed with an unrelated crashpad line."""
    folder = browser_temp_dir()
    if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK):
        on_linux = sys.platform.startswith("linux") if linux is None else linux
        # Chromium's socket directory comes from TMPDIR alone, else /tmp (TMP and TEMP, which
        # Playwright's driver also reads, do not move it): a long TEMP with no TMPDIR starts fine
        socket_dir = Path(os.environ.get("TMPDIR") or "/tmp")
        if on_linux and len(os.fsencode(str(socket_dir))) + SOCKET_TAIL > SOCKET_PATH_MAX:
            folder = socket_dir
            return BrowserUnavailable(
                f"浏览器无法启动：临时目录路径太长（{folder}，{len(os.fsencode(str(folder)))} 字节；Chromium 的套接字路径"
                f"最多 {SOCKET_PATH_MAX} 字节，临时目录须短于 {SOCKET_PATH_MAX - SOCKET_TAIL + 1} 字节）。把环境变量 TMPDIR "
                "指向路径较短的文件夹（例如 /tmp 或 ~/tmp）后重试",
                reason=TEMP_PATH_TOO_LONG, directory=str(folder),
            )  # fmt: skip
        return None
    state = "当前用户不可写" if folder.is_dir() else "不存在"
    return BrowserUnavailable(
        f"浏览器无法启动：临时目录 {folder} {state}。把环境变量 TMPDIR 指向当前用户可写的文件夹"
        "（例如 ~/tmp；在 AI 客户端配置的 env 中设置）后重试",
        reason=TEMP_UNWRITABLE, directory=str(folder),
    )  # fmt: skip


def short_of_disk(profile: Path | None = None) -> BrowserUnavailable | None:
    """BROWSER_UNAVAILABLE when the disk of the temp directory (TMPDIR: Chromium's scratch and
    response-stream files) or of the browser profile is (nearly) full, else None. With either full
    the browser fails under every page (a stream read refused, or the browser dying), which read
    as CNKI being down (SITE_UNAVAILABLE, 知网暂时不可用)."""
    places = [(browser_temp_dir(), TEMP_DISK_FULL, "临时目录", "或把环境变量 TMPDIR 指向有空间的目录")]
    if profile is not None:
        places.append((profile, "disk_full", "浏览器资料目录", ""))
    for folder, reason, what, other in places:
        free = free_space(folder)
        if free is not None and free < TEMP_LOW_BYTES:
            return BrowserUnavailable(
                f"浏览器无法工作：{what} {folder} 所在磁盘已满（剩余 {free // 1024} KB）。释放空间{other}后重试",
                reason=reason, directory=str(folder), free_bytes=free,
            )  # fmt: skip
    return None


def browser_lost(exc: BaseException, profile: Path | None = None) -> BrowserUnavailable:
    """BROWSER_UNAVAILABLE for a browser that died under a request, was relaunched and died under
    it again: the browser failed, not CNKI (it was SITE_UNAVAILABLE, 知网暂时不可用). A full disk
    is the usual cause, and is said when it is one."""
    said = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    full = short_of_disk(profile)
    if full is not None:
        full.details["browser_output"] = [said]
        return full
    return BrowserUnavailable(
        "浏览器重启后再次崩溃，请求没有发出；用 cnki-mcp doctor 检查浏览器后重试",
        reason=BROWSER_DIED, browser_output=[said],
    )  # fmt: skip


# Chromium's words when its sandbox cannot start: no user namespaces and no setuid helper
# (zygote_host_impl_linux.cc "No usable sandbox!"), a setuid helper installed without root
# ownership, a kernel or policy (AppArmor) refusing the namespace.
_SANDBOX_REFUSALS = ("No usable sandbox", "SUID sandbox", "setuid sandbox", "Failed to move to new namespace",
                     "sandbox_host_linux", "credentials.cc")


# Whether the browser runs inside Chromium's sandbox (BrowserHost.status, diagnostics, doctor):
# "on", else why not
SANDBOX_ON = "on"
SANDBOX_OFF_ARGS = "off_browser_args"  # --no-sandbox in CNKI_BROWSER_ARGS
SANDBOX_OFF_ROOT = "off_root"  # root on Linux
SANDBOX_OFF_UNSUPPORTED = "off_unsupported"  # this machine refused it (no user namespaces, no setuid helper)


def sandbox_state(platform: str, euid: int | None, args: tuple[str, ...] | list[str]) -> str:
    """Whether the browser should run inside Chromium's sandbox (SANDBOX_ON): always, except as
    root on Linux (Chromium refuses to start sandboxed as root) or when the person passed
    --no-sandbox in CNKI_BROWSER_ARGS. The browser holds the CNKI login and renders whatever the
    site serves, third-party scripts included; Playwright turns the sandbox off unless asked."""
    if "--no-sandbox" in args:
        return SANDBOX_OFF_ARGS
    return SANDBOX_OFF_ROOT if platform.startswith("linux") and euid == 0 else SANDBOX_ON


def sandbox_wanted(platform: str, euid: int | None, args: tuple[str, ...] | list[str]) -> bool:
    return sandbox_state(platform, euid, args) == SANDBOX_ON


def is_sandbox_refusal(exc: Exception) -> bool:
    """A launch that failed because the sandbox could not start (the browser runs without it)."""
    text = str(exc)
    return any(words in text for words in _SANDBOX_REFUSALS)


def foreign_profile_lock(profile: Path, hostname: str) -> tuple[str, int] | None:
    """(host, pid) when the profile's SingletonLock (a symlink `<host>-<pid>`) names another host
    than `hostname`: Chromium refuses such a profile until the lock is removed. None otherwise
    (no lock, this host's lock, which Chromium takes over when its process is gone)."""
    try:
        target = os.readlink(profile / SINGLETON_LOCK)
    except OSError:
        return None
    host, sep, pid = target.rpartition("-")
    if not sep or not pid.isdigit() or host == hostname:
        return None
    return host, int(pid)
