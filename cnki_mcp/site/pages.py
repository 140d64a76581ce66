"""Live-page views for the site layer: the human-step page (`PlaywrightHumanPage`, site-rules.md §2.5/§2.6
markers evaluated in the live DOM) and header-identity reading with the §2.6 waiting rules."""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, Response

from cnki_mcp.clock import Clock
from cnki_mcp.errors import CnkiError, RemoteAccessUnsupported
from cnki_mcp.models import GateVerdict, HeaderIdentity, IdentityKind
from cnki_mcp.parse.gate import classify_page, read_header_identity
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.deadline import CALL_SECONDS, BrowserStalled, bounded
from cnki_mcp.site.endpoints import Endpoints, error_reason
from cnki_mcp.site.human import PageKind, PageState, StepKind

log = logging.getLogger(__name__)

# The HTTP status of a tab's document (0: none yet, about:blank, or a navigation that became a download)
DOCUMENT_STATUS_JS = "() => { const e = performance.getEntriesByType('navigation')[0]; return e && e.responseStatus ? e.responseStatus : 0 }"


async def document_status(page: Page) -> int:
    """The HTTP status the tab's current document came with (0 when the browser does not say)."""
    try:
        return int(await page.evaluate(DOCUMENT_STATUS_JS) or 0)
    except (PlaywrightError, TypeError, ValueError):
        return 0


# Shared by both scripts: "visible" = non-zero size, inside the viewport, and no ancestor with
# display:none, visibility:hidden or opacity:0 (site-rules.md §2.5).
_VISIBLE_JS = """
const visible = (el) => {
  if (!el) return false;
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return false;
  if (r.right <= 0 || r.bottom <= 0 || r.left >= innerWidth || r.top >= innerHeight) return false;
  for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
    const s = getComputedStyle(n);
    if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
  }
  return true;
};
const anyVisible = (sel) => Array.from(document.querySelectorAll(sel)).some(visible);
"""

# site-rules.md §2.5 challenge markers and §2.6 login markers, read from the live page.
INSPECT_JS = (
    "() => {"
    + _VISIBLE_JS
    + """
  let challenge = null;
  for (const f of document.querySelectorAll('iframe')) {
    const probe = (f.getAttribute('src') || '') + ' ' + (f.getAttribute('title') || '');
    if (/captcha|verify/i.test(probe) && visible(f)) { challenge = 'iframe captcha/verify'; break; }
  }
  if (!challenge) {
    for (const sel of ['#tCaptchaDyMainWrap', '.captcha-dialog', '.geetest_panel',
                       '[id^=nc_][id$=_wrapper]', '.tcaptcha-transform']) {
      if (anyVisible(sel)) { challenge = sel; break; }
    }
  }
  if (!challenge) {
    const box = document.querySelector('.read-btn-boxXml');
    if (box && anyVisible('.read-btn-boxXml .slider-wrapper') && /滑动验证|继续阅读全文/.test(box.textContent || ''))
      challenge = '.read-btn-boxXml .slider-wrapper';
  }
  if (!challenge && anyVisible('.verifycode #vericode') && anyVisible('.verifycode #changeVercode'))
    challenge = '.verifycode #vericode';
  if (!challenge && (document.title || '').trim() === '安全验证') challenge = 'title 安全验证';
  const password = anyVisible('input[type=password]');
  const loginFrame = Array.from(document.querySelectorAll('iframe')).some(
    (f) => /login|passport|sso/i.test(f.getAttribute('src') || '') && visible(f));
  return {challenge, password, loginFrame, readyState: document.readyState, url: location.href};
}"""
)

# site-rules.md §2.6: page completeness and pending XHR (jQuery.active) for the identity waiting rule.
LOAD_STATE_JS = """() => ({complete: document.readyState === 'complete',
  pending: !!(window.jQuery && window.jQuery.active)})"""
_ORIGIN_JS = "() => performance.timeOrigin"
_AGE_JS = "() => performance.now()"  # ms since the document began loading

IDENTITY_SETTLE_SECONDS = 0.75
IDENTITY_MAX_SECONDS = 12.0
IDENTITY_POLL_SECONDS = 0.15


def _page_url(page: Page) -> str:
    try:
        return page.url
    except PlaywrightError:
        return ""


