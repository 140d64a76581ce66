"""`pipeline.links.lookup_reads_on`: when an exact-title lookup asks again for the titles its page
did not carry (CNKI lists every title containing the phrase)."""

from __future__ import annotations

from cnki_mcp.models import GridPage, GridRow
from cnki_mcp.pipeline.links import ALONE_PAGES, lookup_reads_on

ROWS = [GridRow(title=f"论违约金之辨{i}") for i in range(50)]


def page(n: int, count: int) -> GridPage:
    return GridPage(rows=ROWS, total=50 * count, page=n, page_count=count)


def test_a_shared_page_with_more_listed_asks_its_missing_titles_again() -> None:
    assert lookup_reads_on(page(1, 3), titles=10, page_no=1)


def test_a_title_alone_reads_on_until_the_last_page_or_alone_pages() -> None:
    assert all(lookup_reads_on(page(n, 9), titles=1, page_no=n) for n in range(1, ALONE_PAGES))
    assert not lookup_reads_on(page(ALONE_PAGES, 9), titles=1, page_no=ALONE_PAGES)
    assert not lookup_reads_on(page(2, 2), titles=1, page_no=2)  # CNKI's last page


def test_an_empty_or_last_page_asks_nothing_again() -> None:
    assert not lookup_reads_on(GridPage(rows=[], zero_results=True), titles=10, page_no=1)
    assert not lookup_reads_on(page(1, 1), titles=10, page_no=1)
