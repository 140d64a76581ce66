"""The HTML reader in a real tab (site-rules.md §1.1, §2.4, §2.5, §11).

`DetailTabs` opens a paper's detail page in its own tab (one limited request), gets a person past
a challenge or login page, confirms the page is the requested paper, waits until the page has
settled (readyState complete and jQuery idle for 1.5 s, at most 15 s) and clicks entries with real
mouse events at a stable, hit-testable point. `downloading.py` uses it too.

`HtmlReader.read` clicks HTML阅读/在线阅读, follows the reader into the tab CNKI opens (or the same
tab), hands a slider or login page to the human gate, and re-parses the live DOM every 200 ms for
up to 20 s until no catalogue heading is missing. It closes every tab it opened."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import ElementHandle, Page
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.clock import Clock
from cnki_mcp.errors import (
    RELOCATE_FAILED,
    AccessDenied,
    CnkiError,
    ContentNotReady,
    DocumentNotFound,
    HtmlEntryNotFound,
    IdentityConflict,
    LocatorExpired,
    ParserUnsupported,
    ReaderUnsupported,
    SiteUnavailable,
    TabClosed,
    VerificationContextUnavailable,
    VerificationRepeated,
    VerificationSkipped,
)
from cnki_mcp.identity import (
    RELOCATE_AMBIGUOUS,
    Paper,
    ambiguous,
    author_key,
    detail_matches,
    native_key,
    natives_conflict,
    title_key,
)
from cnki_mcp.models import DetailPage, GateKind, ReaderPage
from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.gate import challenge_url, classify_page, error_page, raise_for_verdict
from cnki_mcp.parse.reader import parse_reader
from cnki_mcp.reading_service import ReaderCapture
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.deadline import CALL_SECONDS, BrowserStalled, bounded, close_tab
from cnki_mcp.site.endpoints import error_reason, same_url
from cnki_mcp.site.grid_template import exact_title_subject
from cnki_mcp.site.human import HumanGate, PageKind, PageState, StepKind
from cnki_mcp.site.launch_error import browser_lost
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.navigation import NAV_TIMEOUT_MS, goto_or_cut
from cnki_mcp.site.page_apis import block_page_apis
from cnki_mcp.site.pages import LOAD_STATE_JS, PlaywrightHumanPage, answered_page, document_status
from cnki_mcp.site.transport import transport_unavailable

log = logging.getLogger(__name__)
READER_AGAIN = "稍后用相同参数再调用 read_online_html"

SETTLE_QUIET_SECONDS = 1.5  # site-rules.md §11.3: jQuery idle this long before clicking (Settings.settle_quiet_seconds)
SETTLE_LIMIT_SECONDS = 15.0
SETTLE_POLL_SECONDS = 0.1
STABLE_CHECKS = 60  # site-rules.md §11.3: up to 60 checks x 50 ms
STABLE_POLL_SECONDS = 0.05
READER_TIMEOUT_SECONDS = 20.0  # site-rules.md §2.4 loading behaviour
READER_POLL_SECONDS = 0.2
RENDER_TIMEOUT_SECONDS = 12.0
MAX_HUMAN_STEPS = 4

READER_ENTRY = r"HTML阅读|在线阅读"
# The detail page's file entries, by format (what download_paper clicks).
FILE_ENTRIES: dict[str, str] = {"pdf": r"PDF下载|下载PDF", "caj": r"CAJ下载|下载CAJ"}
SKIPPED_MESSAGES: dict[StepKind, str] = {
    "login": "知网要求登录，已按请求跳过（未打开登录窗口）",
    "challenge": "知网要求人工验证，已按请求跳过",
}

# The first visible <a> whose trimmed text matches `pattern` (case-insensitive), else null.
_FIND_ENTRY_JS = """(pattern) => {
  const re = new RegExp(pattern, 'i');
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const s = getComputedStyle(n);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
    }
    return true;
  };
  for (const a of document.querySelectorAll('a')) {
    if (re.test((a.textContent || '').trim()) && visible(a)) return a;
  }
  return null;
}"""

# Where a click would land, and whether it would hit the element (site-rules.md §11.3).
_POINT_JS = """(el) => {
  const r = el.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  const disabled = !!el.disabled || el.getAttribute('aria-disabled') === 'true';
  return {x, y, w: r.width, h: r.height, disabled,
          hits: !!hit && (hit === el || el.contains(hit)),
          inView: x >= 0 && y >= 0 && x < innerWidth && y < innerHeight};
}"""


@dataclass(slots=True)
class OpenedDetail:
    page: Page
    detail: DetailPage
    url: str  # the locator that was opened (internal; may carry an expiring token)


class DetailTabs:
    """Detail pages in their own tabs, settled and identity-checked; clicks at stable points."""

    def __init__(
        self,
        site: CnkiSite,
        host: BrowserHost,
        limiter: Limiter,
        gate: HumanGate,
        clock: Clock,
        *,
        settle_quiet: float = SETTLE_QUIET_SECONDS,
        settle_limit: float = SETTLE_LIMIT_SECONDS,
        render_timeout: float = RENDER_TIMEOUT_SECONDS,
    ) -> None:
        self.site = site
        self.host = host
        self.limiter = limiter
        self.gate = gate
        self.clock = clock
        self.endpoints = site.endpoints
        self.settle_quiet = settle_quiet
        self.settle_limit = settle_limit
        self.render_timeout = render_timeout

    # --- human steps ------------------------------------------------------------------

    async def inspect(self, page: Page, kind: StepKind = "challenge") -> PageState:
        try:
            return await PlaywrightHumanPage(self.host, page, self.endpoints, kind).inspect()
        except PlaywrightError:
            return PageState(PageKind.CLEAR, ready=False)

    async def human_step(
        self, kind: StepKind, page: Page, op: SiteOp | None, epoch: int | None = None
    ) -> None:
        """One human step on `page`; a skipped one says which page it was (`gate`)."""
        if kind == "login":
            self.site.note_login_wall()
        policy = op.on_verification if op is not None else "wait"
        human = PlaywrightHumanPage(self.host, page, self.endpoints, kind, in_step=True)
        try:
            await self.gate.handle(kind, human, op, "skip" if policy == "skip" else "wait", epoch=epoch)
            if kind == "login":
                await self.site.note_login_step_over(human)
        except VerificationSkipped as exc:
            if "gate" in exc.details:
                raise
            raise VerificationSkipped(SKIPPED_MESSAGES[kind], gate=kind) from None

    # --- opening ----------------------------------------------------------------------

    async def open(self, paper: Paper, op: SiteOp | None) -> OpenedDetail:
        """A new tab on `paper`'s detail page, identity-confirmed and settled. With no locator,
        or an expired one, the paper is located again by its exact title (once). A browser that
        died under the page (killed, crashed) is relaunched and the page opened once more: nothing
        was answered, and SITE_UNAVAILABLE (知网暂时不可用) blamed CNKI for it."""
        generation = self.host.generation
        try:
            return await self._open_once(paper, op)
        except TabClosed:
            # the person closed the background tab in the shown window before it was read (it
            # was INTERNAL "TargetClosedError" after the whole settle wait): opened once more
            log.info("a detail tab was closed before it was read; opening it again")
            return await self._open_once(paper, op)
        except SiteUnavailable as exc:
            if exc.details.get("cut_short"):
                # the page's answer broke off (docs/site-behaviour.md): asked once more, as a 5xx is
                log.warning("a detail page's answer was cut short; opening it once more: %s", exc)
                self.limiter.slow()
                return await self._open_once(paper, op)
            if not self.host.lost_since(generation):
                raise
            log.warning("the browser died under a detail tab; opening it again in a new one: %s", exc)
            await self.host.ensure()  # relaunched first: a death under the second tab is its own
            generation = self.host.generation
            try:
                return await self._open_once(paper, op)
            except SiteUnavailable as again:
                if self.host.lost_since(generation):
                    raise browser_lost(again, self.host.profile_dir) from again
                raise

    async def _open_once(self, paper: Paper, op: SiteOp | None) -> OpenedDetail:
        url = paper.locator or await self.relocate(paper, op)
        page = await self.host.new_page()
        try:
            try:
                await block_page_apis(self.host, page)  # the page's own citation-API calls
            except (PlaywrightError, BrowserStalled) as exc:
                raise SiteUnavailable(reason=error_reason(exc, first_line=True)) from exc
            try:
                detail = await self._load(page, url, op)
            except LocatorExpired:
                url = await self.relocate(paper, op)
                detail = await self._load(page, url, op)
            if not detail_matches(paper, detail):
                raise IdentityConflict(record_ref=paper.record_ref, expected=paper.title, found=detail.title)
            await self.settle(page)
            if page.is_closed():
                raise TabClosed()
        except (SiteUnavailable, ContentNotReady) as exc:
            if await self._closed_by_person(page):
                raise TabClosed() from exc
            # a raise in this clause skips the one below: the tab was left open, one more for
            # every 5xx or unsettled detail page until the browser restarted
            await close_quietly(page)
            raise
        except BaseException:
            await close_quietly(page)
            raise
        return OpenedDetail(page, detail, url)

    async def _closed_by_person(self, page: Page) -> bool:
        """`page` is closed and the browser runs on: a tab closed in the shown window."""
        return page.is_closed() and await self.host.check_alive()

    async def relocate(self, paper: Paper, op: SiteOp | None) -> str:
        """site-rules.md §3.10: one exact-title grid search; one matching paper (by its file name where
        the title and first author match several) -> its detail URL."""
        want = title_key(paper.title)
        if not want:
            raise DocumentNotFound(record_ref=paper.record_ref)
        result = await self.site.grid(
            GridRequest(subject=exact_title_subject(paper.title), anchor=paper.title.strip()), op
        )
        rows = [r for r in result.rows if title_key(r.title) == want and r.detail_url]
        if paper.authors:
            who = author_key(paper.authors[0].name)
            rows = [r for r in rows if not r.authors or author_key(r.authors[0]) == who]
        distinct = list({r.detail_url: r for r in rows if r.detail_url}.values())
        own = native_key(paper.native)
        if len(distinct) > 1 and own:
            # its own file name picks the paper among namesakes: its online-first or final record,
            # the same title by the same author in another periodical (works.same_work)
            mine = [r for r in distinct if native_key(r.native) and not natives_conflict(own, native_key(r.native))]
            distinct = mine if len(mine) == 1 else distinct
        if not distinct:
            raise DocumentNotFound(record_ref=paper.record_ref, title=paper.title, reason=RELOCATE_FAILED)
        if len(distinct) > 1:
            message = RELOCATE_AMBIGUOUS.format(n=len(distinct))
            raise ambiguous(paper.title, distinct, message, record_ref=paper.record_ref)
        assert distinct[0].detail_url is not None
        return distinct[0].detail_url

    async def _load(self, page: Page, url: str, op: SiteOp | None) -> DetailPage:
        # True once the person's step brought the tab back to `url` (a solved slider returns to
        # its returnUrl, a login to its ReturnURL): that page is read as it is, not asked again.
        returned = False
        for _ in range(MAX_HUMAN_STEPS):
            epoch = self.gate.epoch
            if returned:
                returned = False
                detail = await self._returned_detail(page)
                if detail is not None:
                    return detail
            try:
                async with self.limiter.slot(budget=op):
                    response = await goto_or_cut(page, url)
            except PlaywrightError as exc:
                self.host.note_error(exc)
                raise transport_unavailable(exc, first_line=True) from exc
            html, verdict = await answered_page(page, response, SiteUnavailable)
            if verdict.kind in (GateKind.CHALLENGE, GateKind.LOGIN):
                kind: StepKind = "challenge" if verdict.kind is GateKind.CHALLENGE else "login"
                named = challenge_url(html) if kind == "challenge" else None
                if named is not None and (op is None or op.on_verification != "skip"):
                    await self._show_named(page, named, op)
                await self.human_step(kind, page, op, epoch)
                returned = not page.is_closed() and same_url(page.url, url)
                continue
            if verdict.kind in (GateKind.RATE_LIMITED, GateKind.SERVER_ERROR):
                self.limiter.slow()
            raise_for_verdict(verdict)
            return await self._parse_live(page)
        raise VerificationRepeated(page="detail")

    async def _returned_detail(self, page: Page) -> DetailPage | None:
        """The detail page the tab is back on, when it is one as it stands; None (asked again)
        for anything else: another gate page, an error page (a `v` token that expired while the
        person was busy is a 404 the loader turns into a relocation), a page still being drawn."""
        try:
            # a page still loading or fetching its lazy parts (keywords, funds) would be stored as
            # read, its missing fields taken for CNKI's own answer for 30 days
            state: dict[str, Any] = await bounded(page.evaluate(LOAD_STATE_JS), CALL_SECONDS, "load state")
            if not state.get("complete") or state.get("pending"):
                return None
            html = await bounded(page.content(), CALL_SECONDS, "page content")
        except (PlaywrightError, BrowserStalled):
            return None
        if classify_page(html, page.url).kind is not GateKind.CLEAR:
            return None
        try:
            return parse_detail(html, page.url)
        except ParserUnsupported:
            return None

    async def _show_named(self, page: Page, url: str, op: SiteOp | None) -> None:
        """The page answered CNKI's -403 JSON: the person is shown the slider page it names, in
        this tab (DESIGN.md "Challenges, blocks and sessions"); solved, the site returns here."""
        if not self.endpoints.is_site_url(url):
            raise VerificationContextUnavailable(reason="verification URL outside CNKI")
        try:
            async with self.limiter.slot(budget=op):
                await page.goto(url, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS)
        except PlaywrightError as exc:
            if self.host.note_error(exc):
                raise SiteUnavailable(reason=error_reason(exc, first_line=True)) from exc
            log.debug("navigation to the slider page did not finish: %s", error_reason(exc, first_line=True))

    async def _parse_live(self, page: Page) -> DetailPage:
        """parse_detail on the live DOM, waiting (bounded) for a script-drawn page."""
        deadline = self.clock.monotonic() + self.render_timeout
        while True:
            with contextlib.suppress(PlaywrightError, ParserUnsupported, BrowserStalled):
                return parse_detail(await bounded(page.content(), CALL_SECONDS, "page content"), page.url)
            if page.is_closed():
                raise SiteUnavailable(reason="the detail tab was closed")  # judged by _open_once
            if self.clock.monotonic() >= deadline:
                raise ContentNotReady(url_kind="detail", timeout_seconds=self.render_timeout)
            await self.clock.sleep(SETTLE_POLL_SECONDS)

    async def settle(self, page: Page) -> bool:
        """site-rules.md §11.3: readyState complete and no jQuery request for `settle_quiet` seconds,
        waiting at most `settle_limit`. Returns whether the page settled in time."""
        deadline = self.clock.monotonic() + self.settle_limit
        quiet_since: float | None = None
        while True:
            if page.is_closed():
                return False  # closed in the shown window: nothing to wait for
            now = self.clock.monotonic()
            try:
                state: dict[str, Any] = await page.evaluate(LOAD_STATE_JS)
            except PlaywrightError:
                state = {}
            if state.get("complete") and not state.get("pending"):
                quiet_since = now if quiet_since is None else quiet_since
                if now - quiet_since >= self.settle_quiet:
                    return True
            else:
                quiet_since = None
            if now >= deadline:
                log.info("detail page did not settle within %.1f s; clicking anyway", self.settle_limit)
                return False
            await self.clock.sleep(SETTLE_POLL_SECONDS)

    # --- clicking ---------------------------------------------------------------------

    async def find_entry(self, page: Page, pattern: str) -> ElementHandle | None:
        try:
            handle = await page.evaluate_handle(_FIND_ENTRY_JS, pattern)
        except PlaywrightError as exc:
            if await self._closed_by_person(page):
                raise TabClosed() from exc  # nothing was clicked: a new call opens the page anew
            raise
        element = handle.as_element()
        if element is None:
            await handle.dispose()
        return element

    async def stable_point(self, element: ElementHandle) -> tuple[float, float]:
        """site-rules.md §11.3: the element must stop moving, be enabled and be hit at its centre."""
        with contextlib.suppress(PlaywrightError):
            await element.scroll_into_view_if_needed(timeout=2_000)
        previous: tuple[float, float, float, float] | None = None
        last: dict[str, Any] = {}
        for _ in range(STABLE_CHECKS):
            last = await element.evaluate(_POINT_JS)
            box = (last["x"], last["y"], last["w"], last["h"])
            usable = last["hits"] and last["inView"] and not last["disabled"] and last["w"] > 0
            if usable and box == previous:
                return float(last["x"]), float(last["y"])
            previous = box if usable else None
            await self.clock.sleep(STABLE_POLL_SECONDS)
        raise ContentNotReady(
            "入口按钮不可点击", state={k: last.get(k) for k in ("disabled", "hits", "inView")}
        )

    async def click(
        self, page: Page, element: ElementHandle, op: SiteOp | None, pressing: Callable[[], None] | None = None
    ) -> None:
        """A real mouse click at the element's stable point; the click is a request start.
        `pressing` is called once the slot is held, just before the mouse moves: a cancellation
        before it clicked nothing."""
        x, y = await self.stable_point(element)
        async with self.limiter.slot(budget=op):
            if pressing is not None:
                pressing()
            await page.mouse.click(x, y)


async def close_quietly(page: Page | None) -> None:
    """Close `page`, bounded (site/deadline.py): a tab that does not close in time is left open."""
    await close_tab(page)


# The reader's slider sits under the visible part of the text, often below the fold; the challenge
# markers only count what is inside the viewport, so it is scrolled into view first (as a reader
# would scroll down to it), which also puts it in front of the person the gate shows it to.
_REVEAL_SLIDER_JS = """() => {
  const el = document.querySelector('.read-btn-boxXml .slider-wrapper');
  if (!el) return false;
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return false;
  if (r.top >= 0 && r.bottom <= innerHeight) return false;
  el.scrollIntoView({block: 'center'});
  return true;
}"""


async def reveal_reader_slider(page: Page) -> None:
    """Scroll a reader slider below (or above) the viewport into view; nothing otherwise."""
    with contextlib.suppress(PlaywrightError):
        await page.evaluate(_REVEAL_SLIDER_JS)


class HtmlReader:
    """`ReaderBackend` over a live browser; see the module docstring."""

    def __init__(
        self,
        tabs: DetailTabs,
        *,
        reader_timeout: float = READER_TIMEOUT_SECONDS,
        poll: float = READER_POLL_SECONDS,
    ) -> None:
        self.tabs = tabs
        self.reader_timeout = reader_timeout
        self.poll = poll

    async def _files(self, detail_page: Page) -> list[str]:
        """The file formats the open detail page offers (no request)."""
        return [fmt for fmt, pattern in FILE_ENTRIES.items() if await self.tabs.find_entry(detail_page, pattern)]

    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture:
        tabs = self.tabs
        opened = await tabs.open(paper, op)
        detail_page = opened.page
        since = len(tabs.host.popups_of(detail_page))
        try:
            entry = await tabs.find_entry(detail_page, READER_ENTRY)
            # which files the detail page offers (no request), read before the click: a reader
            # that navigates this tab replaces the page (the formats were read from the reader:
            # none, "no PDF either"), or closes it (a raw Playwright error replaced the typed one).
            # A CAJ-only paper's text cannot be read by read_pdf_text, and a page with no file
            # has no text to read at all.
            available = await self._files(detail_page)
            if entry is None:
                raise HtmlEntryNotFound(record_ref=paper.record_ref, available=available)
            start_url = detail_page.url
            started = tabs.clock.monotonic()
            await tabs.click(detail_page, entry, op)
            try:
                page, same_tab = await self._wait_for_reader(detail_page, since, start_url, paper, op)
            except ReaderUnsupported as exc:
                # a reader without a body (an abstract alone): the advice is the file, if there is one
                exc.details.setdefault("available", available)
                raise
            return ReaderCapture(
                page=page,
                detail=opened.detail,
                detail_url=opened.url,
                same_tab=same_tab,
                waited_seconds=round(tabs.clock.monotonic() - started, 3),
            )
        finally:
            for popup in tabs.host.popups_of(detail_page)[since:]:
                await close_quietly(popup)
            await close_quietly(detail_page)

    async def _wait_for_reader(
        self, detail_page: Page, since: int, start_url: str, paper: Paper, op: SiteOp | None
    ) -> tuple[ReaderPage, bool]:
        tabs = self.tabs
        deadline = tabs.clock.monotonic() + self.reader_timeout
        best: tuple[ReaderPage, bool] | None = None
        problem: Exception | None = None
        steps = 0
        while True:
            opened = tabs.host.popups_of(detail_page)[since:]
            candidates = [(p, False) for p in reversed(opened)]
            if not detail_page.is_closed() and detail_page.url != start_url:
                candidates.append((detail_page, True))  # some readers navigate the same tab
            for page, same_tab in candidates:
                if page.is_closed():
                    continue
                epoch = tabs.gate.epoch
                await reveal_reader_slider(page)
                state = await tabs.inspect(page)
                if state.kind in (PageKind.CHALLENGE, PageKind.LOGIN):
                    steps += 1
                    if steps > MAX_HUMAN_STEPS:
                        raise VerificationRepeated(page="reader")
                    kind: StepKind = "challenge" if state.kind is PageKind.CHALLENGE else "login"
                    await tabs.human_step(kind, page, op, epoch)
                    deadline = tabs.clock.monotonic() + self.reader_timeout  # the person's time is free
                    break
                try:
                    html = await page.content()
                except PlaywrightError:
                    continue
                try:
                    parsed = parse_reader(html, page.url, paper.title)
                except IdentityConflict:
                    raise
                except ReaderUnsupported as exc:
                    if not same_tab and page is not opened[0]:
                        # another tab the detail page opened (not the click's: the order page that
                        # leads to the reader): its error page or refusal is not the reader's
                        continue
                    answered = error_page(await document_status(page), "阅读页", READER_AGAIN)
                    if answered is not None:
                        # an HTTP error page (404, 5xx, 429) is CNKI's answer: it was polled for the
                        # whole reader timeout and reported READER_UNSUPPORTED (download instead)
                        raise answered from None
                    problem = self._page_problem(html, page.url) or exc
                    if isinstance(problem, AccessDenied):
                        # The site said no (the htmlread tip page 账户余额不足, a 403 无权访问):
                        # final, no reader follows it; the person needs rights, not more time.
                        raise problem from None
                    continue
                if parsed.trial or not parsed.coverage.missing_catalog_headings:
                    return parsed, same_tab
                if best is None or len(parsed.text) >= len(best[0].text):
                    best = (parsed, same_tab)
            if tabs.clock.monotonic() >= deadline:
                break
            await tabs.clock.sleep(self.poll)
        if best is not None:
            log.info(
                "reader still misses %d catalogue headings", len(best[0].coverage.missing_catalog_headings)
            )
            return best
        if problem is not None:
            raise problem
        raise ContentNotReady("阅读页没有出现", url_kind="reader", timeout_seconds=self.reader_timeout)

    @staticmethod
    def _page_problem(html: str, url: str) -> Exception | None:
        """A typed error for a page that is clearly not a reader (denied, not found ...)."""
        verdict = classify_page(html, url)
        if verdict.kind in (GateKind.CLEAR, GateKind.CHALLENGE, GateKind.LOGIN):
            return None
        try:
            raise_for_verdict(verdict)
        except CnkiError as exc:
            return exc
        return None
