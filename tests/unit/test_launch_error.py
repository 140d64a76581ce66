"""launch_error: a failed browser launch becomes a typed error that carries what the browser said
(Playwright's first line, "Target page, context or browser has been closed", names no cause)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from cnki_mcp.site.launch_error import launch_error

# The text Playwright 1.5x raised for /usr/bin/chromium started on a profile whose SingletonLock a
# crash on another host left behind (Chromium's stderr quoted under "Browser logs:").
OTHER_HOST = """BrowserType.launch_persistent_context: Target page, context or browser has been closed
Browser logs:

<launching> /usr/bin/chromium --disable-field-trial-config --headless --user-data-dir=/data/browser-profile --remote-debugging-pipe about:blank
<launched> pid=18446
[pid=18446][err] [18446:18446:1205/232626.188787:ERROR:chrome/browser/process_singleton_posix.cc:367] The profile appears to be in use by another Chromium process (17392) on another computer (otherbox). Chromium has locked the profile so that it doesn't get corrupted. If you are sure no other processes are using this profile, you can unlock the profile and relaunch Chromium.
[pid=18446][err] Error: Can't open display:
Call log:
  - <launching> /usr/bin/chromium --disable-field-trial-config
"""

EXITED = """BrowserType.launch_persistent_context: Target page, context or browser has been closed
Browser logs:

<launching> /opt/chrome/chrome --headless --user-data-dir=/data/browser-profile --remote-debugging-pipe about:blank
<launched> pid=18387
[pid=18387][err] chrome: error while loading shared libraries: libnss3.so: cannot open shared object file
Call log:
  - <launching> /opt/chrome/chrome --headless
"""


def test_a_profile_locked_on_another_host_is_profile_in_use_naming_the_lock_and_the_host(tmp_path: Path) -> None:
    error = launch_error(PlaywrightError(OTHER_HOST), profile=tmp_path / "browser-profile", launch_seconds=60)
    assert error.code == "BROWSER_PROFILE_IN_USE"
    assert error.details["reason"] == "locked_by_other_host"
    assert error.details["host"] == "otherbox" and error.details["pid"] == 17392
    assert error.details["lock_file"] == str(tmp_path / "browser-profile" / "SingletonLock")
    assert error.details["lock_file"] in error.message  # the person is told which file to remove


def test_a_browser_that_exits_at_start_carries_its_own_error_lines(tmp_path: Path) -> None:
    error = launch_error(PlaywrightError(EXITED), profile=tmp_path, launch_seconds=60)
    assert error.code == "BROWSER_UNAVAILABLE"
    assert error.details["browser_output"] == [
        "chrome: error while loading shared libraries: libnss3.so: cannot open shared object file"
    ]
    assert "libnss3.so" in error.message


def test_a_launch_that_never_finishes_is_browser_unavailable_launch_timeout(tmp_path: Path) -> None:
    text = "BrowserType.launch_persistent_context: Timeout 60000ms exceeded.\nCall log:\n  - <launching> x"
    error = launch_error(PlaywrightTimeout(text), profile=tmp_path, launch_seconds=60)
    assert error.code == "BROWSER_UNAVAILABLE"
    assert error.details["reason"] == "launch_timeout" and error.details["timeout_seconds"] == 60
