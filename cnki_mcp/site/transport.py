"""How `CnkiSite` loads a URL without rendering it (site-rules.md §1.5): Network.loadNetworkResource
in the work tab's frame through one reused CDP session, the body read in chunks up to the cap;
the APIRequestContext when the browser lacks that method. Every load is one limited request."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from playwright.async_api import CDPSession, Page, Request
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.errors import ResponseTooLarge, SiteUnavailable
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.deadline import CALL_SECONDS, CLOSE_SECONDS, BrowserStalled, bounded
from cnki_mcp.site.endpoints import error_reason, network_cause, unreachable, without_query

if TYPE_CHECKING:
    from cnki_mcp.site.browser import BrowserHost
    from cnki_mcp.site.limiter import Limiter

log = logging.getLogger("cnki_mcp.site.cnki")  # the same logger as CnkiSite's own messages

MAX_BODY = 8 * 1024 * 1024  # site-rules.md §1.3/§1.5: responses above 8 MiB are refused
READ_CHUNK = 1024 * 1024  # site-rules.md §1.5: the loaded body is read in 1 MiB chunks
FETCH_TIMEOUT_MS = 30_000


# What Network.loadNetworkResource names an answer with an HTTP error status (403, 404, 5xx);
# any other net error after a status means the answer broke off (docs/site-behaviour.md).
HTTP_ERROR_ANSWER = "net::ERR_HTTP_RESPONSE_CODE_FAILURE"
HTTP_ERROR_CODE = -379  # its code: `netErrorName` is optional in CDP, `netError` may come alone


class TransportError(Exception):
    """The request never got an HTTP answer (page gone, fetch aborted, connection refused)."""


class PageChanged(TransportError):
    """The work tab was navigated, closed or replaced under a request (the person's doing in the
    shown window, a renderer crash, another channel's browser recovery): the request is asked
    again in the work tab as it is now; nothing is recovered."""


def transport_unavailable(exc: BaseException, *, first_line: bool = False) -> SiteUnavailable:
    """SITE_UNAVAILABLE for a request the browser did not carry (`exc`: its transport failure, a
    Playwright error, a stalled await), with the failure's text as the reason (`error_reason`); a
    net error that is a known failure to reach CNKI (a proxy down, TLS, DNS) says what to do."""
    reason = error_reason(exc, first_line=first_line)
    known = network_cause(reason)
    if known is None:
        return SiteUnavailable(reason=reason)
    return unreachable(known[0], known, reason=reason)


class FetchFailures:
    """The net error of an in-page fetch (page_scripts.FETCH_JS): its own error says only
    `TypeError: Failed to fetch`; the page's `requestfailed` event for the request names why
    (`net::ERR_PROXY_CONNECTION_FAILED`), before the evaluate returns. Used as `with
    FetchFailures(page, url, body) as failures:` around the evaluate; `named(error)` is the fetch's
    error with that net error, for `transport_unavailable` to find its cause. A request is known by
    its URL and its POST body: the grid pages of every channel and the export batches run in the
    one work tab and POST the same URL, with bodies that differ (page, channel, batch); by the URL
    alone a fetch took another's failure (a reset reported as the proxy down, final)."""

    def __init__(self, page: Page, url: str, body: str) -> None:
        self._page = page
        self._url = url
        self._body = body
        self._seen: list[str] = []

    def _on_failed(self, request: Request) -> None:
        if request.url == self._url and request.failure and request.post_data == self._body:
            self._seen.append(request.failure)

    def __enter__(self) -> FetchFailures:
        self._page.on("requestfailed", self._on_failed)
        return self

    def __exit__(self, *_exc: object) -> None:
        with contextlib.suppress(PlaywrightError):
            self._page.remove_listener("requestfailed", self._on_failed)

    def named(self, error: str) -> str:
        # the same request asked twice at once (one grid page of one channel) fails alike
        return f"{error} ({self._seen[-1]})" if self._seen else error


@dataclass(frozen=True, slots=True)
class Fetched:
    status: int
    url: str
    text: str
    # Network.loadNetworkResource follows redirects but never says where it ended: `url` is then the
    # requested URL and a login or verification page reached by a redirect is known by its content.
    final_url_known: bool = True
    # ... and it drops the body of an HTTP error answer: only the status is known.
    body_lost: bool = False


def unstreamed(resource: dict[str, Any], url: str) -> Fetched:
    """A Network.loadNetworkResource answer without a stream: an HTTP error answer (named
    HTTP_ERROR_ANSWER, or only its code HTTP_ERROR_CODE) is its status with the body lost;
    another net error after a status is the answer broken off (SiteUnavailable); no status at all
    is a TransportError."""
    status = int(resource.get("httpStatusCode") or 0)
    name = resource.get("netErrorName")
    reason = name or f"net error {resource.get('netError')}"
    if status and (name == HTTP_ERROR_ANSWER or (not name and resource.get("netError") == HTTP_ERROR_CODE)):
        # an HTTP error answer: Chromium keeps its body, the status tells
        return Fetched(status, url, "", final_url_known=False, body_lost=True)
    if status:
        # The answer started and broke off (net::ERR_CONTENT_LENGTH_MISMATCH: the connection
        # dropped): the site failed this request, retried like a 5xx. It was read as an empty page
        # (PARSER_UNSUPPORTED, never retried).
        raise SiteUnavailable(reason=f"{reason} ({without_query(url)})", status=status)
    raise TransportError(f"{reason} ({url})")


class LoaderUnavailable(Exception):
    """This browser has no usable Network.loadNetworkResource (the request API is used instead)."""


@dataclass(slots=True)
class WorkSession:
    """The CDP session kept on the work tab for Network.loadNetworkResource."""

    page: Page
    generation: int
    session: CDPSession



class ResourceLoading:
    """Mixed into `CnkiSite`, which owns the browser host, the limiter and the loader state."""

    _host: BrowserHost
    _limiter: Limiter
    _loader: WorkSession | None
    _loader_lock: asyncio.Lock
    _loader_available: bool

    async def _load(self, url: str, op: SiteOp | None) -> Fetched:
        """site-rules.md §1.5: Network.loadNetworkResource, else (a browser without it) the request API."""
        if self._loader_available:
            try:
                return await self._load_resource(url, op)
            except LoaderUnavailable as exc:
                log.warning("Network.loadNetworkResource unavailable, using the request API: %s", exc)
                self._loader_available = False
        return await self._request_get(url, op)

    async def _work_session(self) -> WorkSession:
        """The CDP session on the work tab, made once and reused until the tab or browser changes."""
        async with self._loader_lock:
            page = await self._host.work_page()
            current = self._loader
            if (
                current is not None
                and current.page is page
                and current.generation == self._host.generation
                and not page.is_closed()
            ):
                return current
            await self._detach_loader()
            try:
                session = await bounded(self._host.cdp(page), CALL_SECONDS, "CDP session")
            except PlaywrightError as exc:
                self._host.note_error(exc)
                raise TransportError(str(exc)) from exc
            except BrowserStalled as exc:
                raise TransportError(str(exc)) from exc
            self._loader = WorkSession(page, self._host.generation, session)
            return self._loader

    async def _detach_loader(self) -> None:
        work, self._loader = self._loader, None
        if work is not None:
            with contextlib.suppress(PlaywrightError, BrowserStalled):
                await bounded(work.session.detach(), CLOSE_SECONDS, "CDP detach")

    async def _load_resource(self, url: str, op: SiteOp | None) -> Fetched:
        """GET `url` in the work tab's frame: Chromium's network stack (proxy, resolver rules,
        certificates) and cookies, no rendering, cross-origin; the body is read through IO.read."""
        work = await self._work_session()
        session = work.session
        try:
            async with self._limiter.slot(budget=op):
                tree = await bounded(session.send("Page.getFrameTree"), CALL_SECONDS, "frame tree")
                params = {
                    "frameId": tree["frameTree"]["frame"]["id"],
                    "url": url,
                    "options": {"disableCache": False, "includeCredentials": True},
                }
                result = await asyncio.wait_for(
                    session.send("Network.loadNetworkResource", params), FETCH_TIMEOUT_MS / 1000
                )
                resource: dict[str, Any] = result.get("resource") or {}
                status = int(resource.get("httpStatusCode") or 0)
                stream = resource.get("stream")
                if not stream:
                    return unstreamed(resource, url)
                body = await self._read_stream(session, str(stream), url, resource.get("headers") or {})
        except BrowserStalled as exc:
            raise TransportError(f"{exc} ({without_query(url)})") from exc
        except TimeoutError as exc:
            raise TransportError(f"Network.loadNetworkResource timed out ({url})") from exc
        except PlaywrightError as exc:
            if method_missing(exc):
                raise LoaderUnavailable(str(exc).splitlines()[0][:200]) from exc
            self._host.note_error(exc)
            if self._loader is work:
                await self._detach_loader()  # a fresh session on the next load
            if self._host.tab_lost(work.page, exc) and await self._host.check_alive():
                # the person closed the work tab (or it crashed): CNKI answered nothing wrong; it
                # was SITE_UNAVAILABLE ("知网暂时不可用") for every page loading there
                raise PageChanged(str(exc)) from exc
            raise TransportError(str(exc)) from exc
        return Fetched(status or 200, url, body.decode("utf-8", "replace"), final_url_known=False)

    @staticmethod
    async def _read_stream(session: CDPSession, handle: str, url: str, headers: dict[str, Any]) -> bytes:
        """IO.read in 1 MiB chunks up to the 8 MiB cap, then IO.close (always)."""
        try:
            lengths = [v for k, v in headers.items() if k.lower() == "content-length"]
            length = int(lengths[0]) if lengths and str(lengths[0]).strip().isdigit() else 0
            if length > MAX_BODY:
                raise ResponseTooLarge(url=without_query(url), length=length)
            chunks: list[bytes] = []
            total = 0
            while True:
                part = await bounded(
                    session.send("IO.read", {"handle": handle, "size": READ_CHUNK}), CALL_SECONDS, "IO.read"
                )
                data = str(part.get("data") or "")
                raw = base64.b64decode(data) if part.get("base64Encoded") else data.encode("utf-8")
                total += len(raw)
                if total > MAX_BODY:
                    raise ResponseTooLarge(url=without_query(url), length=total)
                chunks.append(raw)
                if part.get("eof") or not raw:
                    return b"".join(chunks)
        finally:
            with contextlib.suppress(PlaywrightError, BrowserStalled):
                await bounded(session.send("IO.close", {"handle": handle}), CLOSE_SECONDS, "IO.close")

    async def _request_get(self, url: str, op: SiteOp | None) -> Fetched:
        """Fallback GET through the context's APIRequestContext: the browser's cookies, no rendering,
        but Playwright's own network stack (no browser proxy, resolver rules or client certificates)."""
        ctx = await self._host.ensure()
        try:
            async with self._limiter.slot(budget=op):
                response = await ctx.request.get(url, timeout=FETCH_TIMEOUT_MS, max_redirects=10)
            try:
                length = int(response.headers.get("content-length") or 0)
                if length > MAX_BODY:
                    raise ResponseTooLarge(url=without_query(url), length=length)
                body = await response.body()
            finally:
                await response.dispose()
        except PlaywrightError as exc:
            self._host.note_error(exc)
            raise TransportError(str(exc)) from exc
        if len(body) > MAX_BODY:
            raise ResponseTooLarge(url=without_query(url), length=len(body))
        return Fetched(response.status, response.url, body.decode("utf-8", "replace"))


def method_missing(exc: PlaywrightError) -> bool:
    """The browser does not know the CDP method (Chromium before Network.loadNetworkResource)."""
    text = str(exc)
    return "wasn't found" in text or "-32601" in text or "Method not found" in text
