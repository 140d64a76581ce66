"""BrowserHost against a real Chromium: lazy start, profile lock, session cookies across a
restart, popup tracking, recovery from a dead browser, and a headed window under Xvfb."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import logging
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page

from cnki_mcp.clock import SystemClock
from cnki_mcp.errors import BrowserProfileInUse, BrowserUnavailable, CnkiError
from cnki_mcp.settings import Settings
from cnki_mcp.site.browser import BrowserHost
from tests.local_http import local_server

pytestmark = pytest.mark.browser

OPENER_HTML = b"""<!doctype html><html><body>
<a id="pop" href="/child" target="_blank">open reader</a>
<a id="pop2" href="/child?2" target="_blank" rel="noopener">open download</a>
</body></html>"""


SIGNIN_HTML = b"""<!doctype html><html><body><form method="post" action="/signed">
<input name="username" autocomplete="username"><input type="password" name="password" autocomplete="current-password">
<button id="go" type="submit">sign in</button></form></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # the sign-in form's answer: a page of the signed-in site
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"<!doctype html><title>welcome</title><p>signed in</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        body = b"<!doctype html><title>ok</title><p>ok</p>"
        headers: list[tuple[str, str]] = []
        if self.path == "/set":
            # A session cookie (no Expires/Max-Age) and a persistent one.
            headers.append(("Set-Cookie", "sid=s3cr3t-session; Path=/; HttpOnly"))
            headers.append(("Set-Cookie", "keep=persistent; Path=/; Max-Age=86400"))
        elif self.path == "/echo":
            body = ("<!doctype html><pre id=c>" + (self.headers.get("Cookie") or "") + "</pre>").encode()
        elif self.path == "/opener":
            body = OPENER_HTML
        elif self.path == "/signin":
            body = SIGNIN_HTML
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with local_server(_Handler) as origin:
        yield origin


def make_host(data_dir: Path, browser_executable: str, **changes: object) -> BrowserHost:
    settings = Settings(data_dir=data_dir, browser_path=browser_executable, headless=True).with_(**changes)
    return BrowserHost(settings, SystemClock())


@pytest.fixture
async def host(tmp_path: Path, browser_executable: str) -> AsyncIterator[BrowserHost]:
    h = make_host(tmp_path / "data", browser_executable)
    try:
        yield h
    finally:
        await h.close()


async def test_constructing_the_host_starts_no_browser(tmp_path: Path, browser_executable: str) -> None:
    h = make_host(tmp_path / "data", browser_executable)
    assert h.started is False
    assert h.status()["running"] is False and h.status()["process_id"] is None
    assert not (tmp_path / "data").exists()
    await h.close()  # closing a host that never started is fine
    assert h.launches == 0


async def test_missing_configured_browser_is_browser_unavailable(tmp_path: Path) -> None:
    h = make_host(tmp_path / "data", str(tmp_path / "no-such-chrome"))
    with pytest.raises(BrowserUnavailable) as info:
        await h.ensure()
    assert info.value.code == "BROWSER_UNAVAILABLE"
    assert h.started is False


async def test_concurrent_first_ensures_launch_once_with_a_normal_user_agent(
    host: BrowserHost, tmp_path: Path, browser_executable: str, server: str
) -> None:
    contexts = await asyncio.gather(*(host.ensure() for _ in range(5)))
    assert all(c is contexts[0] for c in contexts)
    assert host.launches == 1 and host.started and host.generation == 1
    assert host.status()["process_id"] is not None

    page = await host.work_page()
    assert page is await host.work_page()  # one reused work tab
    await page.goto(server + "/echo")
    ua, webdriver = await page.evaluate("[navigator.userAgent, navigator.webdriver]")
    assert "Headless" not in ua and "Chrome/" in ua
    assert webdriver is False

    # The profile lock: a second host on the same data directory is refused.
    other = make_host(tmp_path / "data", browser_executable)
    with pytest.raises(BrowserProfileInUse) as info:
        await other.ensure()
    assert info.value.code == "BROWSER_PROFILE_IN_USE"
    assert other.started is False


