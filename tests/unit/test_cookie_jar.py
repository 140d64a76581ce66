"""The session-cookie file: only session cookies are kept, private and atomic, bad files ignored."""

from __future__ import annotations

import stat
from pathlib import Path

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
