"""The browser profile's preferences before a launch (site/profile_prefs.py): Chromium's password
manager off, a crashed last exit marked clean, everything else as Chromium wrote it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from cnki_mcp.site.profile_prefs import prepare_preferences, prepared


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
