"""Driver for PyPI `cnkibug` 1.1.0 (KaffuAlcaid/CNKIBug on GitHub), run in its own venv: its
keyword search (`cnki.search.run_keyword_search`: home page, then `/kns8s/`, box and button), its
result-page scraper over 2 pages (`cnki.pages.scrape_result_pages`) and its detail fetcher
(`cnki.details.ArticleDetailFetcher`). Its browser comes from its own `launch_browser`.
Argument: a JSON object {"query"}."""

from __future__ import annotations

import json
import sys

import _launch


def main(args: dict) -> dict:
    from cnkibug.browser.runtime import launch_browser
    from cnkibug.browser.session import ScrapeSession
    from cnkibug.cnki.details import ArticleDetailFetcher
    from cnkibug.cnki.metrics import new_scrape_stats
    from cnkibug.cnki.pages import scrape_result_pages
    from cnkibug.cnki.search import run_keyword_search
    from cnkibug.core.settings import ScraperSettings
    from playwright.sync_api import sync_playwright

    # The tool's shipped defaults for the timeouts it reads (config.toml of the release).
    settings = ScraperSettings(
        timeout_goto_ms=30000, timeout_load_ms=30000, timeout_selector_ms=30000,
        verify_wait_timeout_sec=120, verify_notice_interval_sec=15, max_advance_fail=3,
        session_cache_enabled=False, session_cache_ttl_hours=0, log_save_path=False,
        log_keywords=False, log_scraped_records=False,
    )  # fmt: skip
    out: dict = {}
    with sync_playwright() as p:
        browser = launch_browser(p).browser
        try:
            context = browser.new_context()
            session = ScrapeSession()
            session.page = context.new_page()
            searched = run_keyword_search(session, args["query"], settings, "k1")
            out["search_status"] = searched.status
            records: list[list[str]] = []
            scrape_result_pages(
                session, settings, keyword=args["query"], keyword_ref="k1", start_page=1, max_pages=2,
                results=records, seen=set(), stats=new_scrape_stats(),
            )  # fmt: skip
            out["records"] = records
            url = next(cell for cell in records[0] if isinstance(cell, str) and "/kcms2/" in cell)
            fetched = ArticleDetailFetcher(context, settings).fetch(url, log_ref="d1")
            out["detail_url"] = url
            out["detail"] = {k: v for k, v in vars(fetched).items()}
        finally:
            browser.close()
    return out


if __name__ == "__main__":
    _launch.install()
    _launch.emit(main(json.loads(sys.argv[1])))
