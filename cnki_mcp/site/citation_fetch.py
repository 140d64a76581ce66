"""`CnkiSite`'s citation-API requests (docs/citation-api.md): one limited request per list page
or count, made from a CNKI page that holds the guest session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError

from cnki_mcp.parse.citations import CitationListPage, parse_citation_list, parse_citation_metrics
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.citation_api import citation_url
from cnki_mcp.site.navigation import NAV_TIMEOUT_MS
from cnki_mcp.site.transport import TransportError, transport_unavailable

if TYPE_CHECKING:
    from cnki_mcp.site.browser import BrowserHost
    from cnki_mcp.site.endpoints import Endpoints
    from cnki_mcp.site.human import HumanGate
    from cnki_mcp.site.limiter import Limiter
    from cnki_mcp.site.page_lease import PageLease


class CitationFetching:
    """Mixed into `CnkiSite`, whose loader (`_fetch_parsed`: retries, challenges, login pages)
    and first visit it uses."""

    _host: BrowserHost
    _limiter: Limiter
    _gate: HumanGate
    _work_lease: PageLease
    endpoints: Endpoints

    if TYPE_CHECKING:  # provided by CnkiSite; declared for the type checker only

        async def _fetch_parsed(self, url: str, op: SiteOp | None, parse: Any) -> Any: ...

        async def _first_visit(self, page: Any, op: SiteOp | None, *, force: bool = False) -> None: ...

        async def _has_session(self, page: Any) -> bool | None: ...

    async def citation_list(
        self, detail_url: str, kind: str, type_code: str, start: int, op: SiteOp | None = None
    ) -> CitationListPage:
        url = citation_url(detail_url, kind, type_code=type_code, start=start)
        await self._on_site(op)
        page: CitationListPage = await self._fetch_parsed(
            url, op, lambda text, u: parse_citation_list(text, type_code, u)
        )
        return page

    async def citation_metrics(self, detail_url: str, op: SiteOp | None = None) -> dict[str, int]:
        url = citation_url(detail_url, "quotations/metrics")
        await self._on_site(op)
        counts: dict[str, int] = await self._fetch_parsed(url, op, lambda text, _u: parse_citation_metrics(text))
        return counts

    async def _on_site(self, op: SiteOp | None) -> None:
        """The API is called by CNKI's own pages with the guest session: the work tab (whose frame
        the loader requests from) must hold the session and stand on a CNKI page, else a
        same-site cookie is not sent. A fresh tab comes in through the home page. A browser that
        does not answer is SITE_UNAVAILABLE."""
        try:
            await self._to_site(op)
        except TransportError as exc:
            raise transport_unavailable(exc) from exc

    async def _to_site(self, op: SiteOp | None) -> None:
        page = await self._host.work_page()
        if self.endpoints.is_site_url(page.url) and await self._has_session(page):
            return
        # navigating the search page: once the grid requests in flight there have answered
        async with self._gate.behind_step(op, self._work_lease.exclusive(), self._work_lease.exclusive_busy):
            page = await self._host.work_page()
            await self._first_visit(page, op)
            if self.endpoints.is_site_url(page.url):
                return
            try:
                async with self._limiter.slot(budget=op):
                    await page.goto(self.endpoints.www_home, wait_until="domcontentloaded", timeout=NAV_TIMEOUT_MS)
            except PlaywrightError as exc:  # the API call that follows tells what is wrong
                self._host.note_error(exc)
