"""The session-cookie file: only session cookies are kept, private and atomic, bad files ignored."""

from __future__ import annotations

import errno
import stat
from pathlib import Path

import pytest

from cnki_mcp.site.cookie_jar import atomic_write_private, load_session_cookies, session_payload


def test_only_session_cookies_are_saved_and_loaded_back(tmp_path: Path) -> None:
    cookies = [
        {
            "name": "sid",
            "value": "v1",
            "domain": ".cnki.net",
            "path": "/",
            "expires": -1,
            "partitionKey": "x",
        },
        {"name": "keep", "value": "v2", "domain": ".cnki.net", "path": "/", "expires": 1_900_000_000},
    ]
    text, count = session_payload(cookies)
    assert count == 1
    path = tmp_path / "session-cookies.json"
    atomic_write_private(path, text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_session_cookies(path) == [
        {"name": "sid", "value": "v1", "domain": ".cnki.net", "path": "/", "expires": -1}
    ]
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_missing_or_corrupt_cookie_file_restores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "session-cookies.json"
    assert load_session_cookies(path) == []
    path.write_text("{not json", encoding="utf-8")
    assert load_session_cookies(path) == []
    path.write_text('{"cookies": [{"value": "no name"}, 3]}', encoding="utf-8")
    assert load_session_cookies(path) == []


class _Context:
    """A browser context holding one session cookie."""

    def __init__(self, value: str) -> None:
        self.value = value

    async def cookies(self) -> list[dict[str, object]]:
        return [{"name": "sid", "value": self.value, "domain": ".cnki.net", "path": "/", "expires": -1}]


async def test_a_cookie_file_the_disk_refuses_is_not_an_error_and_is_written_once_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk full (or read-only, or the data directory gone) when the session cookies are
    saved: the OSError ended a login the person had just completed as INTERNAL, and the
    DATA_DIRECTORY_UNUSABLE ended the autosave for good. The session lives on in the browser; the
    next save writes the file."""
    from cnki_mcp.clock import FakeClock
    from cnki_mcp.errors import DataDirectoryUnusable
    from cnki_mcp.settings import Settings
    from cnki_mcp.site import browser

    host = browser.BrowserHost(Settings(data_dir=tmp_path / "data", headless=True), FakeClock())
    host._context = _Context("v1")  # type: ignore[assignment]
    refusals: list[BaseException] = [
        OSError(errno.ENOSPC, "No space left on device"),
        DataDirectoryUnusable(reason="read_only"),
    ]

    def refused(path: Path, data: str) -> None:
        raise refusals.pop(0)

    with monkeypatch.context() as patch:
        patch.setattr(browser, "atomic_write_private", refused)
        assert await host.save_cookies() == 0
        assert await host.save_cookies() == 0
    assert not host.cookies_path.exists()
    assert await host.save_cookies() == 1  # room again: the same cookies are written
    assert load_session_cookies(host.cookies_path)[0]["value"] == "v1"
