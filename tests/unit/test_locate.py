"""Finding the user's browser on every OS with a fake filesystem, and the pure launch decisions."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import BrowserUnavailable
from cnki_mcp.site.locate import (
    all_candidates,
    decide_headless,
    find_browser,
    kind_of,
    major_version,
    normal_user_agent,
)

MAC_CHROME = "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"
MAC_EDGE = "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge"
MAC_USER_CHROMIUM = "/Users/li/Applications/Chromium.app/Contents/MacOS/Chromium"
WIN_ENV = {
    "PROGRAMFILES": r"C:\Program Files",
    "PROGRAMFILES(X86)": r"C:\Program Files (x86)",
    "LOCALAPPDATA": r"C:\Users\li\AppData\Local",
}


def fs(*paths: str):  # type: ignore[no-untyped-def]
    present = set(paths)
    return lambda p: p in present


@pytest.mark.parametrize(
    ("platform", "environ", "present", "expected_path", "expected_kind"),
    [
        ("darwin", {"HOME": "/Users/li"}, [MAC_CHROME, MAC_EDGE], MAC_CHROME, "chrome"),
        ("darwin", {"HOME": "/Users/li"}, [MAC_EDGE], MAC_EDGE, "edge"),
        ("darwin", {"HOME": "/Users/li"}, [MAC_USER_CHROMIUM], MAC_USER_CHROMIUM, "chromium"),
        (
            "win32",
            WIN_ENV,
            [r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe"],
            r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe",
            "edge",
        ),
        (
            "win32",
            WIN_ENV,
            [
                r"C:\Users\li\AppData\Local\Google\Chrome\Application\chrome.exe",
                r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe",
            ],
            r"C:\Users\li\AppData\Local\Google\Chrome\Application\chrome.exe",
            "chrome",
        ),
        (
            "win32",
            {},
            [r"C:\Program Files\Google\Chrome\Application\chrome.exe"],
            r"C:\Program Files\Google\Chrome\Application\chrome.exe",
            "chrome",
        ),
        (
            "win32",
            WIN_ENV,
            [r"C:\Users\li\AppData\Local\Chromium\Application\chrome.exe"],
            r"C:\Users\li\AppData\Local\Chromium\Application\chrome.exe",
            "chromium",
        ),
        (
            "linux",
            {},
            ["/usr/bin/chromium", "/usr/bin/google-chrome-stable"],
            "/usr/bin/google-chrome-stable",
            "chrome",
        ),
        ("linux", {}, ["/usr/bin/chromium-browser"], "/usr/bin/chromium-browser", "chromium"),
        ("linux", {}, ["/snap/bin/chromium"], "/snap/bin/chromium", "chromium"),
        ("linux", {}, ["/opt/google/chrome/chrome"], "/opt/google/chrome/chrome", "chrome"),
        ("linux", {}, ["/usr/bin/microsoft-edge-stable"], "/usr/bin/microsoft-edge-stable", "edge"),
        (
            "linux",
            {"PATH": "/home/li/bin:/usr/local/bin"},
            ["/usr/local/bin/chromium"],
            "/usr/local/bin/chromium",
            "chromium",
        ),
    ],
)
def test_find_browser_picks_the_usual_install_location(
    platform: str, environ: dict[str, str], present: list[str], expected_path: str, expected_kind: str
) -> None:
    found = find_browser(None, platform=platform, environ=environ, exists=fs(*present))
    assert found is not None
    assert (found.path, found.kind, found.source) == (expected_path, expected_kind, "default")


@pytest.mark.parametrize("platform", ["darwin", "win32", "linux"])
def test_find_browser_returns_none_when_nothing_is_installed(platform: str) -> None:
    assert (
        find_browser(None, platform=platform, environ=WIN_ENV | {"HOME": "/h", "PATH": "/bin"}, exists=fs())
        is None
    )


def test_configured_path_wins_over_installed_browsers() -> None:
    found = find_browser(
        "/opt/custom/msedge",
        platform="linux",
        environ={},
        exists=fs("/opt/custom/msedge", "/usr/bin/chromium"),
    )
    assert found is not None
    assert (found.path, found.kind, found.source) == ("/opt/custom/msedge", "edge", "configured")


def test_configured_path_that_does_not_exist_is_browser_unavailable() -> None:
    with pytest.raises(BrowserUnavailable) as info:
        find_browser("/nope/chrome", platform="linux", environ={}, exists=fs("/usr/bin/chromium"))
    assert info.value.code == "BROWSER_UNAVAILABLE"


def test_configured_mac_app_bundle_resolves_to_its_binary() -> None:
    found = find_browser(
        "/Applications/Google Chrome.app", platform="darwin", environ={}, exists=fs(MAC_CHROME)
    )
    assert found is not None and found.path == MAC_CHROME


def test_all_candidates_lists_every_location_with_found_flags() -> None:
    cands = all_candidates("/x/chrome", platform="linux", environ={}, exists=fs("/usr/bin/chromium"))
    assert cands[0].source == "configured" and cands[0].found is False
    by_path = {c.path: c for c in cands}
    assert by_path["/usr/bin/chromium"].found is True
    assert by_path["/usr/bin/google-chrome"].found is False
    assert len(by_path) == len(cands)  # no duplicates


def test_kind_of_recognises_edge_chromium_and_chrome() -> None:
    assert kind_of(r"C:\Program Files\Microsoft\Edge\Application\msedge.exe") == "edge"
    assert kind_of("/snap/bin/chromium") == "chromium"
    assert kind_of("/opt/google/chrome/chrome") == "chrome"


@pytest.mark.parametrize(
    ("setting", "platform", "display", "headless"),
    [
        (True, "linux", ":0", True),
        (True, "darwin", None, True),
        (False, "linux", None, False),
        (False, "linux", ":0", False),
        (None, "linux", ":0", False),
        (None, "linux", "wayland-0", False),
        (None, "linux", None, True),
        (None, "linux", "", True),
        (None, "darwin", None, False),
        (None, "win32", None, False),
    ],
)
def test_headless_follows_the_setting_else_the_platform_and_display(setting: bool | None, platform: str, display: str | None, headless: bool) -> None:
    assert decide_headless(setting, platform=platform, display=display) is headless


def test_normal_user_agent_has_no_headless_marker_and_reduced_version() -> None:
    ua = normal_user_agent("HeadlessChrome/156.0.8078.114", platform="linux", kind="chromium")
    assert ua == (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/156.0.0.0 Safari/537.36"
    )
    win_edge = normal_user_agent("156.0.3000.1", platform="win32", kind="edge")
    assert win_edge is not None
    assert "Windows NT 10.0; Win64; x64" in win_edge and win_edge.endswith("Edg/156.0.0.0")
    mac = normal_user_agent("Chromium 155.0.1 built on Debian", platform="darwin", kind="chrome")
    assert mac is not None and "Macintosh" in mac and "Chrome/155.0.0.0" in mac
    assert normal_user_agent("", platform="linux", kind="chrome") is None
    assert major_version("no digits") is None
