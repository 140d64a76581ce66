"""`CnkiSite`: the Playwright `SiteBackend`. Grid pages replay a request template captured once per
browser session from the real AdvSearch page (site-rules.md §1.2/§1.3) with an in-page fetch; detail and
journal pages are fetched without rendering through CDP `Network.loadNetworkResource` on the work
tab's frame (Chromium's own network stack: its proxy, resolver rules, certificates and cookies; the
context's request API only where the browser lacks that method), with a rendered-tab fallback for
script-drawn pages (§1.5). Every response is classified (§1.4) before a parser sees it; human steps go through the gate; retries follow site-rules.md §1.3."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urlencode, urljoin

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from cnki_mcp.clock import Clock
from cnki_mcp.errors import (
    ContentNotReady,
    DocumentNotFound,
    LocatorExpired,
    LoginRequired,
    PaginationMismatch,
    ParserUnsupported,
    RateLimited,
    ResponseTooLarge,
    SiteTemporarilyEmpty,
    SiteUnavailable,
    VerificationContextUnavailable,
    VerificationRepeated,
    VerificationRequired,
)
from cnki_mcp.identity import RELOCATE_AMBIGUOUS, ambiguous, author_key, title_key
from cnki_mcp.models import DetailPage, ExportRecord, GateKind, GridPage, GridRow, HeaderIdentity, JournalPage
from cnki_mcp.parse._html import body_text, parse_html
from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.export import parse_export
from cnki_mcp.parse.gate import challenge_url, classify_page, raise_for_verdict
from cnki_mcp.parse.grid import parse_grid, parse_grid_head
from cnki_mcp.parse.journal import parse_journal
from cnki_mcp.session_identity import IdentityMemory
from cnki_mcp.settings import Settings
from cnki_mcp.site.backend import FollowOnce, GridFollow, GridRequest, SiteOp
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.citation_fetch import CitationFetching
from cnki_mcp.site.deadline import CALL_SECONDS, BrowserStalled, bounded, close_tab
from cnki_mcp.site.endpoints import (
    Endpoints,
    may_clear,
    network_cause,
    overseas_host,
    overseas_refusal,
    without_query,
)
from cnki_mcp.site.grid_template import (
    CursorCache,
    GridTemplate,
    build_form,
    exact_title_subject,
    fingerprint,
)
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.launch_error import browser_lost, short_of_disk
from cnki_mcp.site.limiter import Limiter, Priority
from cnki_mcp.site.navigation import MAX_ATTEMPTS, goto_or_cut
from cnki_mcp.site.page_apis import block_page_apis, blocked_in_tabs
from cnki_mcp.site.page_lease import PageLease
from cnki_mcp.site.page_scripts import FETCH_JS
from cnki_mcp.site.pages import positive, read_identity
from cnki_mcp.site.person import HumanNeeded as _HumanNeeded
from cnki_mcp.site.person import PersonSteps, skips
from cnki_mcp.site.search_page import Captured, SearchPage
from cnki_mcp.site.transport import (
    FETCH_TIMEOUT_MS,
    MAX_BODY,
    FetchFailures,
    ResourceLoading,
    transport_unavailable,
)
from cnki_mcp.site.transport import Fetched as _Fetched
from cnki_mcp.site.transport import PageChanged as _PageChanged
from cnki_mcp.site.transport import TransportError as _TransportError
from cnki_mcp.site.transport import WorkSession as _WorkSession

log = logging.getLogger(__name__)


T = TypeVar("T")

EXPORT_BATCH = 20  # site-rules.md §9: one ShowExport request names at most 20 records
EXPORT_PATH = "/dm8/api/ShowExport"
RENDER_POLL_SECONDS = 0.1

class CnkiSite(ResourceLoading, CitationFetching, PersonSteps, SearchPage):
    """The Playwright SiteBackend. Nothing starts until the first request; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        host: BrowserHost,
        limiter: Limiter,
        gate: HumanGate,
        *,
        retry_waits: tuple[float, float] = (2.0, 4.0),
        render_timeout: float = 12.0,
        identities: IdentityMemory | None = None,
    ) -> None:
        self._settings = settings
        self._identities = identities
        self._clock = clock
        self._host = host
        self._limiter = limiter
        self._gate = gate
        self._retry_waits = retry_waits
        self._render_timeout = render_timeout
        self.endpoints = Endpoints(settings)
        self._captured: Captured | None = None
        self._capture_lock = asyncio.Lock()
        self._click_drawn: asyncio.Future[None] | None = None  # the capture click's own answer drawn
        self._cursors = CursorCache()
        self._step_pages: list[Page] = []  # tabs opened to show a page to the person
        self._loader: _WorkSession | None = None
        self._loader_lock = asyncio.Lock()
        self._loader_available = True  # False once the browser refused Network.loadNetworkResource
        self._work_lease = PageLease()  # in-page requests share the work tab; navigations wait for them
        self._showing: asyncio.Future[None] | None = None  # a request is putting its page before the person

    # --- introspection ----------------------------------------------------------------

    @property
    def template(self) -> GridTemplate | None:
        """The captured grid template (None before the first grid call or after it was dropped)."""
        return self._captured.template if self._captured else None

    @property
    def cursors(self) -> CursorCache:
        return self._cursors

    # --- grid (site-rules.md §1.3) ------------------------------------------------------------

    async def grid(
        self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None
    ) -> GridPage:
        key = fingerprint(request)
        once = FollowOnce(follow)
        if request.page > 1 and request.cursor and self._cursors.get(key, request.page) is None:
            # A cursor the caller kept (a checkpoint from an earlier process): try it first.
            self._cursors.put(key, request.page, request.cursor)
            try:
                return await self._grid_with_retries(request, op, once)
            except PaginationMismatch:
                self._cursors.discard(key, request.page)  # rejected: walk the pages below
        try:
            if request.page > 1 and self._cursors.get(key, request.page) is None:
                await self._walk_to(request, op, key)  # its pages' kept cursors may be refused too
            return await self._grid_with_retries(request, op, once)
        except PaginationMismatch as exc:
            if request.page == 1 or exc.details.get("status") != 400:
                raise
            # CNKI refused a cursor this process kept: its guest session was renewed since (a
            # slider solved in the middle of the list plants a new one), and every cursor of the
            # search belongs to the old session. Sought again from page 1, once (docs/simulator.md
            # "Cursors"); it was PAGINATION_MISMATCH, and `continue` sent the same cursor again.
            log.info("a kept grid cursor was refused; seeking page %d again from page 1", request.page)
            self._cursors.forget(key)
            await self._walk_to(request, op, key)
            return await self._grid_with_retries(request, op, once)

    async def _walk_to(self, request: GridRequest, op: SiteOp | None, key: str) -> None:
        """No cursor for `request`'s page: walk the pages before it in order, caching their cursors."""
        start = self._cursors.highest_below(key, request.page)
        for page_no in range(start, request.page):
            await self._grid_with_retries(request.model_copy(update={"page": page_no}), op, FollowOnce(None))
            if self._cursors.get(key, page_no + 1) is None:
                break

    async def _grid_with_retries(self, request: GridRequest, op: SiteOp | None, follow: FollowOnce) -> GridPage:
        return await self._with_retries(lambda: self._grid_once(request, op, follow), op, on_transport="recover")

    async def _grid_once(self, request: GridRequest, op: SiteOp | None, follow: FollowOnce) -> GridPage:
        template, page = await self._template(request.anchor, op)
        key = fingerprint(request)
        cursor = self._cursors.get(key, request.page) if request.page > 1 else None
        if request.page > 1 and cursor is None:
            raise PaginationMismatch("没有该页的翻页游标", page=request.page)
        query_json, body = build_form(template, request, cursor)
        fetched = await self._page_fetch(page, template.url, body, op, Priority.CHAIN)
        verdict = classify_page(fetched.text, fetched.url, fetched.status)
        if verdict.kind is GateKind.CHALLENGE:
            await self._grid_challenge(page, template, fetched, query_json, op)
        if verdict.kind is GateKind.LOGIN:
            self.drop_template()
            raise _HumanNeeded("login", LoginRequired(evidence=verdict.evidence), page, fetched.url)
        if request.page > 1 and fetched.status == 400:
            raise PaginationMismatch("知网拒绝了翻页游标", page=request.page, status=400)
        raise_for_verdict(verdict)
        if follow.pending:
            # The caller may ask the next page on the head alone, while the rows are parsed.
            head = parse_grid_head(fetched.text)
            if head.has_rows and head.page in (None, request.page):
                if head.turnpage:
                    self._cursors.put(key, request.page + 1, head.turnpage)
                self._limiter.fast()
                await follow.offer(head)
        try:
            result = parse_grid(fetched.text, fetched.url)
        except VerificationRequired as exc:
            await self._grid_challenge(page, template, fetched, query_json, op)
            raise exc
        if result.zero_results and not result.rows:
            # A zero page names no page of its own (it says page 1). For a later page it contradicts
            # the page before it: the engine's soft-block rule judges it (DESIGN.md "Soft blocks").
            result = result.model_copy(update={"page": request.page})
        elif result.page is not None and result.page != request.page:
            raise PaginationMismatch(requested=request.page, returned=result.page)
        if result.turnpage:
            self._cursors.put(key, request.page + 1, result.turnpage)
        if not follow.called:
            self._limiter.fast()
        return result

    async def _grid_challenge(
        self, page: Page, template: GridTemplate, fetched: _Fetched, query_json: str, op: SiteOp | None
    ) -> None:
        """site-rules.md §2.5: show the grid's verification where the search lives, then retry."""
        self.drop_template()
        error = VerificationRequired(page="grid")
        if skips(op):
            raise _HumanNeeded("challenge", error, page)  # skipped by _with_retries: nothing shown
        named = challenge_url(fetched.text)
        if named is not None:
            # 403 {"code":-403,"message":URL}: the person is shown exactly that page (its ident,
            # captchaId and returnUrl are the site's); once solved, the grid request is retried.
            if not self.endpoints.is_site_url(named):
                raise VerificationContextUnavailable(reason="verification URL outside CNKI")
            raise _HumanNeeded("challenge", error, page, named)
        if "vericodeForm" in fetched.text:
            tree = parse_html(fetched.text, strip_hidden=False)
            form = tree.css_first("[name=vericodeForm]")
            fragment = form.html if form is not None and form.html else fetched.text
            raise _HumanNeeded("challenge", error, page, fragment=(fragment, query_json))
        if fetched.url.split("?")[0] == template.url:
            raise VerificationContextUnavailable()
        raise _HumanNeeded("challenge", error, page, fetched.url)

    async def _page_fetch(
        self, page: Page, url: str, body: str, op: SiteOp | None, priority: Priority
    ) -> _Fetched:
        args = {"url": url, "body": body, "timeoutMs": FETCH_TIMEOUT_MS, "cap": MAX_BODY}
        generation = self._host.generation
        try:
            async with self._gate.behind_step(op, self._work_lease.shared(), self._work_lease.shared_busy):
                if page.is_closed() or self._host.generation != generation:
                    raise _PageChanged("the search page was replaced while this request waited")
                async with self._limiter.slot(budget=op, priority=priority) as started:
                    # the in-page fetch aborts itself at 30 s; the bound covers a page that never answers
                    with FetchFailures(page, url, body) as failures:
                        data: dict[str, Any] = await bounded(
                            page.evaluate(FETCH_JS, args), CALL_SECONDS, "grid fetch"
                        )
                    answered = self._clock.monotonic()
        except PlaywrightError as exc:
            if not self._host.note_error(exc) and _navigated(exc):
                raise _PageChanged(str(exc)) from exc
            if self._host.generation != generation:
                raise _PageChanged(str(exc)) from exc  # another request recovered the browser meanwhile
            if self._host.tab_lost(page, exc) and await self._host.check_alive():
                # The person closed the work tab in the shown window, or its renderer crashed: asked
                # again in a new work tab. Recovering relaunched the browser (once per request in
                # flight) and closed every other tab, the person's own among them.
                raise _PageChanged(str(exc)) from exc
            raise _TransportError(str(exc)) from exc
        except BrowserStalled as exc:
            raise _TransportError(str(exc)) from exc
        if data.get("error"):
            if data.get("status"):
                # The site answered and the body broke off (the connection dropped, or stalled past
                # the fetch's own timeout): the site failed, the browser did not. Retried like a 5xx;
                # it relaunched the browser, closing every other operation's tabs.
                raise SiteUnavailable(reason=f"{data['error']} (status {data['status']}, answer cut short)")
            raise _TransportError(failures.named(str(data["error"])))
        if data.get("tooLarge"):
            raise ResponseTooLarge(url=without_query(url))
        if priority is Priority.CHAIN:  # an answered grid page: the pacing's latency (DESIGN.md "Overlap depth")
            self._limiter.note_latency(answered - started)
        return _Fetched(int(data["status"]), str(data["url"]), str(data.get("text") or ""))

    # --- batch export (site-rules.md §9) ----------------------------------------------------

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> list[ExportRecord]:
        """EndNote records for up to EXPORT_BATCH grid rows (their `CookieName` ids), one request."""
        ids = [i for i in dict.fromkeys(export_ids) if i]
        if not ids:
            return []
        if len(ids) > EXPORT_BATCH:
            raise ValueError(f"at most {EXPORT_BATCH} export ids per request")
        return await self._with_retries(lambda: self._export_once(ids, op), op, on_transport="recover")

    async def _export_once(self, ids: list[str], op: SiteOp | None) -> list[ExportRecord]:
        template, page = await self._template("文献", op)
        url = urljoin(template.url, EXPORT_PATH)
        body = urlencode(
            {
                "FileName": ",".join(ids),
                "DisplayMode": "EndNote",
                "OrderParam": "0",
                "OrderType": "desc",
                "SelectField": "",
                "PageIndex": "1",
                "PageSize": str(len(ids)),
                "language": "CHS",
                "uniplatform": "NZKPT",
            }
        )
        fetched = await self._page_fetch(page, url, body, op, Priority.BATCH)
        verdict = classify_page(fetched.text, fetched.url, fetched.status)
        if verdict.kind is GateKind.CHALLENGE:
            # Like the grid (site-rules.md §2.5): the person gets the slider URL the site named.
            named = challenge_url(fetched.text)
            if named is not None and not self.endpoints.is_site_url(named):
                raise VerificationContextUnavailable(reason="verification URL outside CNKI")
            self.drop_template()
            raise _HumanNeeded("challenge", VerificationRequired(page="export"), page, named)
        if verdict.kind is GateKind.LOGIN:
            raise _HumanNeeded("login", LoginRequired(evidence=verdict.evidence), page, fetched.url)
        raise_for_verdict(verdict)
        return parse_export(fetched.text)

    # --- retries and human steps --------------------------------------------------------

    async def _with_retries(
        self,
        attempt: Callable[[], Awaitable[T]],
        op: SiteOp | None,
        *,
        on_transport: Literal["recover", "raise"],
        returned: dict[str, _Fetched] | None = None,
    ) -> T:
        """site-rules.md §1.3 retry rules, up to four attempts. `returned`: where the answer a
        person's step brought its tab back to is left for the next attempt."""
        slow_answers = 0
        cleared_once = False  # a refused network path that may clear (`may_clear`) was asked once more
        for number in range(1, MAX_ATTEMPTS + 1):
            epoch = self._gate.epoch
            if number > 1 and not self._host.started:
                await self._host.ensure()  # relaunched first: a death under this attempt is its own
            generation = self._host.generation
            try:
                return await attempt()
            except _PageChanged as exc:
                # not a browser failure: the request is asked again in the page as it is now
                if number == MAX_ATTEMPTS:
                    raise transport_unavailable(exc) from exc
                log.info("the search page changed under a request; asking again: %s", exc)
            except _TransportError as exc:
                if not (refused := transport_unavailable(exc)).retryable:
                    # the proxy down, TLS under a captive portal...: no new browser, and no second
                    # request reaches CNKI before the person changes the network (`unreachable`),
                    # but one a few seconds later when it may clear (a proxy app restarting) and
                    # an attempt is left for it (else the loop's end said VERIFICATION_REPEATED)
                    if cleared_once or number == MAX_ATTEMPTS or not may_clear(refused):
                        raise refused from exc
                    cleared_once = True
                    await self._wait_to_clear(refused)
                    continue
                if number == 1 and on_transport == "recover":
                    # once the other requests in the search page have answered (DESIGN.md "The
                    # shared search page"); a capture under way ends first. A step holding the
                    # work tab makes that wait the step's (skip: VERIFICATION_SKIPPED at once)
                    lease = self._work_lease
                    async with self._gate.behind_step(op, lease.exclusive(), lease.exclusive_busy):
                        # Every request in flight in the search page fails together: the first
                        # recovers; the others ask again in the browser it launched. Each used to
                        # relaunch it in turn, closing the one the request before had launched.
                        if self._host.generation == generation:
                            log.warning("grid transport failure, recovering the browser: %s", exc)
                            self.drop_template()
                            await self._detach_loader()
                            await self._host.recover(generation)
                    continue
                if number == 1 and self._host.lost_since(generation):
                    # the browser died under the request (killed, crashed): nothing was answered,
                    # so it is asked once more in the browser ensure() relaunches, not reported as
                    # CNKI being down (SITE_UNAVAILABLE ended a search's enrichment)
                    log.warning("the browser died under a request; asking again in a new one: %s", exc)
                    continue
                if (full := short_of_disk(self._host.profile_dir)) is not None:
                    raise full from exc  # a body read refused, a tab or browser dead: the disk, not CNKI
                if number > 1 and self._host.lost_since(generation):
                    raise browser_lost(exc, self._host.profile_dir) from exc
                raise transport_unavailable(exc) from exc
            except _HumanNeeded as need:
                back = await self._person_step(need, op, epoch)
                if back is not None and returned is not None and need.returns_to is not None:
                    returned[need.returns_to] = back
            except (RateLimited, SiteUnavailable) as exc:
                if not exc.retryable:
                    if cleared_once or number == MAX_ATTEMPTS or not may_clear(exc):
                        raise  # the network path refused (`network_path_refused`): asked again, it answers the same
                    cleared_once = True
                    await self._wait_to_clear(exc)
                    continue
                slow_answers += 1
                if slow_answers >= 3:
                    raise
                self._limiter.slow()
                await self._clock.sleep(self._retry_waits[min(slow_answers, len(self._retry_waits)) - 1])
            except SiteTemporarilyEmpty:
                if number > 1:
                    raise
                # the page itself says 请稍后重试: the one retry waits as a slow answer's first does
                self._limiter.slow()
                await self._clock.sleep(self._retry_waits[0])
        raise VerificationRepeated(attempts=MAX_ATTEMPTS)

    async def _wait_to_clear(self, error: SiteUnavailable) -> None:
        """The wait before the one more request a refused path that may clear gets (`may_clear`):
        the longest slow-answer wait, every channel slowed meanwhile."""
        log.info("the network path failed (%s); asking once more in a few seconds", error.details.get("net_error"))
        self._limiter.slow()
        await self._clock.sleep(self._retry_waits[-1])

    # --- detail and journal (site-rules.md §1.5) ------------------------------------------------

    async def detail(
        self, locator: str, op: SiteOp | None = None, expected_title: str | None = None
    ) -> DetailPage:
        """A detail page; with `expected_title`, an expired locator relocates the paper once."""
        try:
            return await self._fetch_parsed(locator, op, lambda html, url: parse_detail(html, url))
        except LocatorExpired:
            if not expected_title:
                raise
            log.info("detail locator expired; relocating by exact title")
            return await self.detail_by_title(expected_title, op=op)

    async def journal(
        self, url: str, expected_source: str | None = None, op: SiteOp | None = None
    ) -> JournalPage:
        return await self._fetch_parsed(url, op, lambda html, u: parse_journal(html, u, expected_source))

    async def detail_by_title(
        self, title: str, first_author: str | None = None, op: SiteOp | None = None
    ) -> DetailPage:
        """site-rules.md §3.10: one exact-title grid search; exactly one paper -> its detail page."""
        want = title_key(title)
        if not want:
            raise DocumentNotFound(title=title)
        result = await self.grid(GridRequest(subject=exact_title_subject(title), anchor=title.strip()), op)
        rows = [r for r in result.rows if title_key(r.title) == want]
        if first_author:
            who = author_key(first_author)
            rows = [r for r in rows if r.authors and author_key(r.authors[0]) == who]
        papers: dict[str, GridRow] = {}
        for row in rows:
            papers.setdefault(_paper_key(row), row)
        if not papers:
            raise DocumentNotFound(title=title)
        if len(papers) > 1:
            raise ambiguous(title, list(papers.values()), RELOCATE_AMBIGUOUS.format(n=len(papers)))
        row = next(iter(papers.values()))
        if not row.detail_url:
            raise DocumentNotFound("检索结果没有详情页链接", title=title)
        return await self._fetch_parsed(row.detail_url, op, lambda html, url: parse_detail(html, url))

    async def _fetch_parsed(self, url: str, op: SiteOp | None, parse: Callable[[str, str], T]) -> T:
        returned: dict[str, _Fetched] = {}  # the answer a person's step brought its tab back to

        async def once() -> T:
            try:
                fetched = await self._fetched_once(url, op, returned.pop(url, None))
            except _HumanNeeded as need:
                need.returns_to = url  # solved, the site sends the tab back here: kept, not asked again
                raise
            try:
                value = parse(fetched.text, fetched.url)
            except ParserUnsupported:
                if _looks_script_rendered(fetched.text):
                    value = await self._render(url, op, parse)
                elif not fetched.final_url_known and not blocked_in_tabs(url):
                    # no page of this kind, from a load whose redirects may have ended anywhere (the
                    # overseas site's home page): opened once in a tab, whose navigation tells
                    shown = await self._judged_in_tab(url, op)
                    value = parse(shown.text, shown.url)
                else:
                    raise
            self._limiter.fast()
            return value

        return await self._with_retries(once, op, on_transport="raise", returned=returned)

    async def _fetched_once(self, url: str, op: SiteOp | None, back: _Fetched | None) -> _Fetched:
        """`url` loaded (or `back`, the answer a person's step brought its tab back to), judged."""
        if back is not None:
            self._raise_for_page(back)
            return back
        try:
            fetched = await self._load(url, op)
        except _PageChanged:
            raise
        except _TransportError as exc:
            if not may_have_left_cnki(exc) or blocked_in_tabs(url):
                raise
            # The loader follows redirects without saying where they ended: this net error may be
            # the overseas host a redirect sent it to (DESIGN.md "The network path"). The page is
            # opened once in a tab, whose navigation tells (SITE_UNAVAILABLE `overseas_site`).
            return await self._judged_in_tab(url, op)
        if fetched.body_lost and fetched.status == 403:
            # A 403 is a refusal or the WAF's slider (a -403 JSON naming it): the loader lost the
            # body that tells them apart, so the page is opened in the render tab and judged there.
            return await self._judged_in_tab(url, op)
        self._raise_for_page(fetched)
        return fetched

    async def _judged_in_tab(self, url: str, op: SiteOp | None) -> _Fetched:
        """`url` opened in a tab of its own (one limited request) and judged there; the tab is
        closed, unless a human step takes it over."""
        fetched, tab = await self._open_in_tab(url, op)
        try:
            self._raise_for_page(fetched, tab)
        except _HumanNeeded:
            self._step_pages.append(tab)  # the person works in this tab; closed after the step
            raise
        except BaseException:
            await close_tab(tab)
            raise
        await close_tab(tab)
        return fetched

    def _raise_for_page(self, fetched: _Fetched, tab: Page | None = None) -> None:
        """Raise for anything but a clear page. `tab`: the tab already showing it (a human step
        happens there), else the person gets a tab of their own."""
        if fetched.final_url_known and (overseas := overseas_host(fetched.url)) is not None:
            raise overseas_refusal(overseas)  # the request API's redirects ended on the overseas site
        verdict = classify_page(fetched.text, fetched.url, fetched.status)
        if verdict.kind is GateKind.CLEAR and not fetched.final_url_known:
            # A redirect to the login page keeps the requested URL here: judge by the content alone.
            by_content = classify_page(fetched.text, None, fetched.status)
            if by_content.kind is GateKind.LOGIN:
                verdict = by_content
        if verdict.kind is GateKind.CHALLENGE:
            error = VerificationRequired(evidence=verdict.evidence)
            named = challenge_url(fetched.text)
            if named is not None:
                if not self.endpoints.is_site_url(named):
                    raise VerificationContextUnavailable(reason="verification URL outside CNKI")
                raise _HumanNeeded("challenge", error, tab, named)
            if tab is not None:
                raise _HumanNeeded("challenge", error, tab)
            # Not knowing where the loader's redirects ended, the person's tab opens the requested
            # page itself and the browser follows the site to the slider page it issues (its ident,
            # captchaId and returnUrl cannot be made up); once solved, the site returns there.
            raise _HumanNeeded("challenge", error, None, fetched.url)
        if verdict.kind is GateKind.LOGIN:
            if tab is not None:
                raise _HumanNeeded("login", LoginRequired(evidence=verdict.evidence), tab)
            show = fetched.url if fetched.final_url_known else self._login_url(fetched.url)
            raise _HumanNeeded("login", LoginRequired(evidence=verdict.evidence), None, show)
        raise_for_verdict(verdict)

    # Where the person is sent when the loader met a login page at an unknown URL: the login page
    # CNKI itself redirects to, returning to the requested page.
    def _login_url(self, return_url: str) -> str:
        return f"{self._settings.origin('login')}/login/?ReturnURL={quote(return_url, safe='')}"

    async def _open_in_tab(self, url: str, op: SiteOp | None) -> tuple[_Fetched, Page]:
        """Open `url` in a tab of its own (one limited request): its status, final URL and DOM.
        The caller closes the tab unless a human step takes it over."""
        try:
            page = await bounded(self._host.new_page(), CALL_SECONDS, "new tab")
        except BrowserStalled as exc:
            raise _TransportError(str(exc)) from exc
        try:
            await block_page_apis(self._host, page)  # the page's own citation-API calls
            async with self._limiter.slot(budget=op):
                response = await goto_or_cut(page, url)  # a redirect to the overseas site raises
            html = await bounded(page.content(), CALL_SECONDS, "page content")
        except SiteUnavailable:
            await close_tab(page)
            raise
        except (PlaywrightError, BrowserStalled) as exc:
            await close_tab(page)
            if isinstance(exc, PlaywrightError):
                self._host.note_error(exc)
            raise _TransportError(str(exc)) from exc
        status = response.status if response is not None else 200
        return _Fetched(status, page.url, html), page

    async def _render(self, url: str, op: SiteOp | None, parse: Callable[[str, str], T]) -> T:
        """Open `url` in a tab of its own and re-parse the live DOM until it parses (bounded). One
        tab per render: detail workers render concurrently, and a navigation started in a shared
        tab aborted the one before it (net::ERR_ABORTED -> SITE_UNAVAILABLE for the whole batch)."""
        try:
            page = await bounded(self._host.new_page(), CALL_SECONDS, "new tab")
        except BrowserStalled as exc:
            raise _TransportError(str(exc)) from exc
        keep = False
        try:
            try:
                await block_page_apis(self._host, page)  # the page's own citation-API calls
                async with self._limiter.slot(budget=op):
                    await goto_or_cut(page, url)  # a redirect to the overseas site raises
            except (PlaywrightError, BrowserStalled) as exc:
                if isinstance(exc, PlaywrightError):
                    self._host.note_error(exc)
                raise _TransportError(str(exc)) from exc
            deadline = self._clock.monotonic() + self._render_timeout
            while True:
                try:
                    with contextlib.suppress(PlaywrightError, ParserUnsupported, BrowserStalled):
                        html = await bounded(page.content(), CALL_SECONDS, "rendered content")
                        live = _Fetched(200, page.url, html)
                        self._raise_for_page_rendered(live, page)
                        return parse(html, page.url)
                except _HumanNeeded:
                    keep = True  # the person works in this tab; closed when the step ends
                    self._step_pages.append(page)
                    raise
                if self._clock.monotonic() >= deadline:
                    raise ContentNotReady(url_kind="rendered", timeout_seconds=self._render_timeout)
                await self._clock.sleep(RENDER_POLL_SECONDS)
        finally:
            if not keep:
                await close_tab(page)

    def _raise_for_page_rendered(self, fetched: _Fetched, page: Page) -> None:
        self._raise_for_page(fetched, page)  # the person solves it right in the render tab

    # --- identity (site-rules.md §2.6) ------------------------------------------------------------

    async def identity(self, op: SiteOp | None = None, *, refresh: bool = False) -> HeaderIdentity:
        """Who the kns header says we are, dated when the page was loaded (`observed_at`). Opens
        AdvSearch when the work tab shows no CNKI page (or `refresh`); never changes the captured
        template (same page, same form)."""
        page = await self._host.work_page()
        if refresh or not self.endpoints.is_site_url(page.url) or self.endpoints.is_login_url(page.url):
            async with self._gate.behind_step(op, self._work_lease.exclusive(), self._work_lease.exclusive_busy):
                page = await self._host.work_page()
                try:
                    await self._open_search_page(page, op)
                except _TransportError as exc:  # the browser did not answer
                    raise transport_unavailable(exc) from exc
        return await read_identity(page, self._clock)

    async def login(
        self, op: SiteOp | None = None, *, remote_access_url: str | None = None, force: bool = False
    ) -> HeaderIdentity:
        """The login flow (site/login.py): the identity at once when the live session is positive
        and not `force`, else a login tab and a human step of kind login until a CNKI tab shows one.
        A positive header on a page loaded before this call is checked with one AdvSearch load:
        the site drops logins without telling the old pages (site-rules.md §2.6)."""
        from cnki_mcp.site.login import LoginFlow

        current = None
        if not force:
            asked = self._clock.now()
            current = await self.identity(op)
            if positive(current) and (current.observed_at is None or current.observed_at < asked):
                current = await self.identity(op, refresh=True)
        flow = LoginFlow(self._host, self.endpoints, self._limiter, self._gate, self._clock)
        return await flow.run(current, op, remote_access_url=remote_access_url, force=force)

    # --- lifecycle ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the tabs this site opened; the browser belongs to its host."""
        pages = list(self._step_pages)
        self._step_pages = []
        self._captured = None
        await self._detach_loader()
        for page in pages:
            await close_tab(page)


