"""Driver for PyPI `cnki-mcp-server` 0.2.1, run in its own venv: the tool's `search_cnki_impl`
(home page one-box search, optional field, 2 pages) and `get_paper_detail_impl` on its shared
browser pool. Argument: a JSON object {"query", "search_type", "pages"}."""

from __future__ import annotations

import asyncio
import json
import sys

import _launch


async def main(args: dict) -> dict:
    from cnki_mcp.browser import AsyncBrowserPool
    from cnki_mcp.detail import get_paper_detail_impl
    from cnki_mcp.search import search_cnki_impl

    pool = AsyncBrowserPool()
    out: dict = {}
    try:
        page = await pool.new_page()
        try:
            out["search"] = await search_cnki_impl(
                page, args["query"], args.get("search_type", "主题"), args.get("pages", 1), "相关度"
            )
        finally:
            await page.close()
        url = out["search"]["papers"][0]["url"]
        page = await pool.new_page()
        try:
            out["detail"] = await get_paper_detail_impl(page, url)
        finally:
            await page.close()
    finally:
        await pool.close()
    return out


if __name__ == "__main__":
    _launch.install()
    _launch.emit(asyncio.run(main(json.loads(sys.argv[1]))))
