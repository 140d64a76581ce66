"""`setup`'s browser list: each installed browser once, whether found through a symlink or
through its package's launcher script (Debian's /usr/bin/chromium for /usr/lib/chromium/chromium)."""

from __future__ import annotations

from collections.abc import Mapping

from cnki_mcp.cli.setup_cmd import browser_candidates

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/li"}


def _candidates(files: set[str], links: Mapping[str, str] | None = None) -> list[str]:
    resolved = dict(links or {})
    return browser_candidates(
        ENV, platform="linux", exists=files.__contains__, realpath=lambda p: resolved.get(p, p)
    )


def test_debians_chromium_launcher_script_and_its_binary_are_one_browser() -> None:
    assert _candidates({"/usr/bin/chromium", "/usr/lib/chromium/chromium"}) == ["/usr/bin/chromium"]


def test_google_chrome_through_alternatives_symlinks_and_its_binary_are_one_browser() -> None:
    script = "/opt/google/chrome/google-chrome"
    files = {"/usr/bin/google-chrome-stable", "/usr/bin/google-chrome", script, "/opt/google/chrome/chrome"}
    links = {"/usr/bin/google-chrome-stable": script, "/usr/bin/google-chrome": script}
    assert _candidates(files, links) == ["/usr/bin/google-chrome-stable"]


def test_different_browsers_are_all_listed_in_order_of_preference() -> None:
    files = {"/usr/bin/chromium", "/usr/lib/chromium/chromium", "/opt/microsoft/msedge/msedge", "/usr/bin/google-chrome"}
    assert _candidates(files) == ["/usr/bin/google-chrome", "/usr/bin/chromium", "/opt/microsoft/msedge/msedge"]
