"""The browser profile's preferences before a launch (site/profile_prefs.py): Chromium's password
manager off, a crashed last exit marked clean, everything else as Chromium wrote it."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import stat
from pathlib import Path

from cnki_mcp.site.profile_prefs import forget_saved_logins, prepare_preferences, prepared


def test_a_new_profile_gets_preferences_without_password_saving(tmp_path: Path) -> None:
    prepare_preferences(tmp_path)
    data = json.loads((tmp_path / "Preferences").read_text(encoding="utf-8"))
    assert data["credentials_enable_service"] is False
    assert data["profile"]["password_manager_enabled"] is False
    assert "exit_type" not in data["profile"]  # no exit to mark yet
    assert stat.S_IMODE((tmp_path / "Preferences").stat().st_mode) == 0o600


def test_a_crashed_profile_is_marked_clean_and_keeps_what_chromium_wrote() -> None:
    chromium = {
        "profile": {"exit_type": "Crashed", "exited_cleanly": False, "name": "Person 1"},
        "credentials_enable_service": True,  # a person who turned saving on in settings
        "download": {"directory_upgrade": True},
    }
    out = prepared(chromium)
    assert out["profile"] == {
        "exit_type": "Normal", "exited_cleanly": True, "name": "Person 1", "password_manager_enabled": False,
    }  # fmt: skip
    assert out["credentials_enable_service"] is False
    assert out["download"] == {"directory_upgrade": True}
    assert prepared(out) == out  # nothing left to change: the file is not rewritten


def test_a_damaged_preferences_file_is_left_to_chromium(tmp_path: Path) -> None:
    (tmp_path / "Preferences").write_text("{not json", encoding="utf-8")
    prepare_preferences(tmp_path)
    assert (tmp_path / "Preferences").read_text(encoding="utf-8") == "{not json"


def _store(path: Path, *logins: tuple[str, str, bytes]) -> None:
    """A password store as Chromium writes it (its `logins` columns that matter here)."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TABLE logins (origin_url VARCHAR NOT NULL, username_value VARCHAR, password_value BLOB,"
            " signon_realm VARCHAR NOT NULL, blacklisted_by_user INTEGER NOT NULL)"
        )
        conn.executemany(
            "INSERT INTO logins VALUES (?, ?, ?, ?, ?)",
            [(origin, user, password, origin, int(not user and not password)) for origin, user, password in logins],
        )


def test_a_password_an_earlier_release_let_chromium_save_is_deleted_before_the_launch(tmp_path: Path) -> None:
    # review 9 finding 7: turning saving off kept what an earlier release's profile had saved
    # (under --password-store=basic, a key built into Chromium) until `cnki-mcp logout`.
    _store(tmp_path / "Login Data", ("https://login.cnki.net/", "reader01", b"v10\x01s3cret"))
    _store(tmp_path / "Login Data For Account", ("https://login.cnki.net/", "reader01", b""))
    (tmp_path / "Login Data-journal").write_bytes(b"")
    (tmp_path / "Cookies").write_bytes(b"kept")
    assert forget_saved_logins(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Cookies"]
    assert forget_saved_logins(tmp_path) == 0


def test_a_store_without_a_saved_login_or_that_cannot_be_read_is_left_alone(tmp_path: Path) -> None:
    _store(tmp_path / "Login Data", ("https://login.cnki.net/", "", b""))  # a "never for this site" entry
    (tmp_path / "Login Data For Account").write_bytes(b"not a database")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _store(elsewhere / "Login Data", ("https://login.cnki.net/", "reader01", b"x"))
    profile = tmp_path / "Default"
    profile.mkdir()
    (profile / "Login Data").symlink_to(elsewhere / "Login Data")
    assert forget_saved_logins(tmp_path) == 0 and forget_saved_logins(profile) == 0
    assert (tmp_path / "Login Data").is_file() and (tmp_path / "Login Data For Account").is_file()
    assert (elsewhere / "Login Data").is_file() and (profile / "Login Data").is_symlink()
