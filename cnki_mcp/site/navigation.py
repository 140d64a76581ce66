"""Navigating a tab to a CNKI page without waiting for ever on an answer that broke off.

Chromium fails a navigation request whose answer is cut short (the connection dropped before the
announced length: net::ERR_CONTENT_LENGTH_MISMATCH) at once, but never fires DOMContentLoaded for
the cut document and `response.finished()` never resolves, so `page.goto(wait_until=
"domcontentloaded")` waited out its whole timeout (docs/site-behaviour.md "Answers cut short")."""

from __future__ import annotations

import asyncio
import contextlib

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, Request, Response

from cnki_mcp.errors import SiteUnavailable

NAV_TIMEOUT_MS = 30_000
MAX_ATTEMPTS = 4  # a page or request is asked at most this many times (CnkiSite's retries, AdvSearch)
# the failure of a request the browser itself gave up (another navigation took the frame)
ABORTED = "net::ERR_ABORTED"


async def goto_or_cut(page: Page, url: str, timeout_ms: float = NAV_TIMEOUT_MS) -> Response | None:
    """`page.goto(url)` until DOMContentLoaded, ended as soon as the navigation's answer breaks off
    (see the module docstring): that is SITE_UNAVAILABLE with `details.cut_short`, for the caller
    to ask once more. Other failures are goto's own (PlaywrightError)."""
    failed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    answered: set[Request] = set()  # requests whose answer started (a status arrived)

    def on_response(response: Response) -> None:
        answered.add(response.request)

    def on_failed(request: Request) -> None:
        # only a navigation request that had its answer: one failing before (refused, aborted by
        # another navigation) is reported by goto itself; so is one that had its answer and was
        # then left for another navigation (a script redirect to the verification page, a click in
        # a shown tab): net::ERR_ABORTED is the browser's own doing, not the answer breaking off
        if failed.done() or request not in answered or not request.is_navigation_request():
            return
        failure = request.failure or "failed"
        if request.frame == page.main_frame and failure != ABORTED:  # not an iframe's
            failed.set_result(failure)

    page.on("response", on_response)
    page.on("requestfailed", on_failed)
    nav = asyncio.ensure_future(page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms))
    try:
        await asyncio.wait({nav, failed}, return_when=asyncio.FIRST_COMPLETED)
        if nav.done():
            return nav.result()
        raise SiteUnavailable(reason=f"{failed.result()} (answer cut short)", cut_short=True)
    finally:
        page.remove_listener("response", on_response)
        page.remove_listener("requestfailed", on_failed)
        if not nav.done():
            nav.cancel()
            with contextlib.suppress(asyncio.CancelledError, PlaywrightError):
                await nav
