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
from cnki_mcp.site.endpoints import overseas_host, overseas_refusal
from cnki_mcp.site.transport import HTTP_ERROR_ANSWER

NAV_TIMEOUT_MS = 30_000
MAX_ATTEMPTS = 4  # a page or request is asked at most this many times (CnkiSite's retries, AdvSearch)
# the failure of a request the browser itself gave up (another navigation took the frame)
ABORTED = "net::ERR_ABORTED"


async def goto_or_cut(page: Page, url: str, timeout_ms: float = NAV_TIMEOUT_MS) -> Response | None:
    """`page.goto(url)` until DOMContentLoaded, ended as soon as the navigation's answer breaks off
    (see the module docstring): that is SITE_UNAVAILABLE with `details.cut_short`, for the caller
    to ask once more. An HTTP error status without a body (the CDN's 418) is that answer, returned
    for the caller to classify: Chromium shows its own error page and goto fails with
    HTTP_ERROR_ANSWER (it was told as an answer cut short). A redirect to CNKI's overseas site is
    SITE_UNAVAILABLE (`reason: overseas_site`). Other failures are goto's own (PlaywrightError)."""
    failed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    answered: set[Request] = set()  # requests whose answer started (a status arrived)
    error_answers: list[Response] = []  # the main frame's navigation answers with an error status
    overseas: list[str] = []  # overseas hosts the main frame's navigation was sent to

    def main_navigation(request: Request) -> bool:
        return request.is_navigation_request() and request.frame == page.main_frame

    def on_request(request: Request) -> None:
        if main_navigation(request) and (host := overseas_host(request.url)) is not None:
            overseas.append(host)

    def on_response(response: Response) -> None:
        answered.add(response.request)
        if response.status >= 400 and main_navigation(response.request):
            error_answers.append(response)

    def on_failed(request: Request) -> None:
        # only a navigation request that had its answer: one failing before (refused, aborted by
        # another navigation) is reported by goto itself; so is one that had its answer and was
        # then left for another navigation (a script redirect to the verification page, a click in
        # a shown tab): net::ERR_ABORTED is the browser's own doing, not the answer breaking off
        if failed.done() or request not in answered or not request.is_navigation_request():
            return
        failure = request.failure or "failed"
        # HTTP_ERROR_ANSWER: an error status whose body was empty, whole; goto fails with it
        if request.frame == page.main_frame and failure not in (ABORTED, HTTP_ERROR_ANSWER):  # not an iframe's
            failed.set_result(failure)

    page.on("request", on_request)
    page.on("response", on_response)
    page.on("requestfailed", on_failed)
    nav = asyncio.ensure_future(page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms))
    try:
        await asyncio.wait({nav, failed}, return_when=asyncio.FIRST_COMPLETED)
        if not nav.done():
            if overseas:
                raise overseas_refusal(overseas[-1])
            raise SiteUnavailable(reason=f"{failed.result()} (answer cut short)", cut_short=True)
        try:
            response = nav.result()
        except PlaywrightError as exc:
            if overseas:  # the overseas host may not even resolve from here
                raise overseas_refusal(overseas[-1]) from exc
            if error_answers and HTTP_ERROR_ANSWER in str(exc):
                return error_answers[-1]
            raise
        if overseas:
            raise overseas_refusal(overseas[-1])
        return response
    finally:
        page.remove_listener("request", on_request)
        page.remove_listener("response", on_response)
        page.remove_listener("requestfailed", on_failed)
        if not nav.done():
            nav.cancel()
            with contextlib.suppress(asyncio.CancelledError, PlaywrightError):
                await nav
