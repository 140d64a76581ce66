"""How `CnkiSite` gets a person past a page (DESIGN.md "Challenges, blocks and sessions"): the page a
request met is put in front of the person (the grid's vericodeForm drawn in the search page, or the
URL the site named) and the human gate runs one step. One step shows one page: requests that met
the same verification while it is being shown or solved wait for that step and show nothing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, Response

from cnki_mcp.clock import Clock
from cnki_mcp.errors import SiteUnavailable, VerificationContextUnavailable, VerificationSkipped
from cnki_mcp.session_identity import IdentityMemory
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.deadline import CALL_SECONDS, BrowserStalled, bounded, close_tab
from cnki_mcp.site.endpoints import Endpoints, same_url
from cnki_mcp.site.human import HumanGate, StepKind
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.navigation import NAV_TIMEOUT_MS
from cnki_mcp.site.page_lease import PageLease
from cnki_mcp.site.page_scripts import SHOW_FRAGMENT_JS
from cnki_mcp.site.pages import PlaywrightHumanPage
from cnki_mcp.site.transport import Fetched, transport_unavailable

log = logging.getLogger("cnki_mcp.site.cnki")  # the same logger as CnkiSite's own messages



class HumanNeeded(Exception):
    """A page a person must get past. `url`: where to show it (None: already on `page`);
    `fragment`: the grid's vericodeForm (its HTML, the QueryJson) to draw into `page`'s #briefBox;
    `returns_to`: see below."""

    def __init__(
        self,
        kind: StepKind,
        error: Exception,
        page: Page | None = None,
        url: str | None = None,
        fragment: tuple[str, str] | None = None,
        returns_to: str | None = None,
    ):
        super().__init__(str(error))
        self.kind = kind
        self.error = error
        self.page = page
        self.url = url
        self.fragment = fragment
        # the URL the request asked for, when the site sends the person's tab back there after
        # the step (a slider's returnUrl): that answer is kept, so the request is not sent again
        self.returns_to = returns_to


class PersonSteps:
    """Mixed into `CnkiSite`, which owns the browser host, the gate, the limiter and this state."""

    endpoints: Endpoints
    _host: BrowserHost
    _gate: HumanGate
    _limiter: Limiter
    _step_pages: list[Page]  # tabs opened to show a page to the person
    _work_lease: PageLease
    _showing: asyncio.Future[None] | None  # a request is putting its page before the person
    _click_drawn: asyncio.Future[None] | None  # the capture click's own answer drawn
    _identities: IdentityMemory | None  # the identity this run last saw (session_identity.py)
    _clock: Clock

    def note_login_wall(self) -> None:
        """A request met CNKI's login page: the identity this run remembers is not logged in."""
        if self._identities is not None:
            self._identities.login_wall()

    async def note_login_step_over(self, human: PlaywrightHumanPage) -> None:
        """A login step this run's requests met is over: what a CNKI tab loaded since shows
        replaces the login wall noted when it opened (session_identity.py `login_step_over`)."""
        if self._identities is not None:
            self._identities.login_step_over(await human.identity_since_shown(self._clock))

    @staticmethod
    async def _draw_click_answer(page: Page, request: Any) -> None:
        """The search page draws its own click's answer into #briefBox when it arrives, whenever
        that is: a verification form the product puts there before would be overwritten, and the
        person would be asked to solve a form that is gone (seen under load). Settled once the
        answer's body arrived and the page ran the tasks queued behind it."""
        try:
            response = await request.response()
            if response is not None:
                await response.finished()
            await page.evaluate("() => new Promise(r => setTimeout(() => setTimeout(r, 0), 0))")
        except PlaywrightError:
            return  # page gone or navigated: nothing of the click can overwrite the box any more

    async def _click_answer_drawn(self) -> None:
        """Wait (bounded) until the capture click's own answer is drawn (`_draw_click_answer`)."""
        if self._click_drawn is None or self._click_drawn.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._click_drawn), CALL_SECONDS)
        except TimeoutError:
            log.debug("the capture click's answer was not drawn in %s s", CALL_SECONDS)

    async def _person_step(
        self, need: HumanNeeded, op: SiteOp | None, epoch: int, *, lease_held: bool = False
    ) -> Fetched | None:
        """Get the person past the page `need` met, sent when the gate's epoch was `epoch`. One
        human step shows one page: requests that met the same verification while it is shown, or
        before it was solved, wait for that step (or retry at once) and show nothing of their own.
        `lease_held`: the caller holds the work tab's lease exclusive already (a capture).
        Returns the answer the site sent the person's tab back to (`need.returns_to`), if any."""
        if need.kind == "login":
            self.note_login_wall()
        if skips(op):
            # on_verification skip: the gated page is recorded (the error, with what it was) and
            # skipped; nothing is opened, navigated or charged for it (docs/reliability.md).
            if need.page is not None:
                await self._close_step_page(need.page)
            raise VerificationSkipped(gate=need.kind, **gate_details(need.error)) from need.error
        while (showing := self._showing) is not None:
            await asyncio.shield(showing)
        if self._gate.epoch > epoch or self._gate.active:
            # A step ended since this request was sent (the page it met was that step's) or one is
            # open: the request waits for it (or retries at once); its own page is never shown.
            if need.page is not None:
                await self._close_step_page(need.page)
            await self._human_step(need.kind, await self._host.work_page(), op, epoch)
            return None
        showing = asyncio.get_running_loop().create_future()
        self._showing = showing

        def opened() -> None:
            if self._showing is showing:
                self._showing = None
            if not showing.done():
                showing.set_result(None)

        page = need.page
        back: list[Response] = []
        listening: Page | None = None

        def on_response(response: Response) -> None:
            if need.returns_to is not None and response.status == 200 and same_url(response.url, need.returns_to):
                back.append(response)

        try:
            on_work = page is not None and page is await self._host.work_page()
            async with self._work_lease.exclusive() if on_work and not lease_held else contextlib.nullcontext():
                page = await self._show(need, op)
                listening = page
                page.on("response", on_response)
                await self._human_step(need.kind, page, op, epoch, opened)
            return await _answer(back[-1]) if back else None
        finally:
            opened()
            if listening is not None:
                with contextlib.suppress(Exception):  # a closed page, a listener gone with it
                    listening.remove_listener("response", on_response)
            if page is not None:
                await self._close_step_page(page)

    async def _show(self, need: HumanNeeded, op: SiteOp | None) -> Page:
        """Put the page `need` met in front of the person: the grid's vericodeForm drawn in the
        search page, or the URL the site named (in `need.page`, else a tab of its own)."""
        if need.fragment is not None and need.page is not None:
            html, query_json = need.fragment
            await self._click_answer_drawn()  # else the page's own answer may overwrite the form
            try:
                shown = await bounded(
                    need.page.evaluate(SHOW_FRAGMENT_JS, {"html": html, "queryJson": query_json}),
                    CALL_SECONDS,
                    "verification fragment",
                )
            except (PlaywrightError, BrowserStalled) as exc:
                if isinstance(exc, PlaywrightError):
                    self._host.note_error(exc)
                raise transport_unavailable(exc) from exc
            if not shown:
                raise VerificationContextUnavailable(reason="no #briefBox")
            return need.page
        if need.url is not None:
            return await self._show_url(need.url, need.page, op)
        assert need.page is not None
        return need.page

    async def _show_url(self, url: str, page: Page | None, op: SiteOp | None) -> Page:
        """Navigate `page` (or a new tab) to `url` for the person."""
        if page is None or page.is_closed():
            try:
                page = await bounded(self._host.new_page(), CALL_SECONDS, "new tab")
            except BrowserStalled as exc:
                raise SiteUnavailable(reason=str(exc)) from exc
            self._step_pages.append(page)
        try:
            async with self._limiter.slot(budget=op):
                await page.goto(url, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS)
        except PlaywrightError as exc:
            if self._host.note_error(exc):
                raise transport_unavailable(exc) from exc
            log.debug("navigation for a human step did not finish: %s", exc)
        return page

    async def _close_step_page(self, page: Page) -> None:
        """A tab opened only to show a page to the person is closed once the step is over."""
        if page in self._step_pages:
            self._step_pages.remove(page)
            await close_tab(page)

    async def _human_step(
        self, kind: StepKind, page: Page, op: SiteOp | None, epoch: int, opened: Callable[[], None] | None = None
    ) -> None:
        if kind == "login":
            self.note_login_wall()
        policy = op.on_verification if op is not None else "wait"
        human = PlaywrightHumanPage(self._host, page, self.endpoints, kind, in_step=True)
        await self._gate.handle(kind, human, op, "skip" if policy == "skip" else "wait", epoch=epoch, opened=opened)
        if kind == "login":
            await self.note_login_step_over(human)


async def _answer(response: Response) -> Fetched | None:
    """The body of the answer the person's tab came back to; None when it cannot be read."""
    try:
        text = await bounded(response.text(), CALL_SECONDS, "returned answer")
    except (PlaywrightError, BrowserStalled, UnicodeDecodeError):
        return None
    return Fetched(response.status, response.url, text)


def skips(op: SiteOp | None) -> bool:
    """The operation asked to skip pages a person would have to get past (on_verification skip)."""
    return op is not None and op.on_verification == "skip"


def gate_details(error: Exception) -> dict[str, Any]:
    return dict(getattr(error, "details", {}) or {})
