"""The browser profile's preferences before a launch (site/profile_prefs.py): Chromium's password
manager off, a crashed last exit marked clean, everything else as Chromium wrote it."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import stat
from pathlib import Path

import pytest

from cnki_mcp.site.profile_prefs import (
    clear_stale_singleton_folder,
    forget_saved_logins,
    pid_alive,
    prepare_preferences,
    prepared,
)


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


def _killed_browser_left(tmp_path: Path, lock: str, extra: str | None = None) -> tuple[Path, Path]:
    """A profile whose browser was killed: its links, and the socket folder it made in the
    temporary directory (as process_singleton_posix.cc lays them out)."""
    profile, folder = tmp_path / "browser-profile", tmp_path / "tmp" / "org.chromium.Chromium.aB3dE9"
    profile.mkdir()
    folder.mkdir(parents=True)
    (folder / "SingletonSocket").write_bytes(b"")
    (folder / "SingletonCookie").symlink_to("1234567890")
    if extra:
        (folder / extra).write_text("not Chromium's")
    (profile / "SingletonLock").symlink_to(lock)
    (profile / "SingletonSocket").symlink_to(folder / "SingletonSocket")
    (profile / "SingletonCookie").symlink_to(folder / "SingletonCookie")
    return profile, folder


@pytest.mark.parametrize(
    ("lock", "running", "extra", "deleted"),
    [
        ("thishost-4242", False, None, True),  # the browser that made it is gone
        ("thishost-4242", True, None, False),  # still running
        ("otherhost-4242", False, None, False),  # another computer's browser (a shared folder)
        ("thishost-4242", False, "notes.txt", False),  # not only Chromium's entries
    ],
)
def test_the_socket_folder_a_killed_browser_left_in_tmp_is_deleted_before_the_next_launch(
    tmp_path: Path, lock: str, running: bool, extra: str | None, deleted: bool
) -> None:
    # every browser crash (and every SIGKILL of a wedged one) left an org.chromium.Chromium.*
    # folder in /tmp for ever: Chromium's next start in the profile only replaces the links
    profile, folder = _killed_browser_left(tmp_path, lock, extra)
    asked: list[int] = []

    def alive(pid: int) -> bool:
        asked.append(pid)
        return running

    got = clear_stale_singleton_folder(profile, "thishost", alive)
    assert (got == folder) is deleted
    assert folder.exists() is not deleted
    assert asked == ([4242] if lock.startswith("thishost") else [])


def test_a_profile_without_singleton_links_or_with_odd_ones_is_left_alone(tmp_path: Path) -> None:
    assert clear_stale_singleton_folder(tmp_path, "thishost", lambda _pid: False) is None
    (tmp_path / "SingletonLock").symlink_to("thishost-4242")
    (tmp_path / "SingletonSocket").symlink_to("relative/SingletonSocket")
    assert clear_stale_singleton_folder(tmp_path, "thishost", lambda _pid: False) is None


def test_a_pid_is_alive_while_its_process_exists() -> None:
    import os

    assert pid_alive(os.getpid())
    assert not pid_alive(2**22 + 1)  # above Linux's pid_max


@pytest.mark.parametrize("when", ["before_a_launch", "at_close"])
def test_the_browser_host_deletes_what_its_killed_browser_left_in_tmp(tmp_path: Path, when: str) -> None:
    """Measured: three browser crashes in one session left three org.chromium.Chromium.* folders
    in /tmp; the host now deletes the last one before its next launch, and at close."""
    import asyncio
    import socket

    from cnki_mcp.clock import FakeClock
    from cnki_mcp.settings import Settings
    from cnki_mcp.site.browser import PROFILE_DIR, BrowserHost

    host = BrowserHost(Settings(data_dir=tmp_path / "data", headless=True), FakeClock())
    (tmp_path / "data").mkdir(mode=0o700)
    gone = f"{socket.gethostname()}-{2**22 + 1}"  # a pid above Linux's pid_max: no such process
    profile, folder = _killed_browser_left(tmp_path, gone)
    profile.rename(tmp_path / "data" / PROFILE_DIR)
    if when == "before_a_launch":
        host._prepare_profile()
    else:
        host._acquire_profile_lock()
        asyncio.run(host.close())
    assert not folder.exists()