async def test_session_cookie_survives_a_restart(
    tmp_path: Path, browser_executable: str, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cnki_mcp")
    data = tmp_path / "data"
    first = make_host(data, browser_executable)
    try:
        page = await first.work_page()
        await page.goto(server + "/set")
    finally:
        await first.close()

    saved = data / "session-cookies.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    text = saved.read_text(encoding="utf-8")
    assert "s3cr3t-session" in text and "persistent" not in text  # only session cookies are kept

    # A stale restored session must not come back.
    sessions = data / "browser-profile" / "Default" / "Sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "Session_13400000000000000").write_bytes(b"stale")
    (data / "browser-profile" / "Default" / "Current Session").write_bytes(b"stale")

    second = make_host(data, browser_executable)
    try:
        page = await second.work_page()
        assert not (sessions / "Session_13400000000000000").exists()
        assert not (data / "browser-profile" / "Default" / "Current Session").exists()
        await page.goto(server + "/echo")
        sent = await page.text_content("#c")
        assert sent is not None
        assert "sid=s3cr3t-session" in sent and "keep=persistent" in sent
    finally:
        await second.close()
    assert "s3cr3t-session" not in caplog.text


async def test_a_deleted_profile_starts_signed_out(tmp_path: Path, browser_executable: str, server: str) -> None:
    # Deleting browser-profile/ (what a person does to sign out, and what `cnki-mcp logout` does
    # with the cookie file) must not log in again from the session cookies saved beside it.
    data = tmp_path / "data"
    first = make_host(data, browser_executable)
    try:
        await (await first.work_page()).goto(server + "/set")
    finally:
        await first.close()
    assert "s3cr3t-session" in (data / "session-cookies.json").read_text(encoding="utf-8")

    shutil.rmtree(data / "browser-profile")
    second = make_host(data, browser_executable)
    try:
        page = await second.work_page()
        await page.goto(server + "/echo")
        assert "s3cr3t-session" not in (await page.text_content("#c") or "")
    finally:
        await second.close()
    saved = data / "session-cookies.json"
    assert not saved.exists() or "s3cr3t-session" not in saved.read_text(encoding="utf-8")


async def test_a_launch_removes_the_cookie_copies_a_killed_writer_left(tmp_path: Path, browser_executable: str) -> None:
    # A server killed while saving the session cookies leaves `.session-cookies.json.<pid>.tmp`
    # (the cookie values, written before the rename); no later process ever removed it.
    data = tmp_path / "data"
    left = data / ".session-cookies.json.4242.tmp"
    for launch in range(2):  # the second launch is on the profile the first one made
        if launch:
            left.write_text('{"version": 1, "cookies": [{"name": "LID", "value": "s3cr3t"}]}', encoding="utf-8")
        h = make_host(data, browser_executable)
        try:
            await h.ensure()
        finally:
            await h.close()
    assert not left.exists()


async def test_pages_opened_by_a_page_are_tracked_as_its_popups(host: BrowserHost, server: str) -> None:
    page = await host.work_page()
    await page.goto(server + "/opener")
    assert host.popups_of(page) == []

    popup = await host.expect_popup_from(page, lambda: page.click("#pop"), timeout=10)
    assert popup is not None
    await popup.wait_for_load_state()
    assert popup.url == server + "/child"

    # rel=noopener pages are tracked too (CNKI's download links open that way).
    second = await host.expect_popup_from(page, lambda: page.click("#pop2"), timeout=10)
    assert second is not None
    await second.wait_for_load_state()
    assert second.url == server + "/child?2"
    assert host.popups_of(page) == [popup, second]
    assert host.popups_of(popup) == []

    # No further popup: the wait ends with None instead of hanging.
    assert await host.wait_for_popup(page, since=2, timeout=0.3) is None

    tab = await host.new_page()
    assert tab is not page and tab not in host.popups_of(page)


class _PopupBeforeCreate:
    """The browser CDP session, except that a page opens a popup (and the popup has arrived)
    just before each Target.createTarget: another operation's click landing mid-creation."""

    def __init__(self, inner: Any, opener: Page, host: BrowserHost) -> None:
        self.inner, self.opener, self.host = inner, opener, host
        self.popups: list[Page] = []

    async def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if method == "Target.createTarget":
            since = len(self.host.popups_of(self.opener))
            await self.opener.click("#pop")
            popup = await self.host.wait_for_popup(self.opener, since=since, timeout=10)
            assert popup is not None
            self.popups.append(popup)
        return await self.inner.send(method, params)


async def test_a_new_tab_is_never_a_popup_another_page_opened_meanwhile(host: BrowserHost, server: str) -> None:
    # a soak found reads and downloads failing "Target page, context or browser has been closed":
    # new_page took the next page to appear, which could be another operation's popup (closed
    # by its owner soon after), instead of the tab it had created
    page = await host.work_page()
    await page.goto(server + "/opener")
    assert host._browser_cdp is not None
    racing = _PopupBeforeCreate(host._browser_cdp, page, host)
    host._browser_cdp = racing  # type: ignore[assignment]
    tab = await host.new_page()
    assert racing.popups, "the popup opened during the creation"
    assert tab not in racing.popups and tab is not page
    assert tab.url == "about:blank" and not tab.is_closed()
    assert await tab.evaluate("() => window.opener === null")


async def test_a_killed_browser_is_relaunched_on_the_next_request(host: BrowserHost, server: str) -> None:
    ctx = await host.ensure()
    pid = host.status()["process_id"]
    assert isinstance(pid, int)
    async with ctx.expect_event("close", timeout=15_000):
        os.kill(pid, signal.SIGKILL)
    assert host.started is False
    assert host.status()["running"] is False

    ctx2 = await host.ensure()
    assert ctx2 is not ctx and host.generation == 2 and host.started
    page = await host.work_page()
    await page.goto(server + "/echo")
    assert await page.text_content("#c") is not None


async def test_a_browser_killed_and_dropped_at_once_leaves_nothing_in_the_temp_directory(
    tmp_path: Path, browser_executable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that meets a dead browser drops it at once (recover) and stopped the driver before
    the driver had removed that browser's `<TMPDIR>/playwright-artifacts-*` folder: one empty
    folder in TMPDIR for ever per browser death. Playwright's folder is now in the data directory
    (checked while the browser runs, where it always showed; the death's leftover was a race)."""
    # Chromium's socket path must fit in 107 bytes: a short folder, not under tmp_path
    temp = Path(tempfile.mkdtemp(prefix="art"))
    monkeypatch.setenv("TMPDIR", str(temp))  # the driver's and the browser's temp directory
    settings = Settings(data_dir=tmp_path / "data", browser_path=browser_executable, headless=True)
    h = BrowserHost(settings, SystemClock(), environ=os.environ)  # as the server builds it
    try:
        await h.ensure()
        assert [p.name for p in temp.iterdir() if p.name.startswith("playwright-artifacts-")] == []
        os.kill(h.status()["process_id"], signal.SIGKILL)
        await h.recover()
        await h.ensure()
        await h.close()
        assert sorted(p.name for p in temp.iterdir()) == []
    finally:
        await h.close()
        shutil.rmtree(temp, ignore_errors=True)


async def test_a_closed_host_never_launches_again(tmp_path: Path, browser_executable: str) -> None:
    """Server shutdown: work that outlives its operation (a shielded journal fetch) asks for the
    browser after the host closed; it gets BROWSER_UNAVAILABLE instead of a new Chromium that
    would hold the profile after the server let go of the data directory."""
    h = make_host(tmp_path / "data", browser_executable)
    await h.ensure()
    await h.close()
    with pytest.raises(BrowserUnavailable) as info:
        await h.ensure()
    assert info.value.code == "BROWSER_UNAVAILABLE"
    assert h.launches == 1 and h.started is False
    other = make_host(tmp_path / "data", browser_executable)
    other._acquire_profile_lock()  # the profile is free for the next server
    assert other._file_lock is not None
    other._file_lock.release()


async def test_a_browser_that_never_finishes_starting_is_browser_unavailable_in_bounded_time(
    tmp_path: Path,
) -> None:
    """A launcher that answers --version and then never opens its pipe (a hung wrapper, a dialog
    nobody sees): the launch is bounded, BROWSER_UNAVAILABLE reason launch_timeout, and the hung
    process is gone. The persistent launch had no timeout: every tool waited behind it until its
    own budget ran out (900 s for a search)."""
    script = tmp_path / "chrome"
    script.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Chromium 140.0.0.0"; exit 0; fi\nexec sleep 600\n')
    script.chmod(0o755)
    settings = Settings(data_dir=tmp_path / "data", browser_path=str(script), headless=True)
    h = BrowserHost(settings, SystemClock(), launch_seconds=2.0)
    try:
        async with asyncio.timeout(120):  # a bound: a launch without a deadline fails here
            with pytest.raises(BrowserUnavailable) as info:
                await h.ensure()
        assert info.value.details["reason"] == "launch_timeout"
        assert h.started is False
        other = make_host(tmp_path / "data", str(script))
        other._acquire_profile_lock()  # the failed launch let go of the profile
        assert other._file_lock is not None
        other._file_lock.release()
    finally:
        await h.close()


async def test_a_profile_lock_left_by_another_host_is_profile_in_use_naming_the_lock(
    tmp_path: Path, browser_executable: str
) -> None:
    """A crash leaves Chromium's SingletonLock behind; on a machine since renamed (or a container
    with a new hostname) it names another host, and Chromium refuses the profile. The person is
    told which file to remove, not "浏览器启动失败 / Target page, context or browser has been closed"."""
    profile = tmp_path / "data" / "browser-profile"
    profile.mkdir(parents=True)
    os.symlink("otherbox-4242", profile / "SingletonLock")
    h = make_host(tmp_path / "data", browser_executable)
    try:
        with pytest.raises(BrowserProfileInUse) as info:
            await h.ensure()
        assert info.value.details["reason"] == "locked_by_other_host"
        assert info.value.details["host"] == "otherbox"
        assert info.value.details["lock_file"] == str(profile / "SingletonLock")
    finally:
        await h.close()


async def test_the_browser_and_the_probe_write_nothing_into_home(tmp_path: Path, browser_executable: str) -> None:
    """Chrome puts its crash-report database in ~/.config/<browser> and GLib a settings cache in
    ~/.cache/dconf whatever --user-data-dir says; both stay inside the data directory (the probe:
    a temporary folder) so nothing is written outside it."""
    from cnki_mcp.site.probe import probe_browser_async

    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    settings = Settings(data_dir=tmp_path / "data", browser_path=browser_executable, headless=True)
    h = BrowserHost(settings, SystemClock(), environ=environ)
    try:
        await h.ensure()
    finally:
        await h.close()
    assert (await probe_browser_async(browser_executable, environ=environ)).ok
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []


async def test_a_display_that_cannot_be_opened_runs_the_browser_headless_unless_a_window_was_asked(
    tmp_path: Path, browser_executable: str
) -> None:
    """DISPLAY names a display nothing serves (an SSH session's forwarded X gone, a desktop not
    running) and CNKI_HEADLESS is unset: every tool failed BROWSER_UNAVAILABLE while doctor said
    the display was fine. The browser now runs headless; with CNKI_HEADLESS=0 the error stays."""
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    dead = ":873"  # no X server listens there
    assert not Path("/tmp/.X11-unix/X873").exists()
    auto = Settings(data_dir=tmp_path / "auto", browser_path=browser_executable, display=dead)
    h = BrowserHost(auto, SystemClock(), environ=environ)
    try:
        await h.ensure()
        assert h.started and h.headless is True
    finally:
        await h.close()
    forced = Settings(data_dir=tmp_path / "forced", browser_path=browser_executable, display=dead, headless=False)
    h = BrowserHost(forced, SystemClock(), environ=environ)
    try:
        with pytest.raises(BrowserUnavailable) as info:
            await h.ensure()
        assert info.value.details["reason"] == "no_display"
    finally:
        await h.close()


async def test_a_context_closed_behind_the_hosts_back_and_explicit_recover_relaunch(
    host: BrowserHost, server: str
) -> None:
    ctx = await host.ensure()
    await ctx.close()
    assert host.started is False
    await host.ensure()
    assert host.generation == 2

    await host.recover()
    assert host.started is False
    page = await host.work_page()
    assert host.generation == 3
    await page.goto(server + "/echo")
    assert await page.text_content("#c") is not None


# --- headed under Xvfb ---------------------------------------------------------------------


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def xdisplay(tmp_path: Path) -> Iterator[str]:
    """A private X display with a window manager (minimising needs one: without a WM the
    iconify request goes nowhere). Xvfb reports readiness through -displayfd; openbox runs its
    --startup command once it manages the screen, which writes into a FIFO we block on."""
    xvfb = shutil.which("Xvfb")
    openbox = shutil.which("openbox")
    if not xvfb:
        pytest.skip("Xvfb is not installed")
    if not openbox:
        pytest.skip("openbox is not installed (apt-get install openbox)")
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(
        [xvfb, "-displayfd", str(write_fd), "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    procs = [server]
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            number = pipe.readline().strip().decode()
        assert number, "Xvfb did not report a display"
        display = f":{number}"
        fifo = tmp_path / "wm-ready"
        os.mkfifo(fifo)
        wm = subprocess.Popen(
            [openbox, "--sm-disable", "--startup", f"sh -c 'echo ready > {fifo}'"],
            env={**os.environ, "DISPLAY": display},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(wm)
        ready: list[bytes] = []
        reader = threading.Thread(target=lambda: ready.append(fifo.read_bytes()), daemon=True)
        reader.start()
        reader.join(timeout=20)
        if not ready:
            with open(fifo, "wb"):  # unblock the reader thread before failing
                pass
            pytest.fail("openbox did not start")
        yield display
    finally:
        for proc in reversed(procs):
            _stop(proc)


async def test_headed_window_starts_minimised_and_can_be_shown_and_minimised_again(
    tmp_path: Path, browser_executable: str, xdisplay: str, server: str
) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    settings = Settings(
        data_dir=tmp_path / "data", browser_path=browser_executable, headless=None, display=xdisplay
    )
    h = BrowserHost(settings, SystemClock(), environ=environ)
    try:
        page = await h.work_page()
        assert h.headless is False
        assert await h.window_state(page) == "minimized"

        # A new work tab does not bring the window up.
        tab = await h.new_page()
        await tab.goto(server + "/echo")
        assert await h.window_state(tab) == "minimized"

        # Nor does a page the work tab opens (reader/download entries open new tabs).
        await page.goto(server + "/opener")
        popup = await h.expect_popup_from(page, lambda: page.click("#pop"), timeout=10)
        assert popup is not None
        await popup.wait_for_load_state()
        assert await h.window_state(popup) == "minimized"

        assert await h.show(tab) is True
        assert await h.window_state(tab) == "normal"
        assert await tab.evaluate("document.visibilityState") == "visible"

        await h.minimise(tab)
        assert await h.window_state(tab) == "minimized"
    finally:
        await h.close()


async def test_a_password_typed_into_the_shown_browser_is_never_offered_for_saving(
    tmp_path: Path, browser_executable: str, xdisplay: str, server: str
) -> None:
    # The person logs in to CNKI in this browser's window. Chromium offered to save the password
    # there and wrote the account name into the profile's Login Data even when the offer was
    # left unanswered (a saved password would sit under Playwright's --password-store=basic).
    environ = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    data = tmp_path / "data"
    settings = Settings(data_dir=data, browser_path=browser_executable, headless=None, display=xdisplay)
    h = BrowserHost(settings, SystemClock(), environ=environ)
    try:
        page = await h.work_page()
        assert await h.show(page) is True
        await page.goto(server + "/signin")
        await page.fill("input[name=username]", "reader01")
        await page.fill("input[name=password]", "s3cret-pass")
        async with page.expect_navigation():
            await page.click("#go")
        await page.goto(server + "/echo")  # leaving the signed-in page ends any offer
    finally:
        await h.close()
    with sqlite3.connect(f"file:{data / 'browser-profile' / 'Default' / 'Login Data'}?mode=ro", uri=True) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        kept = [r for t in ("logins", "stats") if t in tables for r in conn.execute(f"SELECT * FROM {t}")]
    assert kept == []


async def test_a_login_an_earlier_release_let_the_browser_save_is_deleted_at_the_next_launch(
    tmp_path: Path, browser_executable: str
) -> None:
    # review 9 finding 7: a profile an earlier release used (the password manager still on) kept
    # a saved CNKI password until `cnki-mcp logout`. The launch deletes the store holding it, and
    # Chromium starts on the profile and creates the store again, empty.
    data = tmp_path / "data"
    store = data / "browser-profile" / "Default" / "Login Data"
    for launch in range(2):
        h = make_host(data, browser_executable)
        try:
            await h.ensure()
        finally:
            await h.close()
        if not launch:  # what Chromium saved when the person accepted "Save password?"
            with contextlib.closing(sqlite3.connect(store)) as conn, conn:
                conn.execute(
                    "INSERT INTO logins (origin_url, action_url, username_element, username_value,"
                    " password_element, password_value, submit_element, signon_realm, date_created,"
                    " blacklisted_by_user, scheme) VALUES ('https://login.cnki.net/', '', 'username',"
                    " 'reader01', 'password', X'7631300102', '', 'https://login.cnki.net/', 1, 0, 0)"
                )
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        assert conn.execute("SELECT count(*) FROM logins").fetchone() == (0,)


async def test_show_is_a_no_op_when_headless(host: BrowserHost) -> None:
    page = await host.work_page()
    assert await host.show(page) is False
    await host.minimise(page)  # nothing to minimise; must not fail


@pytest.mark.parametrize("name", ["browser-profile", "incoming"])
async def test_a_symlinked_profile_or_download_directory_is_refused_at_launch(
    tmp_path: Path, browser_executable: str, name: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / name).symlink_to(outside)
    h = make_host(data, browser_executable)
    try:
        with pytest.raises(CnkiError) as info:
            await h.ensure()
        assert info.value.code == "DATA_PATH_SYMLINK"
        assert h.started is False and list(outside.iterdir()) == []
    finally:
        await h.close()


async def test_profile_and_download_directories_are_owner_only_whatever_the_umask(
    tmp_path: Path, browser_executable: str
) -> None:
    data = tmp_path / "data"
    h = make_host(data, browser_executable)
    old = os.umask(0)
    try:
        await h.ensure()
        assert stat.S_IMODE((data / "browser-profile.lock").stat().st_mode) == 0o600
    finally:
        os.umask(old)
        await h.close()
    for path in (data, data / "browser-profile", data / "incoming"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


async def test_a_launch_clears_what_a_dead_browser_left_in_the_download_directory(
    tmp_path: Path, browser_executable: str
) -> None:
    # A browser killed mid-download leaves <guid>.crdownload (and a finished download's <guid>
    # copy) in incoming/; the product's own files in incoming/<op_id>/ are kept for reconciling.
    incoming = tmp_path / "data" / "incoming"
    (incoming / "op_1").mkdir(parents=True)
    partial = incoming / "49f69579-6f07-4f73-8965-7df90f3866c9.crdownload"
    partial.write_bytes(b"%PDF-1.7\n" + b"x" * 1000)
    artifact = incoming / "b6030530-28b7-4858-95ee-690ebdbc9050"
    artifact.write_bytes(b"%PDF-1.7\n")
    kept = incoming / "op_1" / "0123.pdf"
    kept.write_bytes(b"%PDF-1.7\n")
    h = make_host(tmp_path / "data", browser_executable)
    try:
        await h.ensure()
    finally:
        await h.close()
    assert not partial.exists() and not artifact.exists()
    assert kept.exists()
