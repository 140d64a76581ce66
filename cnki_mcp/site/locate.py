"""Where the user's Chrome / Edge / Chromium is installed, and the pure launch decisions
(headed or headless, a normal user agent). No Playwright and no real filesystem here: the
platform, the environment and an `exists` check are passed in, so every OS is testable."""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from cnki_mcp.errors import BrowserUnavailable

BrowserKind = Literal["chrome", "edge", "chromium"]


@dataclass(frozen=True, slots=True)
class BrowserCandidate:
    path: str
    kind: BrowserKind
    source: Literal["configured", "default"]
    found: bool = True


def _family(platform: str) -> Literal["mac", "windows", "linux"]:
    if platform == "darwin":
        return "mac"
    if platform in {"win32", "cygwin"}:
        return "windows"
    return "linux"  # linux, freebsd, ...: the XDG/FHS locations


def kind_of(path: str) -> BrowserKind:
    low = path.replace("\\", "/").lower()
    name = low.rsplit("/", 1)[-1]
    if "edge" in low or name.startswith("msedge"):
        return "edge"
    if "chromium" in low:
        return "chromium"
    return "chrome"


_MAC_APPS: tuple[tuple[str, BrowserKind], ...] = (
    ("Google Chrome.app/Contents/MacOS/Google Chrome", "chrome"),
    ("Microsoft Edge.app/Contents/MacOS/Microsoft Edge", "edge"),
    ("Chromium.app/Contents/MacOS/Chromium", "chromium"),
    ("Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing", "chrome"),
    ("Google Chrome Beta.app/Contents/MacOS/Google Chrome Beta", "chrome"),
    ("Microsoft Edge Beta.app/Contents/MacOS/Microsoft Edge Beta", "edge"),
)

# Relative to %PROGRAMFILES%, %PROGRAMFILES(X86)% and %LOCALAPPDATA% (per-user installs).
_WIN_RELATIVE: tuple[tuple[str, BrowserKind], ...] = (
    (r"Google\Chrome\Application\chrome.exe", "chrome"),
    (r"Microsoft\Edge\Application\msedge.exe", "edge"),
    (r"Chromium\Application\chrome.exe", "chromium"),
    (r"Google\Chrome Beta\Application\chrome.exe", "chrome"),
)

_LINUX_PATHS: tuple[tuple[str, BrowserKind], ...] = (
    ("/usr/bin/google-chrome-stable", "chrome"),
    ("/usr/bin/google-chrome", "chrome"),
    ("/opt/google/chrome/chrome", "chrome"),
    ("/usr/bin/chromium", "chromium"),
    ("/usr/bin/chromium-browser", "chromium"),
    ("/snap/bin/chromium", "chromium"),
    ("/usr/lib/chromium/chromium", "chromium"),
    ("/usr/bin/microsoft-edge-stable", "edge"),
    ("/usr/bin/microsoft-edge", "edge"),
    ("/opt/microsoft/msedge/msedge", "edge"),
    ("/var/lib/flatpak/exports/bin/com.google.Chrome", "chrome"),
    ("/var/lib/flatpak/exports/bin/org.chromium.Chromium", "chromium"),
)

_LINUX_NAMES: tuple[tuple[str, BrowserKind], ...] = (
    ("google-chrome-stable", "chrome"),
    ("google-chrome", "chrome"),
    ("chromium", "chromium"),
    ("chromium-browser", "chromium"),
    ("microsoft-edge-stable", "edge"),
    ("microsoft-edge", "edge"),
)


# Linux packages start their browser through a launcher shell script (not a symlink), and both
# the script and the binary it runs are usual locations: the same installed browser, found twice.
# Script (symlinks resolved) -> the binary it starts.
_LINUX_LAUNCHERS: dict[str, str] = {
    "/usr/bin/chromium": "/usr/lib/chromium/chromium",  # Debian's chromium package
    "/opt/google/chrome/google-chrome": "/opt/google/chrome/chrome",  # /usr/bin/google-chrome(-stable)
    "/opt/microsoft/msedge/microsoft-edge": "/opt/microsoft/msedge/msedge",  # /usr/bin/microsoft-edge(-stable)
}


def install_key(real_path: str) -> str:
    """One key per installed browser: `real_path` (a location with its symlinks resolved), or the
    binary a package's launcher script starts, so the script and the binary count once."""
    return _LINUX_LAUNCHERS.get(real_path, real_path)


