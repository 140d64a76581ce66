"""`parse_grid_head`: whether a grid page has rows and its paging, read before the rows are parsed,
must say what `parse_grid` says of the same page (the next page is asked on it). Only a head with
rows is acted on, so for a page without rows only that is compared."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.models import GridHead
from cnki_mcp.parse.grid import parse_grid, parse_grid_head
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.grid import GridPage as SimGridPage
from cnki_mcp.sim.grid import render_grid
from tests.conftest import read_real
from tests.sim_pages_fixtures import FakeLinks

GRID_URL = "https://kns.cnki.net/kns8s/brief/grid"
REAL = [
    "kns8s-grid/kaffu_waam_p1.html",
    "kns8s-grid/pluginsx_shuziwenwu_p1.html",
    "kns8s-grid/pluginsx_search_result_4rows.html",
    "kns8s-grid/kaffu_search_shell_raw.html",
    "kns8-grid-2022-2023/sa1utyeggs_kns8_brief_grid_empty_tbody.html",
    "kns-old-grid/alfxjx_patent_grid_prettified_2020.html",
    "kns-old-grid/asianroad_brief_simple_2017.html",
    "kns-old-grid/lty_selected_docs_tbody_2020.html",
    "kns-old-grid/roliygu_brief_scdb_2017.html",
    "kns-old-grid/summerwu_brief_shouyi_20rows.html",
    "kns-old-grid/summerwu_brief_waikezhengzong.html",
    "kns-old-grid/summerwu_brief_zero_results.html",
    "kns-old-grid/yanxianchen_brief_2018.html",
]


def _same(html: str) -> tuple[GridHead, GridHead]:
    """The head, and what the full parse says (has_rows alone for a page without rows)."""
    head = parse_grid_head(html)
    try:
        full = GridHead.of(parse_grid(html, GRID_URL))
    except CnkiError:  # a page without rows that parse_grid refuses
        full = GridHead(has_rows=False)
    if not full.has_rows:
        return GridHead(has_rows=head.has_rows), full.model_copy(update={"total": None, "page": None,
                                                                        "page_count": None, "turnpage": None})
    return head, full


@pytest.mark.parametrize("name", REAL)
def test_the_head_of_a_real_grid_page_says_what_its_full_parse_says(name: str) -> None:
    head, full = _same(read_real(name))
    assert head == full
    assert head.exhausted is full.exhausted


def test_the_real_pages_include_pages_with_rows_and_pages_without() -> None:
    heads = [parse_grid_head(read_real(name)).has_rows for name in REAL]
    assert 0 < sum(heads) < len(heads)


def test_the_head_of_every_simulator_page_says_what_its_full_parse_says() -> None:
    records = Corpus.load().records
    size = 20
    last = -(-len(records) // size)
    seen_rows = seen_last = 0
    for page in range(1, last + 1):
        rows = records[(page - 1) * size : page * size]
        html = render_grid(
            SimGridPage(rows=rows, total=len(records), page=page, page_size=size, cursor=f"turn-{page}"),
            FakeLinks(),
            terms=["违约金"],
        )
        head, full = _same(html)
        assert head == full, page
        assert head.exhausted is full.exhausted is (page == last)
        seen_rows += head.has_rows
        seen_last += head.exhausted
    assert seen_rows == last and seen_last == 1


def test_a_zero_result_page_has_no_rows_in_its_head() -> None:
    html = render_grid(SimGridPage(rows=[], total=0, page=1, page_size=20, cursor="z"), FakeLinks())
    head = parse_grid_head(html)
    assert not head.has_rows and head.last_ordinal is None
    assert parse_grid(html, GRID_URL).zero_results
