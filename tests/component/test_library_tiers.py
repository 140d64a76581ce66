"""The second tier of a one-term query, once a page saw the whole first tier, is read as "the
matches minus those rows" instead of `(match) NOT <first tier>`: the same rows, order, scores,
snippets and totals, page by page (DESIGN.md §Library search, "what a query costs")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, JournalPage, NativeId
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.store import Store
from cnki_mcp.store import library as library_index

T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUERIES = ("违约金", "提到", "违 约", "约")  # a title term, a term in no title, two terms, a prefix


def row(title: str, filename: str, year: int) -> GridRow:
    return GridRow(
        title=title,
        authors=["王明"],
        source="法学研究",
        year=year,
        doc_type="期刊",
        native=NativeId(dbname="CJFDLAST2021", filename=filename),
        detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v={filename}",
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


def pages(store: Store, clock: FakeClock, **kw: object) -> list[object]:
    out: list[object] = []
    for query in QUERIES:
        for offset in range(12):
            for limit in (1, 3, 5, 20):
                inp = LibraryInput(query=query, offset=offset, limit=limit, **kw)  # type: ignore[arg-type]
                out.append(search_library(store, inp, store.data_dir, clock).model_dump())
    return out


@pytest.mark.parametrize("filters", [{}, {"year_from": 2006}])  # the FTS table alone / joined
def test_the_second_tier_after_a_whole_first_tier_ranks_as_the_not_expression(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, filters: dict[str, int]
) -> None:
    monkeypatch.setattr(library_index, "RANK_WINDOW", 3)  # tiers and windows from 4 matches on
    store.upsert_from_grid([row(f"违约金问题{i}", f"T{i}", 2010 + i) for i in range(2)], T0)
    others = store.upsert_from_grid([row(f"其他论文{i}", f"U{i}", 2004 + i) for i in range(9)], T0)
    for n, paper in enumerate(others):  # different frequencies and lengths: different scores
        text = "正文提到违约金。" * (n + 1) + "其他内容。" * (3 * n)
        store.save_fulltext(paper.record_ref, "html", text, T0 + timedelta(minutes=n))
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        lean = pages(store, clock, **filters)
    finally:
        store._conn.set_trace_callback(None)
    assert any("rowid NOT IN (" in s for s in statements)  # the first tier's rows were left out
    monkeypatch.setattr(library_index, "_single_term", lambda match: False)  # always NOT <first tier>
    assert pages(store, clock, **filters) == lean


def test_a_result_shows_its_journals_tiers_that_source_tiers_filters_on(store: Store, clock: FakeClock) -> None:
    store.upsert_from_grid([row("违约金问题", "T1", 2021), row("违约金其他", "T2", 2022).model_copy(update={"source": "某刊"})], T0)
    store.save_journal("法学研究", JournalPage(name="法学研究", tiers=["北大核心", "CSSCI"]), "present", T0, parser_version=1)
    page = search_library(store, LibraryInput(query="违约金", source_tiers=["CSSCI"]), store.data_dir, clock)
    assert [(r.source, r.tiers) for r in page.results] == [("法学研究", ["北大核心", "CSSCI"])]
    every = search_library(store, LibraryInput(query="违约金"), store.data_dir, clock)
    assert sorted((r.source, tuple(r.tiers)) for r in every.results) == [("某刊", ()), ("法学研究", ("北大核心", "CSSCI"))]