def _paper_key(row: GridRow) -> str:
    """Distinct papers among same-title rows: CNKI's own id, else title + first author."""
    native = row.native.key
    if native:
        return native
    first = author_key(row.authors[0]) if row.authors else ""
    return f"{title_key(row.title)}|{first}"


def _looks_script_rendered(html: str) -> bool:
    """A page whose content a script draws: scripts present, (almost) no visible text."""
    if "<script" not in html.lower():
        return False
    return len(body_text(parse_html(html))) < 200


def _navigated(exc: PlaywrightError) -> bool:
    """The page's document changed under an evaluate (a navigation), the browser still there."""
    text = str(exc).lower()
    return "execution context was destroyed" in text or "because of a navigation" in text


# Net errors of a load a redirect may have sent to a host that is not CNKI's domestic site (the
# overseas host failing to resolve, refusing the connection, or its TLS): not a proxy down or no
# network, which fail every host alike.
_ELSEWHERE_CAUSES = frozenset({"dns", "tls", "connection"})


def may_have_left_cnki(exc: _TransportError) -> bool:
    """A loader failure whose net error a redirect to another host can explain (_ELSEWHERE_CAUSES)."""
    known = network_cause(str(exc))
    return known is not None and known[1] in _ELSEWHERE_CAUSES
