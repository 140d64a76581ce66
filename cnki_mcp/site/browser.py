"""The browser host: the user's Chrome/Edge/Chromium driven through a Playwright persistent
profile inside the data directory. Starts lazily, holds its own profile lock, keeps session
cookies across restarts, tracks the tabs pages open, shows/minimises the window for human
steps and relaunches after the browser dies."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import shutil
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from cnki_mcp.site._pw import error_type, start_driver

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, CDPSession, Page, Playwright

from cnki_mcp import datadir
from cnki_mcp.clock import Clock
from cnki_mcp.errors import BrowserProfileInUse, BrowserUnavailable, DataDirectoryUnusable
from cnki_mcp.settings import Settings
from cnki_mcp.site.browser_tabs import BrowserTabs
from cnki_mcp.site.cookie_jar import atomic_write_private, load_session_cookies, session_payload
from cnki_mcp.site.launch_error import (
    LAUNCH_SECONDS,
    NO_DISPLAY,
    SANDBOX_OFF_UNSUPPORTED,
    SANDBOX_ON,
    is_sandbox_refusal,
    launch_error,
    sandbox_state,
    temp_unusable,
)
from cnki_mcp.site.locate import (
    BrowserCandidate,
    decide_headless,
    find_browser,
    major_version,
    normal_user_agent,
)
from cnki_mcp.site.profile_prefs import (
    clear_stale_singleton_folder,
    forget_saved_logins,
    pid_alive,
    prepare_preferences,
)

log = logging.getLogger(__name__)

PROFILE_DIR = datadir.PROFILE_DIR
PROFILE_LOCK = datadir.PROFILE_LOCK_FILE
COOKIES_FILE = datadir.COOKIES_FILE
INCOMING_DIR = datadir.INCOMING_DIR

# Chrome restores the previous session's tabs from these; stale CNKI tabs (old search pages,
# half-done logins) would come back and compete with the work tab, so they are deleted.
# Chrome keeps its crash-report database under $CHROME_CONFIG_HOME (else ~/.config/<browser>) even
# with --user-data-dir, and GLib caches settings in ~/.cache/dconf: both point into the profile so
# the browser writes nothing outside the data directory (the person's HOME stays untouched).
CONFIG_HOME_DIR = "ChromeConfigHome"


def private_browser_env(environ: Mapping[str, str], config_home: Path, *, headless: bool) -> dict[str, str]:
    """`environ` for a browser launch that keeps Chrome's own files out of HOME: its config home
    at `config_home`, and (headless only: a shown window keeps the desktop's fonts and scaling)
    GLib settings in memory, and file names in UTF-8 under a C or POSIX locale. Values the
    person set themselves are kept."""
    env = dict(environ)
    datadir.utf8_file_names(env)  # LC_ALL=C: the browser would name files in ASCII
    env.setdefault("CHROME_CONFIG_HOME", str(config_home))
    if headless:
        env.setdefault("GSETTINGS_BACKEND", "memory")
    return env


STALE_SESSION_ENTRIES = ("Sessions", "Current Session", "Current Tabs", "Last Session", "Last Tabs")

_GONE_MARKERS = (
    "has been closed",
    "target closed",
    "browser has disconnected",
    "connection closed",
    "browser closed",
    "websocket closed",
)

WINDOW_SIZE = (1280, 900)


def is_browser_gone(exc: BaseException) -> bool:
    """True when `exc` says the page, context or browser is gone (TargetClosedError and kin)."""
    if not isinstance(exc, error_type()):
        return False
    if type(exc).__name__ == "TargetClosedError":
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _GONE_MARKERS)


class BrowserHost(BrowserTabs):
    """One persistent browser profile for the process. Nothing starts before `ensure()`.

    `environ` is the process environment (the composition root passes `os.environ`); it is
    used to find the browser (HOME, PATH, %PROGRAMFILES% ...) and as the browser's
    environment, with DISPLAY taken from Settings. Without it the browser gets ours, with
    Chrome's own files still kept out of HOME (`private_browser_env`)."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        *,
        environ: Mapping[str, str] | None = None,
        platform: str = sys.platform,
        exists: Callable[[str], bool] = os.path.isfile,
        autosave_seconds: float = 30.0,
        launch_seconds: float = LAUNCH_SECONDS,
    ) -> None:
        self._settings = settings
        self._launch_seconds = launch_seconds
        euid = os.geteuid() if hasattr(os, "geteuid") else None
        self._sandbox = sandbox_state(platform, euid, settings.browser_args)
        self._clock = clock
        self._environ = environ
        self._platform = platform
        self._exists = exists
        self._autosave_seconds = autosave_seconds
        self._ensure_lock = asyncio.Lock()
        self._file_lock: FileLock | None = None
        self._pw: Playwright | None = None
        self._context: BrowserContext | None = None
        self._browser_cdp: CDPSession | None = None
        self._candidate: BrowserCandidate | None = None
        self._headless: bool | None = None
        self._dead = False
        self._pid: int | None = None
        self._generation = 0
        self._launches = 0
        self._work: Page | None = None
        self._shown: Page | None = None
        self._show_epoch = 0
        self._window_lock = asyncio.Lock()
        self._keep_minimised_tasks: dict[Page, asyncio.Task[None]] = {}
        self._popups: dict[Page, list[Page]] = {}
        self._crashed: set[Page] = set()
        self._popup_signal: asyncio.Future[None] | None = None
        # one tab created at a time; each caller takes the page whose target id it created
        self._new_page_lock = asyncio.Lock()
        self._dirty: asyncio.Event | None = None
        self._page_urls: dict[Page, str] = {}
        self._verify_exits: list[Page] = []
        self._autosave: asyncio.Task[None] | None = None
        self._cookies_refused = False  # the last save_cookies met a disk that refused the file
        self._last_saved: str | None = None
        self._closed = False  # after close() nothing launches again (server shutdown)

    # --- paths and state ------------------------------------------------------------

    @property
    def profile_dir(self) -> Path:
        return self._settings.data_dir / PROFILE_DIR

    @property
    def lock_path(self) -> Path:
        return self._settings.data_dir / PROFILE_LOCK

    @property
    def cookies_path(self) -> Path:
        return self._settings.data_dir / COOKIES_FILE

    @property
    def downloads_dir(self) -> Path:
        return self._settings.data_dir / INCOMING_DIR

    @property
    def started(self) -> bool:
        """Whether a live browser is running. Never starts one (safe for diagnostics)."""
        return self._context is not None and not self._dead

    @property
    def headless(self) -> bool | None:
        """Mode of the running browser (None before the first launch)."""
        return self._headless

    @property
    def generation(self) -> int:
        """Increments on every launch; a change tells callers their pages are gone."""
        return self._generation

    def lost_since(self, generation: int) -> bool:
        """Whether the browser of `generation` died (is down, or another was launched since): the
        pages it held, and any request they were answering, are gone."""
        return not self.started or self._generation != generation

    @property
    def launches(self) -> int:
        return self._launches

    def status(self) -> dict[str, Any]:
        """Diagnostics snapshot; never starts the browser."""
        return {
            "running": self.started,
            "process_id": self._pid if self.started else None,
            "profile_directory": str(self.profile_dir),
            "headless": self._headless,
            # before the first launch: what it will ask for (a machine that refuses is found then)
            "sandbox": self._sandbox,
            "connection_generation": self._generation,
            "executable": self._candidate.path if self._candidate else None,
            "kind": self._candidate.kind if self._candidate else None,
        }

    # --- lifecycle ------------------------------------------------------------------

    async def ensure(self) -> BrowserContext:
        """The live browser context, launching (or relaunching after a death) on first use.
        Concurrent first calls share one launch."""
        ctx = self._context
        if ctx is not None and not self._dead:
            return ctx
        async with self._ensure_lock:
            if self._closed:
                # Work that outlives its operation at shutdown (a shielded fetch) must not start
                # a browser the server no longer owns: the profile lock would outlive the store's.
                raise BrowserUnavailable("服务正在关闭，不再启动浏览器", reason="closed")
            if self._context is not None and not self._dead:
                return self._context
            if self._context is not None or self._pw is not None:
                await self._drop()
            return await self._launch()

    async def recover(self, generation: int | None = None) -> bool:
        """Drop the browser (dead or wedged) so the next `ensure()` relaunches it. `generation`: the
        browser the caller saw fail; one launched since (another caller recovered first, maybe
        while this one waited for the launch) is kept. Returns whether the browser was dropped."""
        async with self._ensure_lock:
            if generation is not None and generation != self._generation:
                return False
            await self._drop()
            return True

    async def close(self) -> None:
        """Save session cookies, close the browser and release the profile lock; the host never
        launches again."""
        async with self._ensure_lock:
            self._closed = True
            await self._drop()
            if self._file_lock is not None:
                self._clear_singleton_leftovers()
                self._file_lock.release()
                self._file_lock = None

    async def __aenter__(self) -> BrowserHost:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _acquire_profile_lock(self) -> None:
        if self._file_lock is not None and self._file_lock.is_locked:
            return
        datadir.ensure_root(self._settings.data_dir)
        lock = FileLock(
            str(self.lock_path), timeout=0, thread_local=False, is_singleton=False, mode=datadir.FILE_MODE
        )
        try:
            lock.acquire()
        except Timeout as exc:
            raise BrowserProfileInUse(profile=str(self.profile_dir)) from exc
        self._file_lock = lock

    def _prepare_profile(self) -> None:
        # The profile folder 0700 and never a symlink (DESIGN.md "Data directory"): the files
        # Chromium writes inside it are its own business; this mode protects them.
        root = self._settings.data_dir
        fresh = not os.path.lexists(root / PROFILE_DIR)
        profile = datadir.ensure_dir(root, PROFILE_DIR)
        if fresh and datadir.forget_session_cookies(root):
            # the profile was deleted (to sign out): its saved session cookies would log in again
            log.info("new browser profile: the session cookies saved from the deleted one were discarded")
        datadir.clear_cookie_temporaries(root, os.getpid())  # a killed writer's copies of the cookies
        default = datadir.private_subdir(profile, "Default")
        for name in STALE_SESSION_ENTRIES:
            entry = default / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.exists() or entry.is_symlink():
                with contextlib.suppress(OSError):
                    entry.unlink()
        # the last exit marked clean (no "Restore pages?" bubble), the password manager off
        prepare_preferences(default)
        self._clear_singleton_leftovers()
        if deleted := forget_saved_logins(default):  # an earlier release left the manager on
            log.info("deleted %d login(s) the browser had saved in the profile (password saving is off)", deleted)

    def _clear_singleton_leftovers(self) -> None:
        # the socket folder a killed browser left in the temporary directory (profile_prefs.py)
        if stale := clear_stale_singleton_folder(self.profile_dir, socket.gethostname(), pid_alive):
            log.info("deleted %s, which a browser killed in this profile left behind", stale)

    def _last_version(self) -> str | None:
        # Chrome writes its version into the profile at every start.
        try:
            return (self.profile_dir / "Last Version").read_text(encoding="utf-8").strip() or None
        except OSError:
            return None

    async def _probe_version(self, candidate: BrowserCandidate) -> str | None:
        """The browser's version before its first start in this profile, without launching it."""
        if self._platform in {"win32", "cygwin"}:
            # `chrome.exe --version` opens a window on Windows; the installer puts each version
            # in a folder named after it beside chrome.exe / msedge.exe.
            parent = Path(candidate.path).parent
            try:
                names = [d.name for d in parent.iterdir() if d.is_dir() and major_version(d.name)]
            except OSError:
                return None
            return max(names, key=lambda n: tuple(int(x) for x in n.split(".") if x.isdigit()), default=None)
        try:
            proc = await asyncio.create_subprocess_exec(
                candidate.path,
                "--version",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=self._environ and dict(self._environ),
            )
        except OSError:
            return None
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 10.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            return None
        text = out.decode(errors="replace").strip()
        return text if major_version(text) else None

    def _launch_env(self, headless: bool) -> dict[str, str]:
        # without `environ` the browser gets this process's environment, still with Chrome's own
        # files kept out of HOME: it wrote crash dumps into ~/.config/<browser> (DESIGN.md "Data directory")
        environ = os.environ if self._environ is None else self._environ
        env = private_browser_env(environ, self.profile_dir / CONFIG_HOME_DIR, headless=headless)
        display = self._settings.display
        if not headless and display:
            env["DISPLAY" if ":" in display else "WAYLAND_DISPLAY"] = display
        return env

    async def _launch(self) -> BrowserContext:
        datadir.check_browser_path_encoding(
            self._settings.data_dir, self._environ or {}, sys.getfilesystemencoding(), platform=self._platform
        )
        candidate = find_browser(
            self._settings.browser_path,
            platform=self._platform,
            environ=self._environ or {},
            exists=self._exists,
        )
        if candidate is None:
            raise BrowserUnavailable()
        if (temp := temp_unusable()) is not None:
            raise temp
        self._acquire_profile_lock()
        try:
            self._prepare_profile()
            # the browser's download directory: checked before every launch, 0700, without the
            # partial files a browser that died mid-download left there
            datadir.clear_browser_leftovers(datadir.ensure_dir(self._settings.data_dir, INCOMING_DIR))
            headless = decide_headless(
                self._settings.headless, platform=self._platform, display=self._settings.display
            )
            self._pw = await start_driver()
            version = self._last_version()
            if headless and version is None:
                version = await self._probe_version(candidate)
            ua = self._user_agent(version, headless, candidate)
            try:
                ctx = await self._launch_context(candidate, headless, ua)
            except BrowserUnavailable as exc:
                if headless or self._settings.headless is not None or exc.details.get("reason") != NO_DISPLAY:
                    raise
                # DISPLAY names a display that cannot be opened (an SSH session's forwarded X gone,
                # a desktop not running) and nobody asked for a window: headless, not no browser
                log.warning("the display %s cannot be opened; the browser runs headless", self._settings.display)
                headless = True
                version = version or await self._probe_version(candidate)
                ua = self._user_agent(version, headless, candidate)
                ctx = await self._launch_context(candidate, headless, ua)
            if headless and ua is None and ctx.browser is not None:
                # First start of a fresh profile: the version is only known now. Relaunch
                # once so the headless browser never announces itself as HeadlessChrome.
                ua = self._user_agent(ctx.browser.version, headless, candidate)
                if ua is not None:
                    await ctx.close()
                    ctx = await self._launch_context(candidate, headless, ua)
        except BaseException:
            await self._drop()
            if self._file_lock is not None:
                self._file_lock.release()
                self._file_lock = None
            raise
        self._candidate = candidate
        self._headless = headless
        self._context = ctx
        self._dead = False
        self._generation += 1
        self._launches += 1
        self._popups = {}
        self._crashed = set()
        self._page_urls = {}
        self._popup_signal = asyncio.get_running_loop().create_future()
        self._dirty = asyncio.Event()
        ctx.on("close", self._on_context_close)
        ctx.on("page", self._on_page)
        if ctx.browser is not None:
            ctx.browser.on("disconnected", lambda _b: self._mark_dead())
        for page in ctx.pages:
            self._on_page(page, initial=True)
        self._work = ctx.pages[0] if ctx.pages else None
        await self._attach_browser_session()
        await self._restore_cookies()
        if not headless:
            with contextlib.suppress(error_type()):
                await self.minimise()
        self._autosave = asyncio.create_task(self._autosave_loop())
        log.info(
            "browser started: %s (%s), %s, generation %d",
            candidate.path,
            candidate.kind,
            "headless" if headless else "headed",
            self._generation,
        )
        return ctx

    def _user_agent(self, version: str | None, headless: bool, candidate: BrowserCandidate) -> str | None:
        # Headed Chrome already sends its normal UA; overriding it would only risk a mismatch.
        if not headless or not version:
            return None
        return normal_user_agent(version, platform=self._platform, kind=candidate.kind)

    async def _launch_context(
        self, candidate: BrowserCandidate, headless: bool, ua: str | None
    ) -> BrowserContext:
        assert self._pw is not None
        args = [*self._settings.browser_args, "--disable-blink-features=AutomationControlled"]
        options: dict[str, Any] = {}
        if headless:
            options["viewport"] = {"width": WINDOW_SIZE[0], "height": WINDOW_SIZE[1]}
        else:
            args += ["--start-minimized", f"--window-size={WINDOW_SIZE[0]},{WINDOW_SIZE[1]}"]
            options["no_viewport"] = True
        if ua is not None:
            options["user_agent"] = ua
        launch = self._pw.chromium.launch_persistent_context
        if "artifacts_dir" in inspect.signature(launch).parameters:  # Playwright 1.5x and later
            # Without it the driver makes <TMPDIR>/playwright-artifacts-XXXXXX at each launch and
            # removes it only once it has seen the browser process end: a dead browser dropped at
            # once (`_drop` stops the driver) left it there for ever, one per browser death.
            # Playwright writes nothing into it here (downloads go to downloads_path; no traces,
            # videos or HAR) and never deletes a folder it was given.
            options["artifacts_dir"] = str(self.downloads_dir)
        try:
            return await launch(
                str(self.profile_dir),
                executable_path=candidate.path,
                headless=headless,
                args=args,
                ignore_default_args=["--enable-automation"],
                accept_downloads=True,
                downloads_path=str(self.downloads_dir),
                locale="zh-CN",
                chromium_sandbox=self._sandbox == SANDBOX_ON,  # not as root on Linux (launch_error.sandbox_state)
                env=self._launch_env(headless),
                # without a timeout a persistent launch waits for ever on a browser that never
                # opens its pipe, and every tool waits behind it (docs/reliability.md)
                timeout=self._launch_seconds * 1000,
                **options,
            )
        except error_type() as exc:
            if self._sandbox == SANDBOX_ON and is_sandbox_refusal(exc):
                # this machine cannot sandbox the browser (no user namespaces, no setuid helper):
                # run it as before, without, rather than not at all
                log.warning("the browser's sandbox cannot start here; running it without: %s",
                            str(exc).strip().splitlines()[0][:200])  # fmt: skip
                self._sandbox = SANDBOX_OFF_UNSUPPORTED
                return await self._launch_context(candidate, headless, ua)
            raise launch_error(exc, profile=self.profile_dir, launch_seconds=self._launch_seconds) from exc

    async def _attach_browser_session(self) -> None:
        ctx = self._context
        if ctx is None or ctx.browser is None:
            return
        try:
            self._browser_cdp = await ctx.browser.new_browser_cdp_session()
            info = await self._browser_cdp.send("SystemInfo.getProcessInfo")
            for proc in info.get("processInfo", []):
                if proc.get("type") == "browser":
                    self._pid = int(proc["id"])
        except error_type() as exc:
            log.debug("browser CDP session unavailable: %s", exc)

    async def _drop(self) -> None:
        """Forget the running browser (saving cookies when it still answers)."""
        task, self._autosave = self._autosave, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        ctx, self._context = self._context, None
        if ctx is not None and not self._dead:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._save_cookies_of(ctx), 5.0)
        closed = True
        if ctx is not None:
            try:
                await asyncio.wait_for(ctx.close(), 10.0)
            except Exception:
                closed = bool(self._dead)
        pid, self._pid = self._pid, None
        if pid is not None and not closed:
            # A wedged browser that ignored close() must not keep the profile busy. Only
            # then: after a clean close the pid may already belong to another process.
            with contextlib.suppress(OSError):
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        pw, self._pw = self._pw, None
        if pw is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pw.stop(), 10.0)
        self._browser_cdp = None
        self._work = None
        self._shown = None
        self._popups = {}
        self._crashed = set()
        if self._popup_signal is not None and not self._popup_signal.done():
            self._popup_signal.set_result(None)
        self._dead = False

    def _mark_dead(self) -> None:
        if self._context is not None and not self._dead:
            log.warning("browser closed or disconnected; it will be relaunched on the next request")
        self._dead = True
        if self._popup_signal is not None and not self._popup_signal.done():
            self._popup_signal.set_result(None)

    def _on_context_close(self, _ctx: BrowserContext) -> None:
        self._mark_dead()

    async def check_alive(self, timeout: float = 5.0) -> bool:
        """Probe the browser (never starts it); a browser that does not answer is marked dead."""
        if not self.started:
            return False
        session = self._browser_cdp
        if session is None:
            return True
        try:
            await asyncio.wait_for(session.send("Browser.getVersion"), timeout)
        except (error_type(), TimeoutError):
            self._mark_dead()
            return False
        return True

    def note_error(self, exc: BaseException) -> bool:
        """Callers report Playwright errors here; a gone browser is marked dead so the next
        `ensure()` relaunches. Returns whether the error meant the browser is gone."""
        if not is_browser_gone(exc):
            return False
        ctx = self._context
        if ctx is None or ctx.browser is None or not ctx.browser.is_connected():
            self._mark_dead()
        return True

    # --- cookies --------------------------------------------------------------------

    async def save_cookies(self) -> int:
        """Save the session cookies (no expiry) now; returns how many, 0 when the disk refused the
        file (logged; the autosave writes it once there is room). Values are never logged."""
        ctx = self._context
        if ctx is None or self._dead:
            return 0
        try:
            count = await self._save_cookies_of(ctx)
        except (OSError, DataDirectoryUnusable) as exc:
            # a full or read-only disk, the data directory gone: the session lives on in the
            # browser. Raised, it ended a login the person had just completed as INTERNAL, and
            # ended the autosave for good; warned once, not every autosave while the disk is full.
            (log.debug if self._cookies_refused else log.warning)("cannot write %s: %s", self.cookies_path, exc)
            self._cookies_refused = True
            return 0
        if self._cookies_refused:
            self._cookies_refused = False
            log.info("session cookies written again to %s", self.cookies_path)
        return count

    async def _save_cookies_of(self, ctx: BrowserContext) -> int:
        payload, count = session_payload(await ctx.cookies())  # type: ignore[arg-type]
        if payload != self._last_saved:
            datadir.ensure_root(self._settings.data_dir)
            await asyncio.to_thread(atomic_write_private, self.cookies_path, payload)
            self._last_saved = payload
            log.debug("saved %d session cookies", count)
        return count

    async def _restore_cookies(self) -> None:
        ctx = self._context
        cookies = load_session_cookies(self.cookies_path)
        if ctx is None or not cookies:
            return
        try:
            await ctx.add_cookies(cookies)  # type: ignore[arg-type]
        except error_type():
            # One malformed entry fails the whole batch; keep the good ones.
            for cookie in cookies:
                with contextlib.suppress(error_type()):
                    await ctx.add_cookies([cookie])  # type: ignore[list-item]
        log.info("restored %d session cookies", len(cookies))

    async def _autosave_loop(self) -> None:
        dirty = self._dirty
        assert dirty is not None
        while True:
            await self._wait_event(dirty, self._autosave_seconds)
            if dirty.is_set():
                dirty.clear()
                await self._clock.sleep(1.0)  # let a redirect chain finish setting cookies
            try:
                await self.save_cookies()
            except error_type() as exc:
                if self.note_error(exc):
                    return
                log.debug("saving session cookies failed: %s", exc)

    async def _wait_event(self, event: asyncio.Event, timeout: float) -> None:
        waiter = asyncio.ensure_future(event.wait())
        sleeper = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, sleeper):
                task.cancel()
