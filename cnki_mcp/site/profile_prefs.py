"""The browser profile's files set before each launch (pure file I/O, no Playwright): in
`Default/Preferences` the last exit marked clean and Chromium's password manager off; the
temporary socket folder a killed browser left behind deleted (`clear_stale_singleton_folder`).

- After a kill Chrome marks the profile as crashed and offers "Restore pages?" in a bubble over
  the window the person is shown.
- The person types the CNKI password into this browser (the `login` tool's window). Chromium's
  password manager offered to save it there (a "Save password?" bubble over the login page, and
  the account name written into the profile's `Login Data` even when the offer was dismissed);
  Playwright starts Chromium with `--password-store=basic`, so a saved password would be kept
  under a key built into Chromium, readable by anyone who reads the profile (a backup, a copied
  data directory). Saving and offering are turned off; the account stays in CNKI's cookies only.
- A profile an earlier release used (the password manager still on) may hold a saved login: the
  password stores (`Login Data`, `Login Data For Account`) holding one are deleted before the
  launch (`forget_saved_logins`); Chromium creates them again, empty."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cnki_mcp.site.cookie_jar import atomic_write_private

# The two preferences Chromium reads for "offer to save passwords" (the current one and the
# profile-level one older versions and enterprise templates still name).
NO_PASSWORD_SAVING: dict[str, Any] = {"credentials_enable_service": False}
NO_PASSWORD_SAVING_PROFILE: dict[str, Any] = {"password_manager_enabled": False}


def prepared(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a Preferences document) with a clean last exit and no password saving."""
    out = dict(data)
    before = out.get("profile")
    profile = dict(before) if isinstance(before, dict) else {}
    if isinstance(before, dict) and (profile.get("exit_type") != "Normal" or not profile.get("exited_cleanly")):
        profile["exit_type"] = "Normal"
        profile["exited_cleanly"] = True
    profile.update(NO_PASSWORD_SAVING_PROFILE)
    out["profile"] = profile
    out.update(NO_PASSWORD_SAVING)
    return out


def prepare_preferences(default: Path) -> None:
    """Write `default/Preferences` as `prepared` says (created when the profile is new; left
    alone when it cannot be read as JSON: Chromium replaces a damaged file itself)."""
    prefs = default / "Preferences"
    try:
        data: Any = json.loads(prefs.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    wanted = prepared(data)
    if wanted != data:
        with contextlib.suppress(OSError):
            atomic_write_private(prefs, json.dumps(wanted))


# Chromium's password stores in `Default/` (the profile's, and the one of a signed-in Google
# account), and the files SQLite keeps beside a database.
LOGIN_STORES = ("Login Data", "Login Data For Account")
SQLITE_COMPANIONS = ("-journal", "-wal", "-shm")


def forget_saved_logins(default: Path) -> int:
    """Delete each of Chromium's password stores in `default` that holds a saved login (a
    password, or an account name Chromium wrote when the offer went unanswered), with its SQLite
    companions; the number of saved logins deleted. Chromium creates an empty store at launch,
    as for a new profile. A store that cannot be read (locked, damaged, not Chromium's) is left
    alone. Before, a password an earlier release let Chromium save stayed in the profile until
    `cnki-mcp logout` (review 9 finding 7). Call only while no browser runs on the profile."""
    deleted = 0
    for name in LOGIN_STORES:
        store = default / name
        if store.is_symlink() or not store.is_file():
            continue
        saved = _saved_logins(store)
        if not saved:
            continue
        try:
            for suffix in ("", *SQLITE_COMPANIONS):
                with contextlib.suppress(FileNotFoundError):
                    (default / (name + suffix)).unlink()
        except OSError:
            continue
        deleted += saved
    return deleted


def _saved_logins(store: Path) -> int:
    """How many rows of `logins` carry an account name or a password (0 when unreadable)."""
    try:
        conn = sqlite3.connect(store, timeout=0)
    except sqlite3.Error:
        return 0
    try:
        row = conn.execute(
            "SELECT count(*) FROM logins WHERE username_value <> '' OR length(password_value) > 0"
        ).fetchone()
    except sqlite3.Error:
        return 0
    finally:
        conn.close()
    return int(row[0]) if row else 0


# Chromium's process singleton (process_singleton_posix.cc) on Linux and macOS: at each start it
# makes a folder in the temporary directory holding its socket and a cookie, and links them from
# the profile (`SingletonSocket`, `SingletonCookie`; `SingletonLock` names `<host>-<pid>`). A clean
# exit deletes the folder; a browser killed (a crash, SIGKILL of a wedged one) leaves it, and the
# next start in the profile only replaces the links: the folder stays in /tmp for ever, one per
# browser death.
SINGLETON_ENTRIES = frozenset({"SingletonSocket", "SingletonCookie"})


def clear_stale_singleton_folder(profile: Path, hostname: str, alive: Callable[[int], bool]) -> Path | None:
    """Delete the temporary folder the profile's `SingletonSocket` link names, when the browser
    that made it is gone (its `SingletonLock` names this host and a pid `alive` says is not
    running) and the folder holds nothing but Chromium's singleton entries; the folder deleted,
    or None. Call only while no browser of this product runs on the profile (the profile lock)."""
    try:
        lock = os.readlink(profile / "SingletonLock")
        socket_link = Path(os.readlink(profile / "SingletonSocket"))
    except OSError:
        return None
    host, sep, pid = lock.rpartition("-")
    if not sep or host != hostname or not pid.isdigit() or alive(int(pid)):
        return None
    folder = socket_link.parent
    if socket_link.name != "SingletonSocket" or not folder.is_absolute() or folder.is_symlink():
        return None
    try:
        entries = list(folder.iterdir())
        if folder.stat().st_uid != os.geteuid() or any(e.name not in SINGLETON_ENTRIES for e in entries):
            return None
        for entry in entries:
            entry.unlink()
        folder.rmdir()
    except OSError:
        return None
    return folder


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (a zombie counts: its parent has not reaped it yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True
