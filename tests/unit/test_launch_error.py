"""launch_error: a failed browser launch becomes a typed error that carries what the browser said
(Playwright's first line, "Target page, context or browser has been closed", names no cause)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from cnki_mcp.clock import FakeClock
from cnki_mcp.settings import Settings
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.launch_error import launch_error
from cnki_mcp.site.locate import BrowserCandidate

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


# --- the browser's sandbox -------------------------------------------------------------

NO_SANDBOX = """BrowserType.launch_persistent_context: Target page, context or browser has been closed
Browser logs:

<launching> /usr/bin/chromium --headless --user-data-dir=/data/browser-profile --remote-debugging-pipe about:blank
<launched> pid=2001
[pid=2001][err] [2001:2001:1206/020000.000000:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! Update your kernel or see https://chromium.googlesource.com/chromium/src/+/main/docs/linux/suid_sandbox_development.md for more information on developing with the SUID sandbox.
"""


class _Chromium:
    """Playwright's chromium launcher on a machine that cannot sandbox the browser (no user
    namespaces, no setuid helper), or, with `sandbox_works`, on one that can."""

    def __init__(self, *, sandbox_works: bool) -> None:
        self.sandbox_works = sandbox_works
        self.sandboxed: list[bool] = []

    async def launch_persistent_context(self, user_data_dir: str, **options: object) -> str:
        self.sandboxed.append(bool(options["chromium_sandbox"]))
        if options["chromium_sandbox"] and not self.sandbox_works:
            raise PlaywrightError(NO_SANDBOX)
        return "context"


@pytest.mark.parametrize(
    ("euid", "args", "sandbox_works", "launches", "shown"),
    [
        (1000, (), True, [True], "on"),  # a person's account: the browser runs sandboxed
        # no usable sandbox here: without it, rather than not at all
        (1000, (), False, [True, False], "off_unsupported"),
        (0, (), True, [False], "off_root"),  # root: Chromium refuses to start sandboxed
        (1000, ("--no-sandbox",), True, [False], "off_browser_args"),
    ],
)
async def test_the_browser_runs_sandboxed_unless_it_cannot_and_its_status_says_which(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    euid: int,
    args: tuple[str, ...],
    sandbox_works: bool,
    launches: list[bool],
    shown: str,
) -> None:
    """The browser holds the CNKI login and renders whatever the site serves; Playwright turns
    Chromium's sandbox off unless asked, so it ran without one for every user, root or not. The
    status (diagnostics `browser.sandbox`) says whether it runs sandboxed: the only trace of a
    machine that refused was a log line quoting Playwright's "Target page ... has been closed"."""
    monkeypatch.setattr(os, "geteuid", lambda: euid, raising=False)
    settings = Settings(data_dir=tmp_path, headless=True, extra_browser_args=args)
    host = BrowserHost(settings, FakeClock(), platform="linux")
    chromium = _Chromium(sandbox_works=sandbox_works)
    host._pw = SimpleNamespace(chromium=chromium)  # type: ignore[assignment]
    candidate = BrowserCandidate(path="/usr/bin/chromium", kind="chromium", source="default")
    assert await host._launch_context(candidate, True, None) == "context"  # type: ignore[comparison-overlap]
    assert chromium.sandboxed == launches
    assert host.status()["sandbox"] == shown


def test_no_sandbox_in_the_browser_arguments_is_respected() -> None:
    from cnki_mcp.site.launch_error import sandbox_wanted

    assert sandbox_wanted("linux", 1000, ("--no-sandbox",)) is False
    assert sandbox_wanted("win32", None, ()) is True and sandbox_wanted("darwin", 501, ()) is True


class _DeadDriver:
    """Playwright's start when its Node driver exits at once (no home directory for Node)."""

    async def start(self) -> None:
        raise Exception("Connection closed while reading from the driver")


async def test_a_driver_that_dies_at_start_is_browser_unavailable_not_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With HOME unset and a UID the password database does not know, Node exits at its first
    line (uv_os_homedir ENOENT) and Playwright raises a bare Exception: every browser tool answered
    INTERNAL and doctor ended in a traceback."""
    import playwright.async_api

    from cnki_mcp.errors import BrowserUnavailable
    from cnki_mcp.site.probe import probe_browser_async

    monkeypatch.setattr(playwright.async_api, "async_playwright", lambda: _DeadDriver())
    settings = Settings(data_dir=tmp_path / "data", browser_path="/usr/bin/chromium", headless=True)
    host = BrowserHost(settings, FakeClock(), exists=lambda _p: True)
    with pytest.raises(BrowserUnavailable) as info:
        await host.ensure()
    assert info.value.details["reason"] == "driver_failed"
    await host.close()
    probed = await probe_browser_async("/usr/bin/chromium")
    assert not probed.ok and probed.error


@pytest.mark.parametrize(
    ("full", "reason"), [("temp", "temp_disk_full"), ("profile", "disk_full"), (None, None)]
)
def test_a_full_temp_or_profile_disk_is_named_as_what_stops_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full: str | None, reason: str | None
) -> None:
    """With TMPDIR's disk full every body read of the page loader fails; with the profile's the
    browser dies under the next page. Both read as CNKI being down (SITE_UNAVAILABLE)."""
    from cnki_mcp.site import launch_error as module

    temp, profile = tmp_path / "tmp", tmp_path / "browser-profile"
    monkeypatch.setenv("TMPDIR", str(temp))
    free = {"temp": temp, "profile": profile}.get(full or "")
    monkeypatch.setattr(module, "free_space", lambda folder: 0 if folder == free else 10 * 1024**3)
    error = module.short_of_disk(profile)
    assert (error and error.details["reason"]) == reason
    if error is not None:
        assert error.code == "BROWSER_UNAVAILABLE" and error.details["directory"] == str(free)


def test_the_browsers_temp_directory_is_tmpdir_even_where_python_would_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tempfile.gettempdir() probes TMPDIR with a file and, on a full disk, quietly picks another
    directory; the browser still writes to TMPDIR."""
    from cnki_mcp.site.launch_error import browser_temp_dir

    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("TMPDIR", str(missing))
    assert browser_temp_dir() == missing