def default_locations(platform: str, environ: Mapping[str, str]) -> list[tuple[str, BrowserKind]]:
    """Every usual install location for `platform`, in order of preference."""
    family = _family(platform)
    out: list[tuple[str, BrowserKind]] = []
    if family == "mac":
        roots = ["/Applications"]
        if environ.get("HOME"):
            roots.append(posixpath.join(environ["HOME"], "Applications"))
        for root in roots:
            out.extend((posixpath.join(root, rel), kind) for rel, kind in _MAC_APPS)
    elif family == "windows":
        roots = [
            environ.get("PROGRAMFILES") or r"C:\Program Files",
            environ.get("PROGRAMFILES(X86)") or r"C:\Program Files (x86)",
        ]
        if environ.get("LOCALAPPDATA"):
            roots.append(environ["LOCALAPPDATA"])
        for rel, kind in _WIN_RELATIVE:
            out.extend((ntpath.join(root, rel), kind) for root in roots)
    else:
        out.extend(_LINUX_PATHS)
        home = environ.get("HOME")
        if home:
            out.append((posixpath.join(home, ".local/share/flatpak/exports/bin/com.google.Chrome"), "chrome"))
        for directory in (environ.get("PATH") or "").split(":"):
            if directory:
                out.extend((posixpath.join(directory, name), kind) for name, kind in _LINUX_NAMES)
    seen: set[str] = set()
    unique: list[tuple[str, BrowserKind]] = []
    for path, kind in out:
        if path not in seen:
            seen.add(path)
            unique.append((path, kind))
    return unique


def program_path(path: str, platform: str) -> str:
    # A macOS user may point at the .app bundle instead of the binary inside it.
    if _family(platform) == "mac" and path.rstrip("/").endswith(".app"):
        bundle = path.rstrip("/")
        name = posixpath.basename(bundle)[: -len(".app")]
        return posixpath.join(bundle, "Contents", "MacOS", name)
    return path


def all_candidates(
    settings_browser_path: str | None,
    *,
    platform: str,
    environ: Mapping[str, str],
    exists: Callable[[str], bool],
) -> list[BrowserCandidate]:
    """Every location checked, with `found`, for `doctor` (the configured path first)."""
    out: list[BrowserCandidate] = []
    if settings_browser_path:
        path = program_path(settings_browser_path, platform)
        out.append(BrowserCandidate(path, kind_of(path), "configured", exists(path)))
    for path, kind in default_locations(platform, environ):
        out.append(BrowserCandidate(path, kind, "default", exists(path)))
    return out


def find_browser(
    settings_browser_path: str | None,
    *,
    platform: str,
    environ: Mapping[str, str],
    exists: Callable[[str], bool],
) -> BrowserCandidate | None:
    """The browser to drive: the configured one (which must exist), else the first usual
    location that exists, else None."""
    if settings_browser_path:
        path = program_path(settings_browser_path, platform)
        if not exists(path):
            raise BrowserUnavailable("CNKI_BROWSER_PATH 指向的浏览器不存在", path=settings_browser_path)
        return BrowserCandidate(path, kind_of(path), "configured")
    for path, kind in default_locations(platform, environ):
        if exists(path):
            return BrowserCandidate(path, kind, "default")
    return None


def display_available(platform: str, display: str | None) -> bool:
    """macOS and Windows always have a desktop; elsewhere an X11/Wayland display must be set."""
    if _family(platform) in {"mac", "windows"}:
        return True
    return bool(display)


def decide_headless(headless_setting: bool | None, *, platform: str, display: str | None) -> bool:
    """CNKI_HEADLESS=1|0 wins; unset means headed (minimised) when a display exists."""
    if headless_setting is not None:
        return headless_setting
    return not display_available(platform, display)


_UA_PLATFORM = {
    "mac": "Macintosh; Intel Mac OS X 10_15_7",
    "windows": "Windows NT 10.0; Win64; x64",
    "linux": "X11; Linux x86_64",
}

_VERSION = re.compile(r"(\d+)(?:\.\d+){0,3}")


def major_version(version: str) -> int | None:
    """Major version from '156.0.8078.114', 'HeadlessChrome/156.0...', 'Chromium 156.0.8078.114 built on ...'."""
    match = _VERSION.search(version)
    return int(match.group(1)) if match else None


def normal_user_agent(version: str, *, platform: str, kind: BrowserKind) -> str | None:
    """The reduced user agent the headed browser itself sends (minor versions are zeros in
    Chrome's reduced UA); never contains 'Headless'. None when the version is unknown."""
    major = major_version(version)
    if major is None:
        return None
    ua = (
        f"Mozilla/5.0 ({_UA_PLATFORM[_family(platform)]}) AppleWebKit/537.36 "
        f"(KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
    )
    if kind == "edge":
        ua += f" Edg/{major}.0.0.0"
    return ua