def proxy_unsupported(proxy: str) -> RemoteAccessUnsupported:
    return RemoteAccessUnsupported(
        f"知网页面经图书馆代理（WebVPN / EZproxy）在 {proxy} 下打开；本服务的请求直接发往 cnki.net，"
        "不经过代理，用不到代理中的机构权限。可用：校园网或学校 VPN 客户端（本机取得校园 IP，知网按 IP 识别机构）、"
        "知网登录页的机构账号或 CARSI（高校统一身份认证）、个人账号；再调用 login",
        proxy_host=proxy,
    )


def _elsewhere(endpoints: Endpoints, url: str) -> bool:
    """A web page off CNKI's hosts (not about:blank, not the browser's own error page)."""
    return url.startswith(("https://", "http://")) and not endpoints.is_site_url(url)


def positive(identity: HeaderIdentity) -> bool:
    return identity.personal is IdentityKind.AUTHENTICATED or bool(identity.institutions)


@dataclass(slots=True)
class PlaywrightHumanPage:
    """`HumanPage` over one live tab. For a login step every open CNKI tab is also checked: people
    often finish logging in on a tab the site opened (site-rules.md §2.6, §11.1)."""

    host: BrowserHost
    page: Page
    endpoints: Endpoints
    kind: StepKind = "challenge"
    shown_since: float | None = None  # login: when the login page's document began loading
    exits_seen: int = -1  # challenge: the host's slider exits before the step (`__post_init__`)
    # The page a human step polls (not a tab being looked at for a login page): during a login
    # step a page off CNKI's hosts is the person logging in elsewhere (site-rules.md §2.6).
    in_step: bool = False

    def __post_init__(self) -> None:
        self.exits_seen = len(self.host.verify_exits())

    async def _state_of(self, page: Page) -> PageState:
        data: dict[str, Any] = await page.evaluate(INSPECT_JS)
        ready = data.get("readyState") != "loading"
        if data.get("challenge"):
            return PageState(PageKind.CHALLENGE, ready=ready)
        url = str(data.get("url") or "")
        if (self.endpoints.is_login_url(url) and data.get("password")) or data.get("loginFrame"):
            return PageState(PageKind.LOGIN, ready=ready)
        if self.kind == "login" and self.in_step and (proxy := self.endpoints.proxied_host(url)) is not None:
            # WebVPN / EZproxy: the tab never comes back to cnki.net, and a login there does not
            # reach this server's requests; the step waited out its 20 minutes
            return PageState(PageKind.LOGIN, ready=ready, error=proxy_unsupported(proxy))
        if self.kind == "login" and self.in_step and _elsewhere(self.endpoints, url):
            # CARSI / 高校统一身份认证: CNKI's login page sent the tab to a WAYF page or the
            # university's identity provider, which sends it back once the person logged in. Read
            # as clear, the step ended there and its tab was closed under the person typing.
            return PageState(PageKind.LOGIN, ready=ready)
        return PageState(PageKind.CLEAR, ready=ready)

    async def inspect(self) -> PageState:
        if self.page.is_closed():
            # The person closed the tab: the retry that follows shows whether it was solved, and
            # meets the login wall or the slider again (a new page shown) when it was not. A login
            # tab closed unsolved kept the step waiting 20 minutes on a page no longer there.
            return PageState(PageKind.CLEAR)
        if self.kind == "login" and self.shown_since is None:
            self.shown_since = await document_origin(self.page)
        state = await self._state_of(self.page)
        if self.kind == "login" and state.kind is PageKind.LOGIN and await self._logged_in_elsewhere():
            return PageState(PageKind.CLEAR)
        if state.kind is PageKind.CHALLENGE and self._verified_elsewhere():
            return PageState(PageKind.CLEAR)
        return state

    def _verified_elsewhere(self) -> bool:
        """This is CNKI's slider page and, since the step began, another tab left a slider page
        for a CNKI page: the person solved a slider there (their own tab met one too), which
        verifies the browser, so the retry goes through. The shown slider stayed up and kept the
        step waiting until it was closed or reloaded. A tab that left the slider unsolved for a
        page CNKI does not gate costs one retry, which meets the slider again in a new step."""
        if not self.endpoints.is_verify_url(_page_url(self.page)):
            return False
        return any(tab is not self.page for tab in self.host.verify_exits(self.exits_seen))

    async def _logged_in_elsewhere(self) -> bool:
        """Another CNKI tab loaded after this login page shows a person logged in. A tab loaded
        before it proves nothing: the site drops logins without telling the pages it served."""
        if self.shown_since is None:
            return False
        ctx = await self.host.ensure()
        for other in list(ctx.pages):
            url = _page_url(other)
            if other is self.page or other.is_closed() or not self.endpoints.is_site_url(url):
                continue
            if self.endpoints.is_login_url(url):
                continue
            origin = await document_origin(other)
            if origin is None or origin <= self.shown_since:
                continue
            try:
                identity = read_header_identity(await other.content())
            except PlaywrightError:
                continue
            if identity.personal is IdentityKind.AUTHENTICATED:
                return True
        return False

    async def identity_since_shown(self, clock: Clock) -> HeaderIdentity | None:
        """Login: the first positive identity a CNKI tab (this one included) shows on a page loaded
        after the login page was shown, dated when that page loaded; None when none shows one."""
        if self.kind != "login" or self.shown_since is None:
            return None
        ctx = await self.host.ensure()
        for tab in list(ctx.pages):
            url = _page_url(tab)
            if tab.is_closed() or not self.endpoints.is_site_url(url) or self.endpoints.is_login_url(url):
                continue
            origin = await document_origin(tab)
            if origin is None or origin <= self.shown_since:
                continue
            try:
                identity = read_header_identity(await tab.content())
            except PlaywrightError:
                continue
            if positive(identity):
                return await dated(tab, clock, identity)
        return None

    async def show(self) -> None:
        if not self.page.is_closed():
            await self.host.show(self.page)

    async def minimise(self) -> None:
        await self.host.minimise(None if self.page.is_closed() else self.page)


