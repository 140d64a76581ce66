"""The `login` flow (site-rules.md §2.6, §1.1): a positive identity the live session shows is returned
as it is (unless `force`; `CnkiSite.login` confirms an old page's header first); otherwise a tab
opens on AdvSearch (CNKI's default login page; its visible `登录`/`个人登录` entry is followed) or
on the institution's remote-access URL (a page no connection reaches is SITE_UNAVAILABLE at once,
never a wait before a browser error page), and one human step of kind `login` runs through the gate.
While it waits, EVERY open CNKI tab is read every 1.5 s, because people often finish logging in on
a tab the site opened or on www.cnki.net; a positive identity (personal or institution; with
`force`, one other than the identity AdvSearch showed at the start) on a tab that loaded a page
after the step began, or whose header changed since, ends the wait (an older page may show a login
the site has dropped); so does `operation_control resume`, and the gate's timeout (20 minutes)
gives VERIFICATION_TIMEOUT. A tab showing CNKI under a library proxy's host (WebVPN, EZproxy) ends
it with REMOTE_ACCESS_UNSUPPORTED: the product's requests never go through the proxy. After the step the session cookies are saved and the identity is
returned."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from cnki_mcp.clock import Clock
from cnki_mcp.errors import BrowserUnavailable, SiteUnavailable
from cnki_mcp.models import HeaderIdentity, IdentityKind
from cnki_mcp.parse.gate import read_header_identity
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.endpoints import (
    PERSON_ENDS_CAUSES,
    Endpoints,
    error_reason,
    network_cause,
    unsent_net_error,
    without_query,
)
from cnki_mcp.site.endpoints import unreachable as unreachable_error
from cnki_mcp.site.human import HumanGate, PageKind, PageState, headless_login_tool_message
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.navigation import NAV_TIMEOUT_MS
from cnki_mcp.site.pages import (
    IDENTITY_SETTLE_SECONDS,
    LOAD_STATE_JS,
    PlaywrightHumanPage,
    document_origin,
    positive,
    proxy_unsupported,
    read_identity,
)

log = logging.getLogger(__name__)

TAB_POLL_SECONDS = 1.5  # site-rules.md §2.6: every CNKI tab is read every 1.5 s during login
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
_NOW_JS = "() => performance.timeOrigin + performance.now()"  # the browser's clock, ms


def _url(page: Page) -> str:
    try:
        return page.url
    except PlaywrightError:
        return ""


Who = tuple[str | None, tuple[str, ...]]


def _who(identity: HeaderIdentity) -> Who:
    return identity.personal_name if positive(identity) else None, tuple(identity.institutions)


@dataclass(slots=True)
class TabsBefore:
    """The open tabs when a login step began: when (the browser's clock) and who each showed.
    The site drops logins without telling the pages it served, so a tab counts as evidence only
    once it loaded a page after this moment or its header changed since (site-rules.md §2.6)."""

    origin: float | None
    shown: list[tuple[Page, Who]] = field(default_factory=list)

    def showed(self, page: Page) -> Who | None:
        return next((who for p, who in self.shown if p is page), None)


async def browser_now(page: Page) -> float | None:
    """The browser's clock (ms), comparable with `document_origin`; None when the tab cannot say."""
    try:
        now = await page.evaluate(_NOW_JS)
    except PlaywrightError:
        return None
    return float(now) if isinstance(now, (int, float)) else None


async def tabs_before(host: BrowserHost, endpoints: Endpoints, blank: Page) -> TabsBefore:
    """What every CNKI tab shows now; `blank` (a fresh tab) gives the browser's time."""
    before = TabsBefore(await browser_now(blank))
    ctx = await host.ensure()
    for page in list(ctx.pages):
        url = _url(page)
        if page.is_closed() or not endpoints.is_site_url(url):
            continue
        with contextlib.suppress(PlaywrightError):
            before.shown.append((page, _who(read_header_identity(await page.content()))))
    return before


async def _counts(page: Page, identity: HeaderIdentity, since: TabsBefore) -> bool:
    """`page` loaded after the step began, or shows someone other than it showed then."""
    if since.showed(page) not in (None, _who(identity)):
        return True
    origin = await document_origin(page)
    return origin is not None and since.origin is not None and origin > since.origin


async def scan_tabs(
    host: BrowserHost,
    endpoints: Endpoints,
    *,
    unlike: HeaderIdentity | None = None,
    since: TabsBefore | None = None,
) -> HeaderIdentity | None:
    """The first positive identity shown by any open CNKI tab (login pages skipped), else None.
    With `unlike`, an identity equal to it does not count (force: the person switches accounts);
    with `since`, only a tab loaded or changed after that moment counts."""
    ctx = await host.ensure()
    for page in list(ctx.pages):
        url = _url(page)
        if page.is_closed() or not endpoints.is_site_url(url) or endpoints.is_login_url(url):
            continue
        try:
            identity = read_header_identity(await page.content())
        except PlaywrightError:  # mid-navigation or closed meanwhile: next poll reads it
            continue
        if not positive(identity) or (unlike is not None and _who(identity) == _who(unlike)):
            continue
        if since is None or await _counts(page, identity, since):
            return identity
    return None


# force: a page that read logged out, by tab: (the tab, its page's load time, first read so).
OutSeen = dict[int, tuple[Page, float, float]]


async def logged_out(
    host: BrowserHost,
    endpoints: Endpoints,
    baseline: HeaderIdentity,
    since: float | None,
    seen: OutSeen,
    now: float,
) -> tuple[float, HeaderIdentity] | None:
    """force: the person logged out in a CNKI tab loaded after `since` (the login tab was opened;
    the browser's clock): (when that page loaded, who it shows), else None. Logged out: the tab is
    CNKI's login page (the product's own tab only goes there when nobody is logged in; it shows
    `baseline` without its personal login), or the same page read, at reads `IDENTITY_SETTLE_SECONDS`
    apart or more (`seen`, `now`: the step's clock), with its header ready, no personal login and
    the 登录 entry visible, complete and idle (CNKI's 退出 returns to the page it was clicked on).
    One reading is not enough: a header drawn after load without jQuery, or one with a bare 退出
    and no badge, reads "nobody" while the old account is still logged in, and the next page
    showing that account would then end the step (the wait rule of `read_identity`)."""
    if since is None:
        return None
    ctx = await host.ensure()
    for page in list(ctx.pages):
        url = _url(page)
        if page.is_closed() or not endpoints.is_site_url(url):
            continue
        origin = await document_origin(page)
        if origin is None or origin <= since:
            continue
        if endpoints.is_login_url(url):
            return origin, baseline.model_copy(update={"personal": IdentityKind.NOT_OBSERVED, "personal_name": None})
        try:
            shown = read_header_identity(await page.content())
            load = await page.evaluate(LOAD_STATE_JS)
            entry = await page.evaluate(_ENTRY_JS)
        except PlaywrightError:
            seen.pop(id(page), None)
            continue
        settled = isinstance(load, dict) and load.get("complete") and not load.get("pending")
        if not (settled and shown.ready and shown.personal is not IdentityKind.AUTHENTICATED and isinstance(entry, str)):
            seen.pop(id(page), None)
            continue
        tab, loaded, first = seen.get(id(page), (None, None, None))
        if tab is not page or loaded != origin or first is None:
            seen[id(page)] = (page, origin, now)
        elif now - first >= IDENTITY_SETTLE_SECONDS:
            return origin, shown
    return None


async def proxied_tab(host: BrowserHost, endpoints: Endpoints) -> str | None:
    """The proxy host of an open tab showing CNKI through a library proxy (`Endpoints.proxied_host`)."""
    ctx = await host.ensure()
    for page in list(ctx.pages):
        found = None if page.is_closed() else endpoints.proxied_host(_url(page))
        if found is not None:
            return found
    return None


@dataclass(slots=True)
class LoginWatch:
    """The `HumanPage` of a login step: LOGIN until some CNKI tab loaded or changed since the
    step began shows a positive identity.

    The gate polls `inspect()` at its own pace; the tabs are read at most every
    `interval` seconds, between reads the last answer stands."""

    inner: PlaywrightHumanPage
    clock: Clock
    interval: float = TAB_POLL_SECONDS
    found: HeaderIdentity | None = None
    baseline: HeaderIdentity | None = None  # force: who the site said was logged in at the start
    since: TabsBefore | None = None
    opened: float | None = None  # force: when the login tab was opened (the browser's clock)
    # A tab shows CNKI under a library proxy's host (WebVPN, EZproxy): the product cannot use
    # that login, so the step ends and `login` says so (site-rules.md §2.6).
    proxied: str | None = None
    out_seen: OutSeen = field(default_factory=dict)  # force: pages read logged out (`logged_out`)
    reads: int = 0
    _last_read: float | None = field(default=None)

    async def scan(self) -> HeaderIdentity | None:
        if self.baseline is not None and self.baseline.personal is IdentityKind.AUTHENTICATED:
            out = await logged_out(
                self.inner.host, self.inner.endpoints, self.baseline, self.opened, self.out_seen, self.clock.monotonic()
            )
            if out is not None:
                # Seen logged out: logging in again, as the same account too, ends the step (it
                # waited its 20 minutes, every request held behind it, for another identity);
                # only a page loaded after the logout counts, not one still showing the old login.
                self.since, self.baseline = TabsBefore(out[0]), out[1]
        found = await scan_tabs(self.inner.host, self.inner.endpoints, unlike=self.baseline, since=self.since)
        # seen live during the step: dated now
        return found.model_copy(update={"observed_at": self.clock.now()}) if found is not None else None

    async def inspect(self) -> PageState:
        now = self.clock.monotonic()
        if self.found is None and (self._last_read is None or now - self._last_read >= self.interval):
            self._last_read = now
            self.reads += 1
            self.found = await self.scan()
            if self.found is None:
                self.proxied = await proxied_tab(self.inner.host, self.inner.endpoints)
        if self.found is not None or self.proxied is not None:
            return PageState(PageKind.CLEAR)
        if self.inner.page.is_closed():
            # The person closed the login tab: the step ends, as any step's does when its tab
            # is closed (DESIGN.md "The shared search page"), and `run` reports who the site
            # shows now. It waited its 20 minutes holding every request of every operation.
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
            before = await tabs_before(self.host, self.endpoints, page)
            live = await self._open(page, remote_access_url, op, read_first=force)
            watch = LoginWatch(
                PlaywrightHumanPage(self.host, page, self.endpoints, "login"),
                self.clock,
                interval=self.poll_interval,
                since=before,
            )
            if force:
                # Switching accounts: who the site says is logged in now does not end the step
                # until the person is seen logged out (`logged_out`).
                watch.baseline = live
                watch.opened = await browser_now(page)
            else:
                # The entry page itself may already show who we are (an institution by IP).
                watch.found = await watch.scan()
            if watch.found is None:
                alone = headless_login_tool_message(op.operation_id if op is not None else None)
                await self.gate.handle("login", watch, op, "wait", headless_message=alone)
            identity = watch.found or await scan_tabs(self.host, self.endpoints, since=before)
            proxy = watch.proxied or await proxied_tab(self.host, self.endpoints)
            if identity is None and proxy is not None:
                # It waited for `resume`, then read cnki.net directly: nobody, and its advice was
                # to log in again, which the person had just done in the proxy.
                raise proxy_unsupported(proxy)
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

    async def _open(
        self, page: Page, remote_access_url: str | None, op: SiteOp | None, *, read_first: bool = False
    ) -> HeaderIdentity | None:
        """Navigate the login tab: the remote-access URL as given, else AdvSearch and its entry.
        `read_first`: who AdvSearch shows before the entry is followed (the live session), else None."""
        target = remote_access_url or self.endpoints.adv_search
        proxy = self.endpoints.proxied_host(remote_access_url)
        if proxy is not None:
            raise proxy_unsupported(proxy)
        try:
            async with self.limiter.slot(budget=op):
                await page.goto(target, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS)
        except PlaywrightError as exc:
            if self.host.note_error(exc):
                raise BrowserUnavailable("浏览器连接已断开", reason=error_reason(exc)) from exc
            reason = error_reason(exc, first_line=True)
            unreachable = unsent_net_error(exc)
            known = network_cause(reason)
            if known is not None and remote_access_url is None and (unreachable or known[1] in PERSON_ENDS_CAUSES):
                # CNKI not reached for a cause the person must end (the proxy, TLS under a captive
                # portal): said as any page's (`unreachable`: not retryable), not a browser error
                # page the person would look at for 20 minutes
                raise unreachable_error(known[0], known, reason=reason, url=without_query(target)) from exc
            if unreachable is not None:
                # No connection was made (DNS, refused, offline, proxy): the person would wait
                # 20 minutes before a browser error page, and a headless one cannot even see it.
                raise SiteUnavailable(
                    f"无法打开登录页 {urlsplit(target).hostname}（{unreachable}）：请检查地址、网络或 VPN 后重试",
                    reason=reason,
                    net_error=unreachable,
                    url=without_query(target),
                ) from exc
            log.info("login page did not finish loading: %s", reason)
            return None
        if remote_access_url is not None:
            return None
        live = await read_identity(page, self.clock) if read_first else None
        try:
            entry = await page.evaluate(_ENTRY_JS)
        except PlaywrightError:
            entry = None
        if not isinstance(entry, str) or not self.endpoints.is_site_url(entry):
            return live  # already logged in, or no entry: the person uses the page as it is
        try:
            async with self.limiter.slot(budget=op):
                await page.goto(entry, wait_until="domcontentloaded", timeout=ENTRY_TIMEOUT_MS)
        except PlaywrightError as exc:
            if self.host.note_error(exc):
                raise BrowserUnavailable("浏览器连接已断开", reason=error_reason(exc)) from exc
            log.info("login entry did not finish loading: %s", error_reason(exc, first_line=True))
        return live

    async def _read_after(self, page: Page, op: SiteOp | None) -> HeaderIdentity:
        """The header of the login tab once it is back on a CNKI page, else of AdvSearch. A login tab
        the person closed is replaced by a tab of its own, never the work tab: navigating that one
        would destroy the in-page requests a search has in flight there (DESIGN.md "The shared
        search page")."""
        if not page.is_closed():
            return await self._read_on(page, op)
        own = await self.host.new_page()
        try:
            return await self._read_on(own, op)
        finally:
            with contextlib.suppress(PlaywrightError):
                await own.close()

    async def _read_on(self, page: Page, op: SiteOp | None) -> HeaderIdentity:
        url = _url(page)
        if not self.endpoints.is_site_url(url) or self.endpoints.is_login_url(url):
            async with self.limiter.slot(budget=op):
                with contextlib.suppress(PlaywrightError):
                    await page.goto(
                        self.endpoints.adv_search, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS
                    )
        return await read_identity(page, self.clock)
