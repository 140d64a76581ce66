"""The tabs and the window of `BrowserHost`'s browser: popups each page opened, background tabs
created by their CDP target (one at a time), the one work tab, and the window shown to the person
or kept minimised. A mixin of `BrowserHost`, which owns the browser context and its state."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cnki_mcp.clock import Clock
from cnki_mcp.settings import Settings
from cnki_mcp.site._pw import error_type
from cnki_mcp.site.deadline import CALL_SECONDS, bounded, close_tab
from cnki_mcp.site.endpoints import Endpoints

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, CDPSession, Page

log = logging.getLogger("cnki_mcp.site.browser")  # the same logger as BrowserHost's own messages

WINDOW_STATE_POLLS = 60
WINDOW_STATE_POLL_SECONDS = 0.05


async def target_id_of(ctx: BrowserContext, page: Page) -> str | None:
    """The CDP target id of `page` (None for a tab that closed meanwhile)."""
    try:
        session = await ctx.new_cdp_session(page)
    except error_type():
        return None
    try:
        info = await session.send("Target.getTargetInfo")
        return str(info["targetInfo"]["targetId"])
    except error_type():
        return None
    finally:
        with contextlib.suppress(error_type()):
            await session.detach()


class BrowserTabs:
    """Mixed into `BrowserHost`, whose context (`ensure`), headless flag and liveness it uses."""

    _clock: Clock
    _headless: bool | None
    _dead: bool
    _browser_cdp: CDPSession | None
    _work: Page | None
    _shown: Page | None
    _show_epoch: int
    _window_lock: asyncio.Lock
    _keep_minimised_tasks: dict[Page, asyncio.Task[None]]
    _popups: dict[Page, list[Page]]
    _crashed: set[Page]  # tabs whose renderer crashed (closed ones leave the set)
    _popup_signal: asyncio.Future[None] | None
    _new_page_lock: asyncio.Lock
    _dirty: asyncio.Event | None
    _page_urls: dict[Page, str]  # each tab's last committed URL
    # tabs that left CNKI's slider page for another CNKI page, in order: a slider solved there
    _verify_exits: list[Page]
    _settings: Settings

    if TYPE_CHECKING:  # provided by BrowserHost; declared for the type checker only

        async def ensure(self) -> BrowserContext: ...

    # --- pages and popups -------------------------------------------------------------

    def _on_page(self, page: Page, *, initial: bool = False) -> None:
        page.on("popup", lambda popup: self._record_popup(page, popup))
        page.on("framenavigated", lambda frame: self._on_navigated(page, frame))
        page.on("close", lambda _p: self._forget(page))
        page.on("crash", lambda _p: self._crashed.add(page))
        if not initial and self._headless is False and self._shown is None:
            # Chrome restores a minimised window when a page opens a tab in it (reader and
            # download entries do); put it back unless a page is being shown to the person.
            task = asyncio.create_task(self._keep_minimised(page, self._show_epoch))
            self._keep_minimised_tasks[page] = task
            task.add_done_callback(lambda _t: self._keep_minimised_tasks.pop(page, None))

    def _forget(self, page: Page) -> None:
        self._popups.pop(page, None)
        self._page_urls.pop(page, None)
        self._crashed.discard(page)

    def tab_lost(self, page: Page, error: BaseException | None = None) -> bool:
        """`page` is gone while the browser may run on: the person closed the tab, or its renderer
        crashed (a crashed tab answers nothing again; the browser and its other tabs are fine).
        `error`: what a call on the page raised, which may tell of the crash before its event."""
        if error is not None and "target crashed" in str(error).lower() and not page.is_closed():
            self._crashed.add(page)
        return page.is_closed() or page in self._crashed

    async def _keep_minimised(self, page: Page, epoch: int) -> None:
        async with self._window_lock:
            if self._shown is not None or epoch != self._show_epoch or self._dead or page.is_closed():
                return
            try:
                await self._window_call(page, "minimized")
            except error_type() as exc:
                log.debug("re-minimising after a new tab failed: %s", exc)

    async def _settled(self, page: Page) -> Page:
        task = self._keep_minimised_tasks.get(page)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        return page

    def _on_navigated(self, page: Page, frame: Any) -> None:
        if frame != page.main_frame:
            return
        if self._dirty is not None:
            self._dirty.set()
        endpoints = Endpoints(self._settings)
        before, after = self._page_urls.get(page), str(frame.url)
        self._page_urls[page] = after
        if endpoints.is_verify_url(before) and endpoints.is_site_url(after) and not endpoints.is_verify_url(after):
            self._verify_exits.append(page)

    def verify_exits(self, since: int = 0) -> list[Page]:
        """The tabs that left a slider page for a CNKI page, from the `since`-th such exit on
        (`len(verify_exits())` now is the `since` of a later call)."""
        return self._verify_exits[since:]

    def _record_popup(self, opener: Page, popup: Page) -> None:
        self._popups.setdefault(opener, []).append(popup)
        signal_, self._popup_signal = self._popup_signal, asyncio.get_running_loop().create_future()
        if signal_ is not None and not signal_.done():
            signal_.set_result(None)

    def popups_of(self, opener: Page) -> list[Page]:
        """Every page `opener` has opened (reader and download entries open new tabs), oldest first."""
        return list(self._popups.get(opener, ()))

    async def wait_for_popup(self, opener: Page, *, since: int = 0, timeout: float = 10.0) -> Page | None:
        """The popup number `since` (0-based) of `opener`, waiting up to `timeout` seconds for
        it to open; None on timeout or when the browser goes away."""
        deadline = self._clock.monotonic() + timeout
        while True:
            found = self._popups.get(opener, [])
            if len(found) > since:
                return await self._settled(found[since])
            remaining = deadline - self._clock.monotonic()
            signal_ = self._popup_signal
            if remaining <= 0 or self._dead or signal_ is None or opener.is_closed():
                return None
            sleeper = asyncio.ensure_future(self._clock.sleep(remaining))
            try:
                await asyncio.wait({asyncio.shield(signal_), sleeper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()

    async def expect_popup_from(
        self, opener: Page, action: Callable[[], Awaitable[object]], *, timeout: float = 10.0
    ) -> Page | None:
        """Run `action` (e.g. a click) and return the next page `opener` opens, or None."""
        since = len(self._popups.get(opener, []))
        await action()
        return await self.wait_for_popup(opener, since=since, timeout=timeout)

    async def new_page(self) -> Page:
        """A new background tab (it does not raise or restore the minimised window)."""
        ctx = await self.ensure()
        session = self._browser_cdp
        if session is None:
            return await ctx.new_page()
        async with self._new_page_lock:
            # Not "the next new page": a tab another operation's click opens meanwhile (a download's
            # order page, a reader) is a new page too, and taking it handed that operation's tab to
            # this caller, whose navigation then failed when its owner closed it. The created
            # target is found by its id among the pages that appear.
            arrived: asyncio.Queue[Page] = asyncio.Queue()
            listener = arrived.put_nowait
            ctx.on("page", listener)
            try:
                created = await session.send("Target.createTarget", {"url": "about:blank", "background": True})
                page = await bounded(
                    self._page_of_target(ctx, arrived, str(created["targetId"])), CALL_SECONDS, "new tab"
                )
            finally:
                ctx.remove_listener("page", listener)
        return await self._settled(page)

    @staticmethod
    async def _page_of_target(ctx: BrowserContext, arrived: asyncio.Queue[Page], target_id: str) -> Page:
        """The first page to arrive whose CDP target is `target_id` (the others are left alone)."""
        while True:
            page = await arrived.get()
            if await target_id_of(ctx, page) == target_id:
                return page

    async def work_page(self) -> Page:
        """The one background work tab, reused across requests (recreated if it was closed or its
        renderer crashed: the person closes tabs in the shown window)."""
        await self.ensure()
        if self._work is None or self.tab_lost(self._work):
            lost, self._work = self._work, None
            await close_tab(lost)
            self._work = await self.new_page()
        return self._work

    async def cdp(self, page: Page) -> CDPSession:
        """A CDP session attached to `page` (e.g. Network.loadNetworkResource); detach when done."""
        ctx = await self.ensure()
        return await ctx.new_cdp_session(page)

    # --- window ----------------------------------------------------------------------

    async def _window_call(self, page: Page, state: str | None) -> str | None:
        ctx = await self.ensure()
        session = await ctx.new_cdp_session(page)
        try:
            win = await session.send("Browser.getWindowForTarget")
            window_id = win["windowId"]
            bounds = win["bounds"]
            if state is not None:
                await session.send(
                    "Browser.setWindowBounds", {"windowId": window_id, "bounds": {"windowState": state}}
                )
                # The window manager applies the change asynchronously (X11: iconify, then
                # _NET_WM_STATE); wait briefly until the browser reports it.
                for _ in range(WINDOW_STATE_POLLS):
                    bounds = (await session.send("Browser.getWindowBounds", {"windowId": window_id}))[
                        "bounds"
                    ]
                    if bounds.get("windowState", "normal") == state:
                        break
                    await asyncio.sleep(WINDOW_STATE_POLL_SECONDS)
            return str(bounds.get("windowState", "normal"))
        finally:
            with contextlib.suppress(error_type()):
                await session.detach()

    async def window_state(self, page: Page | None = None) -> str | None:
        """'normal' / 'minimized' / 'maximized' / 'fullscreen' of the window holding `page`."""
        page = page or await self.work_page()
        return await self._window_call(page, None)

    async def show(self, page: Page) -> bool:
        """Put `page` in front of the person. Returns False when headless (nothing to show)."""
        await self.ensure()
        if self._headless:
            return False
        self._show_epoch += 1
        async with self._window_lock:
            self._shown = page
            await self._window_call(page, "normal")
            await page.bring_to_front()
        return True

    async def minimise(self, page: Page | None = None) -> None:
        """Minimise the window again (headed only); background work continues."""
        await self.ensure()
        if self._headless:
            return
        page = page or self._shown or await self.work_page()
        if page.is_closed():
            page = await self.work_page()
        async with self._window_lock:
            await self._window_call(page, "minimized")
            self._shown = None