async def document_origin(page: Page) -> float | None:
    """When the page's document began loading (`performance.timeOrigin`, ms on the browser's
    clock); None when the page cannot answer (mid-navigation, closed)."""
    try:
        value = await page.evaluate(_ORIGIN_JS)
    except PlaywrightError:
        return None
    return float(value) if isinstance(value, (int, float)) else None


async def dated(page: Page, clock: Clock, identity: HeaderIdentity) -> HeaderIdentity:
    """`identity` with `observed_at` = when `page`'s document was loaded (now if it cannot say):
    a header read again from an old page is as old as the page (site-rules.md §2.6)."""
    try:
        age_ms = await page.evaluate(_AGE_JS)
    except PlaywrightError:
        age_ms = None
    at = clock.now()
    if isinstance(age_ms, (int, float)) and age_ms > 0:
        at -= _dt.timedelta(milliseconds=float(age_ms))
    return identity.model_copy(update={"observed_at": at})


async def read_identity(
    page: Page,
    clock: Clock,
    *,
    settle: float = IDENTITY_SETTLE_SECONDS,
    limit: float = IDENTITY_MAX_SECONDS,
    poll: float = IDENTITY_POLL_SECONDS,
) -> HeaderIdentity:
    """The kns header identity with the site-rules.md §2.6 waiting rules: a positive identity at once;
    "not logged in" only once the header is ready and the page complete and idle for `settle`
    seconds; after `limit` seconds the last reading is returned as it is. Dated by `dated`."""
    return await dated(page, clock, await _read_header(page, clock, settle, limit, poll))


async def _read_header(page: Page, clock: Clock, settle: float, limit: float, poll: float) -> HeaderIdentity:
    deadline = clock.monotonic() + limit
    quiet_since: float | None = None
    last = HeaderIdentity(ready=False)
    while True:
        now = clock.monotonic()
        with contextlib.suppress(PlaywrightError):  # mid-navigation: read again
            last = read_header_identity(await page.content())
            if positive(last):
                return last
            load = await page.evaluate(LOAD_STATE_JS)
            if last.ready and load.get("complete") and not load.get("pending"):
                quiet_since = now if quiet_since is None else quiet_since
                if now - quiet_since >= settle:
                    return last
            else:
                quiet_since = None
        if now >= deadline:
            return last
        await clock.sleep(min(poll, max(0.0, deadline - now)))


async def answered_page(
    page: Page, response: Response | None, failure: Callable[..., CnkiError]
) -> tuple[str, GateVerdict]:
    """The page a navigation of `page` answered (`response`; None: 200), read within CALL_SECONDS
    and classified with its status: (html, verdict). A browser that does not give the page is
    `failure(reason=…)` (`error_reason`: the first line, no URL query)."""
    status = response.status if response is not None else 200
    try:
        html = await bounded(page.content(), CALL_SECONDS, "page content")
    except (PlaywrightError, BrowserStalled) as exc:
        if status < 400:
            raise failure(reason=error_reason(exc, first_line=True)) from exc
        # an error status without a body (the CDN's 418): the tab is moving to Chromium's own
        # error page, and the status alone says what the answer is (`goto_or_cut`)
        html = ""
    return html, classify_page(html, page.url, status)
