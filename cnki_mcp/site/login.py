"""The `login` flow (site-rules.md §2.6, §1.1): a positive identity already seen is returned as it is
(unless `force`); otherwise a tab opens on AdvSearch (CNKI's default login page; its visible
`登录`/`个人登录` entry is followed) or on the institution's remote-access URL, and one human step
of kind `login` runs through the gate. While it waits, EVERY open CNKI tab is read every 1.5 s,
because people often finish logging in on a tab the site opened or on www.cnki.net; a positive
identity (personal or institution; with `force`, one other than the identity shown when the step
began) on any of them ends the wait, so does `operation_control
resume`, and the gate's timeout (20 minutes) gives VERIFICATION_TIMEOUT. After the step the
session cookies are saved and the identity is returned."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from cnki_mcp.clock import Clock
from cnki_mcp.errors import BrowserUnavailable
from cnki_mcp.models import HeaderIdentity
from cnki_mcp.parse.gate import read_header_identity
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.endpoints import Endpoints, without_query
from cnki_mcp.site.human import HumanGate, PageKind, PageState
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.pages import PlaywrightHumanPage, positive, read_identity

log = logging.getLogger(__name__)

TAB_POLL_SECONDS = 1.5  # site-rules.md §2.6: every CNKI tab is read every 1.5 s during login
NAV_TIMEOUT_MS = 30_000
ENTRY_TIMEOUT_MS = 10_000
# Py login click target: a visible link/button whose text is exactly 登录 or 个人登录 (site-rules.md §2.6).
_ENTRY_JS = """() => {
  const ok = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  for (const el of document.querySelectorAll('a[href], button')) {
    const t = (el.textContent || '').trim();
    if ((t === '登录' || t === '个人登录') && ok(el) && el.href) return el.href;
  }
  return null;
}"""


def _url(page: Page) -> str:
    try:
        return page.url
    except PlaywrightError:
        return ""


def _who(identity: HeaderIdentity) -> tuple[str | None, tuple[str, ...]]:
    return identity.personal_name if positive(identity) else None, tuple(identity.institutions)


async def scan_tabs(
    host: BrowserHost, endpoints: Endpoints, *, unlike: HeaderIdentity | None = None
) -> HeaderIdentity | None:
    """The first positive identity shown by any open CNKI tab (login pages skipped), else None.
    With `unlike`, an identity equal to it does not count (force: the person switches accounts)."""
    ctx = await host.ensure()
    for page in list(ctx.pages):
        url = _url(page)
        if page.is_closed() or not endpoints.is_site_url(url) or endpoints.is_login_url(url):
            continue
        try:
            identity = read_header_identity(await page.content())
        except PlaywrightError:  # mid-navigation or closed meanwhile: next poll reads it
            continue
        if positive(identity) and (unlike is None or _who(identity) != _who(unlike)):
            return identity
    return None


@dataclass(slots=True)
class LoginWatch:
    """The `HumanPage` of a login step: LOGIN until some CNKI tab shows a positive identity.

    The gate polls `inspect()` at its own pace; the tabs are read at most every
    `interval` seconds, between reads the last answer stands."""

    inner: PlaywrightHumanPage
    clock: Clock
    interval: float = TAB_POLL_SECONDS
    found: HeaderIdentity | None = None
    baseline: HeaderIdentity | None = None  # force: who was logged in when the step began
    reads: int = 0
    _last_read: float | None = field(default=None)

    async def inspect(self) -> PageState:
        now = self.clock.monotonic()
        if self.found is None and (self._last_read is None or now - self._last_read >= self.interval):
            self._last_read = now
            self.reads += 1
            self.found = await scan_tabs(self.inner.host, self.inner.endpoints, unlike=self.baseline)
        if self.found is not None:
            return PageState(PageKind.CLEAR)
        return PageState(PageKind.LOGIN)

    async def show(self) -> None:
        await self.inner.show()

    async def minimise(self) -> None:
        await self.inner.minimise()


@dataclass(slots=True)
class LoginFlow:
    host: BrowserHost
    endpoints: Endpoints
    limiter: Limiter
    gate: HumanGate
    clock: Clock
    poll_interval: float = TAB_POLL_SECONDS

    async def run(
        self,
        current: HeaderIdentity | None,
        op: SiteOp | None,
        *,
        remote_access_url: str | None = None,
        force: bool = False,
    ) -> HeaderIdentity:
        """`current`: the identity just read from the work tab (None: not read)."""
        if current is not None and positive(current) and not force:
            return current
        page = await self.host.new_page()
        try:
            await self._open(page, remote_access_url, op)
            watch = LoginWatch(
                PlaywrightHumanPage(self.host, page, self.endpoints, "login"),
                self.clock,
                interval=self.poll_interval,
            )
            if force:
                # Switching accounts: the identity shown now does not end the step.
                watch.baseline = await scan_tabs(self.host, self.endpoints)
            else:
                # The entry page itself may already show who we are (an institution by IP).
                watch.found = await scan_tabs(self.host, self.endpoints)
            if watch.found is None:
                await self.gate.handle("login", watch, op, "wait")
            identity = watch.found or await scan_tabs(self.host, self.endpoints)
            if identity is None:
                # Resumed without a positive header anywhere: report what the site shows now.
                identity = await self._read_after(page, op)
            saved = await self.host.save_cookies()
            log.info("login step over: %d session cookies saved", saved)
            return identity
        finally:
            with contextlib.suppress(PlaywrightError):
                if not page.is_closed():
                    await page.close()

    async def _open(self, page: Page, remote_access_url: str | None, op: SiteOp | None) -> None:
        """Navigate the login tab: the remote-access URL as given, else AdvSearch and its entry."""
        target = remote_access_url or self.endpoints.adv_search
        try:
            async with self.limiter.slot(budget=op):
                await page.goto(target, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS)
        except PlaywrightError as exc:
            if self.host.note_error(exc):
                raise BrowserUnavailable("浏览器连接已断开", reason=without_query(str(exc))[:200]) from exc
            log.info("login page did not finish loading: %s", str(exc).splitlines()[0][:200])
            return
        if remote_access_url is not None:
            return
        try:
            entry = await page.evaluate(_ENTRY_JS)
        except PlaywrightError:
            entry = None
        if not isinstance(entry, str) or not self.endpoints.is_site_url(entry):
            return  # already logged in, or no entry: the person uses the page as it is
        try:
            async with self.limiter.slot(budget=op):
                await page.goto(entry, wait_until="domcontentloaded", timeout=ENTRY_TIMEOUT_MS)
        except PlaywrightError as exc:
            if self.host.note_error(exc):
                raise BrowserUnavailable("浏览器连接已断开", reason=without_query(str(exc))[:200]) from exc
            log.info("login entry did not finish loading: %s", str(exc).splitlines()[0][:200])

    async def _read_after(self, page: Page, op: SiteOp | None) -> HeaderIdentity:
        """The header of the login tab once it is back on a CNKI page, else of AdvSearch."""
        if page.is_closed():
            page = await self.host.work_page()
        url = _url(page)
        if not self.endpoints.is_site_url(url) or self.endpoints.is_login_url(url):
            async with self.limiter.slot(budget=op):
                with contextlib.suppress(PlaywrightError):
                    await page.goto(
                        self.endpoints.adv_search, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS
                    )
        return await read_identity(page, self.clock)
