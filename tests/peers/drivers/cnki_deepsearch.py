"""Driver for PyPI `cnki-deepsearch` 0.2.1, run in its own venv: one-box search, expert search, a
detail page and the enriched article visit (its citation JSON calls) through the tool's own `CNKIBrowser` and parsers (`cnki_mcp.browser`,
`cnki_mcp.parser` of that package). Argument: a JSON object {"query", "expression", "field"}."""

from __future__ import annotations

import asyncio
import json
import sys

import _launch


async def main(args: dict) -> dict:
    from cnki_mcp.browser import CNKIBrowser, SearchConfig
    from cnki_mcp.parser import parse_article_detail, parse_search_results

    # The tool's headed mode (CNKI_HEADED=1 in its server): it waits while a person solves a slider.
    browser = CNKIBrowser(SearchConfig(headless=False))
    await browser.start(headed=True)
    out: dict = {}
    try:
        html, sidebar = await browser.search_simple(args["query"], args.get("field", "SU"), 40)
        out["simple"] = parse_search_results(html)
        out["sidebar"] = sidebar
        html, _ = await browser.search_professional(args["expression"], 20)
        out["expert"] = parse_search_results(html)
        url = out["simple"][0]["url"]
        out["detail"] = parse_article_detail(await browser.get_page_html(url))
        out["detail_url"] = url
        # one visit that also captures the page's citation/similar/domain JSON calls
        enriched = await browser.get_article_enriched(url)
        enriched.pop("html", None)
        out["enriched"] = enriched
    finally:
        await browser.stop()
    return out


if __name__ == "__main__":
    _launch.install()
    _launch.emit(asyncio.run(main(json.loads(sys.argv[1]))))