@pytest.mark.parametrize("place", ["missing", "unwritable"])
async def test_a_temp_directory_this_user_cannot_write_stops_the_launch_saying_set_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: str
) -> None:
    """TMPDIR naming a folder gone or another user's (or a /tmp this account cannot write): every
    launch failed in Playwright's driver ("EACCES: permission denied, mkdtemp
    '/tmp/playwright-artifacts-…'"), told as 浏览器启动失败 with no cause, while Python's own temp
    files had quietly moved to /var/tmp. Refused before the driver starts, naming TMPDIR."""
    from cnki_mcp.errors import BrowserUnavailable
    from cnki_mcp.site.probe import probe_browser_async

    temp = tmp_path / "tmp"
    if place == "unwritable":
        temp.mkdir()
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, m: False if Path(p) == temp else real_access(p, m))
    monkeypatch.setenv("TMPDIR", str(temp))
    started: list[bool] = []

    async def driver() -> None:
        started.append(True)
        raise BrowserUnavailable(reason="driver_failed")

    monkeypatch.setattr("cnki_mcp.site.browser.start_driver", driver)
    settings = Settings(data_dir=tmp_path / "data", browser_path="/usr/bin/chromium", headless=True)
    host = BrowserHost(settings, FakeClock(), exists=lambda _p: True)
    with pytest.raises(BrowserUnavailable) as info:
        await host.ensure()
    assert info.value.details["reason"] == "temp_unwritable"
    assert info.value.details["directory"] == str(temp) and not started
    await host.close()
    probed = await probe_browser_async("/usr/bin/chromium")
    assert not probed.ok and probed.error == info.value.message


def test_without_tmpdir_the_browsers_temp_directory_is_tmp_on_posix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node (Playwright's driver) and Chromium use /tmp when no TMPDIR is set; Python's
    tempfile.gettempdir() moves to /var/tmp when /tmp is not writable."""
    from cnki_mcp.site.launch_error import browser_temp_dir

    for name in ("TMPDIR", "TMP", "TEMP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("tempfile.gettempdir", lambda: "/var/tmp")
    assert browser_temp_dir() == (Path("/tmp") if os.name == "posix" else Path("/var/tmp"))


def test_on_windows_the_browsers_temp_directory_is_temp_whatever_tmpdir_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node reads TEMP, then TMP there, never TMPDIR: a leftover TMPDIR naming a folder gone
    refused a launch that would have worked."""
    from cnki_mcp.site.launch_error import browser_temp_dir

    monkeypatch.setenv("TMPDIR", "/gone")
    monkeypatch.setenv("TMP", "C:/Users/x/AppData/Local/Temp2")
    monkeypatch.setenv("TEMP", "C:/Users/x/AppData/Local/Temp")
    assert browser_temp_dir(windows=True) == Path("C:/Users/x/AppData/Local/Temp")
    monkeypatch.delenv("TEMP")
    assert browser_temp_dir(windows=True) == Path("C:/Users/x/AppData/Local/Temp2")
    assert browser_temp_dir(windows=False) == Path("/gone")


def test_the_tests_see_room_on_every_disk_whatever_the_machine_has_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/conftest.py `disks_with_room`: a CI machine with 10 MB left in /tmp does not turn the
    browser tests' dead browsers into temp_disk_full or their failed downloads into no_space."""
    import shutil

    from cnki_mcp.site import downloading
    from cnki_mcp.site.launch_error import short_of_disk

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: type(usage)(usage.total, usage.total, 10 * 1024**2))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert short_of_disk(tmp_path / "browser-profile") is None
    assert downloading.free_space(tmp_path) >= 1024**3


@pytest.mark.parametrize(("length", "refused"), [(62, False), (63, True)])
def test_a_temp_directory_too_long_for_chromiums_socket_is_refused_naming_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int, refused: bool
) -> None:
    """A TMPDIR of 63 bytes or more leaves no room for Chromium's singleton socket path (107 bytes
    at most): the browser did not start and the launch error quoted an unrelated crashpad line
    (/usr/bin/chromium: 62 bytes starts, 63 fails)."""
    from cnki_mcp.site.launch_error import temp_unusable

    base = Path(tempfile.mkdtemp(prefix="c", dir="/tmp"))  # tmp_path itself may be longer than 62 bytes
    folder = base / ("x" * (length - len(str(base)) - 1))
    folder.mkdir()
    try:
        monkeypatch.setenv("TMPDIR", str(folder))
        assert len(str(folder)) == length
        error = temp_unusable(linux=True)
        assert (error is not None and error.details["reason"] == "temp_path_too_long") is refused
        assert temp_unusable(linux=False) is None  # other systems put their socket elsewhere
        # TMP and TEMP move Playwright's files, not Chromium's socket: without TMPDIR it is /tmp
        monkeypatch.delenv("TMPDIR")
        monkeypatch.setenv("TMP", str(folder))
        monkeypatch.setenv("TEMP", str(folder))
        assert temp_unusable(linux=True) is None
    finally:
        shutil.rmtree(base, ignore_errors=True)
