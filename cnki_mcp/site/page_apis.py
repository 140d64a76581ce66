"""The data APIs a CNKI article page's own scripts call, kept out of the tabs the product opens.

A detail page opened in a tab (to read, to download, or to render a script-drawn page) runs the
article page's script, which asks the citation JSON API on its own: the four 核心文献推荐 keyword
lists (`…/literature/{starter,source,branch,boost}/domains`) as soon as that block is in view, and
the counts, twelve reference lists and the similar papers once `#refpartdiv` is (docs/citation-api.md
"How the page loads the lists"). Those requests passed neither the limiter nor the operation's
budget, went on while a human step held every other request, and nothing the product does needs
them: it asks the same API itself, one limited request per list page (`CnkiSite.citation_list`).

So such tabs block them before they navigate (CDP `Network.setBlockedURLs` on a session of their
own, which leaves the page's other resources and the HTTP cache alone): the page's script sees a
failed request, as it does for any request that fails, and shows empty blocks."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from cnki_mcp.site.deadline import CALL_SECONDS, bounded

if TYPE_CHECKING:
    from playwright.async_api import Page

    from cnki_mcp.site.browser import BrowserHost

# `{apiHost}/citation-api/v1/…` and `{apiHost}/usercenter-api/v1/recommend/…` (the similar
# papers), apiHost being `https://kns.cnki.net/restapi` (the page's hidden input; the simulator's
# origin in tests). Only the recommendation part of the user-center API: its other endpoints are
# not documented (docs/citation-api.md), and one the real page's download or login scripts need
# must not fail in a tab the product downloads through.
PAGE_API_PATTERNS: tuple[str, ...] = ("*/restapi/citation-api/*", "*/restapi/usercenter-api/v1/recommend/*")


def blocked_in_tabs(url: str) -> bool:
    """`url` is one of the data APIs the product's tabs block (PAGE_API_PATTERNS): opened in such a
    tab it fails net::ERR_BLOCKED_BY_CLIENT."""
    return any(fnmatchcase(url, pattern) for pattern in PAGE_API_PATTERNS)


async def block_page_apis(host: BrowserHost, page: Page) -> None:
    """Keep `page`'s own scripts from calling CNKI's data APIs, for as long as the tab lives (the
    CDP session stays attached to it). Raises the browser's error, or BrowserStalled, when the
    browser does not take the rule: the caller then treats the tab as unusable."""
    session = await bounded(host.cdp(page), CALL_SECONDS, "attach to a tab")
    await bounded(session.send("Network.enable"), CALL_SECONDS, "network domain of a tab")
    await bounded(
        session.send("Network.setBlockedURLs", {"urls": list(PAGE_API_PATTERNS)}),
        CALL_SECONDS,
        "blocked URLs of a tab",
    )
