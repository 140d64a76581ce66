"""The browser's environment when the host is given none (the in-process test stacks, an embedder):
Chrome's own files stay out of HOME as in the product, which passes `os.environ`."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.settings import Settings
from cnki_mcp.site.browser import CONFIG_HOME_DIR, PROFILE_DIR, BrowserHost


@pytest.mark.parametrize("headless", [True, False])
def test_a_host_given_no_environment_still_keeps_chromes_files_out_of_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, headless: bool
) -> None:
    """Measured: each run of the suite left a renderer's crash dump in the developer's
    ~/.config/chromium/Crash Reports (134 of them on one machine) and GLib's ~/.cache/dconf/user:
    the host built without `environ` launched the browser with the test process's environment
    as it was, so CHROME_CONFIG_HOME pointed nowhere."""
    monkeypatch.delenv("CHROME_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GSETTINGS_BACKEND", raising=False)
    monkeypatch.setenv("CNKI_PROBE_VARIABLE", "kept")
    host = BrowserHost(Settings(data_dir=tmp_path / "data", headless=headless), FakeClock())
    env = host._launch_env(headless)
    assert env is not None
    assert env["CHROME_CONFIG_HOME"] == str(tmp_path / "data" / PROFILE_DIR / CONFIG_HOME_DIR)
    assert env.get("GSETTINGS_BACKEND") == ("memory" if headless else None)
    assert env["CNKI_PROBE_VARIABLE"] == "kept"  # the rest is the process's own environment
