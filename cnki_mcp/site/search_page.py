"""How `CnkiSite` comes to CNKI's search page (site-rules.md §1.2): through the home page when the
browser holds no guest session, to AdvSearch with a person past a challenge, and the grid template
captured from the search button's own request. A mixin of `CnkiSite`, which owns the browser host,
the limiter, the gate and the work tab's lease."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from cnki_mcp.errors import (
    CnkiError,
    LoginRequired,
    QueryTemplateUnavailable,
    SiteUnavailable,
    VerificationContextUnavailable,
    VerificationRepeated,
    VerificationRequired,
)
from cnki_mcp.models import GateKind
from cnki_mcp.parse.gate import challenge_url, raise_for_verdict
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.deadline import CALL_SECONDS, BrowserStalled, bounded
from cnki_mcp.site.endpoints import (
    GRID_PATH_MARK,
    SESSION_COOKIES,
    Endpoints,
    error_reason,
    network_cause,
    unreachable,
)
from cnki_mcp.site.grid_template import GridTemplate, parse_template
from cnki_mcp.site.human import HumanGate, StepKind
from cnki_mcp.site.limiter import Limiter, Priority
from cnki_mcp.site.navigation import MAX_ATTEMPTS, NAV_TIMEOUT_MS, goto_or_cut
from cnki_mcp.site.page_lease import PageLease
from cnki_mcp.site.page_scripts import FILL_JS, READY_JS
from cnki_mcp.site.pages import answered_page
from cnki_mcp.site.person import HumanNeeded
from cnki_mcp.site.transport import Fetched, TransportError

log = logging.getLogger("cnki_mcp.site.cnki")  # the same logger as CnkiSite's own messages

READY_TIMEOUT_MS = 20_000  # site-rules.md §1.2: AdvSearch must be usable within 20 s
CAPTURE_TIMEOUT_MS = 30_000  # site-rules.md §1.2: the grid POST must follow the click within 30 s
_NET_ERROR = re.compile(r"net::ERR_[A-Z_]+")


@dataclass(slots=True)
class Captured:
    template: GridTemplate
    generation: int


def navigation_failure(exc: PlaywrightError) -> CnkiError:
    """What a failed navigation to the search page is. The network not reaching CNKI (offline,
    DNS, refused, timed out: `net::ERR_…` or a navigation timeout) is SITE_UNAVAILABLE, as the
    same failure of any other request is; it was QUERY_TEMPLATE_UNAVAILABLE ("未能从高级检索页捕获
    检索请求") with the browser's text. Anything else stays a capture failure."""
    reason = error_reason(exc, first_line=True)
    net = _NET_ERROR.search(reason)
    if net is None and not isinstance(exc, PlaywrightTimeout):
        return QueryTemplateUnavailable(reason=reason)
    what = net.group(0) if net is not None else "打开页面超时"
    known = network_cause(reason)
    if known is not None:
        return unreachable(what, known, reason=reason, network=True)
    return SiteUnavailable(
        f"无法连接知网（{what}）：请检查网络连接、代理或 VPN 后稍后再调用", reason=reason, network=True
    )


class SearchPage:
    """Mixed into `CnkiSite`, which owns the browser host, the limiter, the gate, the work tab's
    lease and the captured template."""

    endpoints: Endpoints
    _host: BrowserHost
    _limiter: Limiter
    _gate: HumanGate
    _work_lease: PageLease
    _captured: Captured | None
    _capture_lock: asyncio.Lock
    _click_drawn: asyncio.Future[None] | None  # the capture click's own answer drawn

    if TYPE_CHECKING:  # provided by CnkiSite's PersonSteps; declared for the type checker only

        @staticmethod
        async def _draw_click_answer(page: Page, request: Any) -> None: ...

        async def _person_step(
            self, need: HumanNeeded, op: SiteOp | None, epoch: int, *, lease_held: bool = False
        ) -> Fetched | None: ...

    # --- template capture (site-rules.md §1.2) --------------------------------------------------

    def drop_template(self) -> None:
        """Forget the template: the next grid call captures it again."""
        self._captured = None

    async def _template(self, anchor: str, op: SiteOp | None) -> tuple[GridTemplate, Page]:
        async with self._gate.behind_step(op, self._capture_lock, self._capture_lock.locked()):
            page = await self._host.work_page()
            cap = self._captured
            if (
                cap is not None
                and cap.generation == self._host.generation
                and self._same_origin(page.url, cap.template.url)
            ):
                return cap.template, page
            lease = self._work_lease
            async with self._gate.behind_step(op, lease.exclusive(), lease.exclusive_busy):
                page = await self._host.work_page()
                template = await self._capture(page, anchor, op)
            self._captured = Captured(template, self._host.generation)
            return template, page

    @staticmethod
    def _same_origin(a: str, b: str) -> bool:
        from urllib.parse import urlsplit

        pa, pb = urlsplit(a), urlsplit(b)
        return (pa.scheme, pa.netloc) == (pb.scheme, pb.netloc)

    async def _capture(self, page: Page, anchor: str, op: SiteOp | None) -> GridTemplate:
        await self._open_search_page(page, op)
        try:
            await page.wait_for_function(READY_JS, timeout=READY_TIMEOUT_MS)
            state = await bounded(page.evaluate(FILL_JS, anchor), CALL_SECONDS, "search form")
            if not state.get("boxes"):
                raise QueryTemplateUnavailable("高级检索页没有可见的检索框")
            if state.get("enChecked"):
                # CNKI's bilingual expansion is opaque: turned off (site-rules.md §1.2).
                await page.locator("input[data-id=EN]").first.click()
            button = page.locator("input.btn-search,button.btn-search").first

            def is_grid(req: Any) -> bool:
                return req.method == "POST" and GRID_PATH_MARK in req.url

            # The click itself is a request start: it goes through the limiter.
            async with (
                page.expect_request(is_grid, timeout=CAPTURE_TIMEOUT_MS) as info,
                self._limiter.slot(budget=op, priority=Priority.CHAIN),
            ):
                await button.click(timeout=10_000)  # a real mouse click at the element centre
            request = await info.value
            self._click_drawn = asyncio.ensure_future(self._draw_click_answer(page, request))
        except (PlaywrightTimeout, BrowserStalled) as exc:
            raise QueryTemplateUnavailable(reason=error_reason(exc, first_line=True)) from exc
        except PlaywrightError as exc:
            self._host.note_error(exc)
            raise QueryTemplateUnavailable(reason=error_reason(exc, first_line=True)) from exc
        return parse_template(request.url, request.post_data)

    async def _first_visit(self, page: Page, op: SiteOp | None, *, force: bool = False) -> None:
        """A browser without CNKI's guest session comes in through the home page first, as a person
        does: the home page plants the session, while a kns8s page opened without it redirects to
        the slider (docs/simulator.md "Challenges, blocks and sessions"). A profile whose session
        cookies were saved and restored (site/browser.py) goes straight on, unless `force`."""
        if not force and await self._has_session(page) is not False:
            return
        try:
            async with self._limiter.slot(budget=op, priority=Priority.CHAIN):
                await page.goto(
                    self.endpoints.www_home, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS
                )
        except PlaywrightError as exc:  # AdvSearch comes next and tells what is wrong
            self._host.note_error(exc)
            log.debug("home page visit failed: %s", error_reason(exc, first_line=True))

    async def _has_session(self, page: Page) -> bool | None:
        """Whether the browser holds CNKI's guest session cookie (None: the browser did not say).
        A browser that does not answer (wedged, frozen) is a transport failure: the grid's retry
        recovers the browser; the search waited here until its watchdog (900 s)."""
        try:
            cookies = list(
                await bounded(page.context.cookies(self.endpoints.adv_search), CALL_SECONDS, "cookies")
            )
        except PlaywrightError as exc:
            self._host.note_error(exc)
            return None
        except BrowserStalled as exc:
            raise TransportError(str(exc)) from exc
        return any(c.get("name") in SESSION_COOKIES for c in cookies)

    async def _open_search_page(self, page: Page, op: SiteOp | None) -> None:
        """Navigate `page` to AdvSearch (one limited request), getting a person past a challenge."""
        await self._first_visit(page, op)
        renewed = cut = False
        for _ in range(MAX_ATTEMPTS):
            epoch = self._gate.epoch
            try:
                async with self._limiter.slot(budget=op, priority=Priority.CHAIN):
                    response = await goto_or_cut(page, self.endpoints.adv_search)
            except SiteUnavailable as exc:
                # the page's answer broke off: asked once more (it waited 30 s, then failed the
                # search); cut again, the site is failing (SITE_UNAVAILABLE, as for any page cut short)
                if cut or not exc.details.get("cut_short"):
                    raise
                cut = True
                self._limiter.slow()
                continue
            except PlaywrightError as exc:
                self._host.note_error(exc)
                raise navigation_failure(exc) from exc
            html, verdict = await answered_page(page, response, QueryTemplateUnavailable)
            named = challenge_url(html) if verdict.kind is GateKind.CHALLENGE else None
            if verdict.kind is GateKind.CHALLENGE and not renewed and named is None:
                # A guest session the site no longer honours (a restored cookie) also sends AdvSearch to
                # the slider; a guest visit to the home page plants a new one: tried once before a person.
                # (A -403 answer names the verification the site wants: no home page visit passes it.)
                renewed = True
                await self._first_visit(page, op, force=True)
                continue
            if verdict.kind in (GateKind.CHALLENGE, GateKind.LOGIN):
                if named is not None and not self.endpoints.is_site_url(named):
                    raise VerificationContextUnavailable(reason="verification URL outside CNKI")
                # The search page answered CNKI's -403 JSON (a page, not the slider): the person is
                # shown the slider page it names, in this tab; solved, the site returns to AdvSearch.
                kind: StepKind = "challenge" if verdict.kind is GateKind.CHALLENGE else "login"
                error = VerificationRequired(page="AdvSearch", evidence=verdict.evidence)
                if kind == "login":
                    error = LoginRequired(page="AdvSearch", evidence=verdict.evidence)
                await self._person_step(HumanNeeded(kind, error, page, named), op, epoch, lease_held=True)
                continue
            if verdict.kind in (GateKind.RATE_LIMITED, GateKind.SERVER_ERROR):
                self._limiter.slow()
            raise_for_verdict(verdict)
            return
        raise VerificationRepeated(page="AdvSearch")
