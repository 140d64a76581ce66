"""The browser profile's `Default/Preferences`, set before each launch (pure file I/O, no
Playwright): the last exit marked clean, and Chromium's password manager off.

- After a kill Chrome marks the profile as crashed and offers "Restore pages?" in a bubble over
  the window the person is shown.
- The person types the CNKI password into this browser (the `login` tool's window). Chromium's
  password manager offered to save it there (a "Save password?" bubble over the login page, and
  the account name written into the profile's `Login Data` even when the offer was dismissed);
  Playwright starts Chromium with `--password-store=basic`, so a saved password would be kept
  under a key built into Chromium, readable by anyone who reads the profile (a backup, a copied
  data directory). Saving and offering are turned off; the account stays in CNKI's cookies only."""

from __future__ import annotations

import contextlib
import json
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
