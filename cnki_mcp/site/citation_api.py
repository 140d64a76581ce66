"""URLs of the article page's citation JSON API (docs/citation-api.md). Pure."""

from __future__ import annotations

from urllib.parse import urlencode, urljoin

from cnki_mcp.errors import LocatorExpired
from cnki_mcp.parse._html import query_param
from cnki_mcp.parse.citations import PAGE_SIZE

API_PATH = "/restapi/citation-api/v1/literature/"


def citation_url(detail_url: str, endpoint: str, *, type_code: str | None = None, start: int = 1) -> str:
    """`endpoint` is a list kind (`references`, `co-citations`, …) or `quotations/metrics`; the
    request carries the detail page's own `v` token, as the page does."""
    v = query_param(detail_url, "v")
    if not v:
        raise LocatorExpired("详情页链接里没有 v 参数")
    params: dict[str, str | int] = {"v": v}
    if type_code is not None:
        params.update(type=type_code, start=start, size=PAGE_SIZE)
    return urljoin(detail_url, API_PATH + endpoint) + "?" + urlencode(params)
