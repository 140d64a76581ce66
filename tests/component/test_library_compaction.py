"""The library index stays compact: a paper written again unchanged leaves the FTS index as it
is, and the open compacts an index whose rows were rewritten often enough, with the same answers
(DESIGN.md §Library search, "Compaction")."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.store import Store
from cnki_mcp.store import library_upkeep as library_index

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def row(i: int, title: str | None = None) -> GridRow:
    """Paper i of the library tests (this file's and test_library_rebuild's)."""
    return GridRow(
        title=title or f"违约金过高时的司法酌减规则研究之{i}",
        authors=["王明"],
        source="法学研究",
        year=2000 + i,
        doc_type="期刊",
        native=NativeId(dbname="CJFDLAST2021", filename=f"C{i}"),
        detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v=C{i}",
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


def fts_data(data: Path) -> list[tuple[int, bytes]]:
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        return conn.execute("SELECT id, block FROM library_fts_data ORDER BY id").fetchall()


def stale(data: Path) -> str | None:
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        got = conn.execute("SELECT value FROM library_meta WHERE key = 'stale'").fetchone()
    return got[0] if got else None


def answers(store: Store, clock: FakeClock) -> list[object]:
    """Every page a client could see for a few queries (scores, order, snippets, totals)."""
    out: list[object] = []
    for query in ("违约金", "酌减规则", "研究 司法", "之"):
        for offset in (0, 3):
            page = search_library(store, LibraryInput(query=query, offset=offset, limit=4), store.data_dir, clock)
            out.append(page.model_dump())
    return out


def rewrite_texts(store: Store, refs: list[str], clock: FakeClock) -> None:
    for n, ref in enumerate(refs):
        store.save_fulltext(ref, "html", f"正文第{n}篇讨论违约金的酌减。", T0 + timedelta(minutes=n))


def test_a_paper_written_again_unchanged_leaves_the_fts_index_untouched(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        store.upsert_from_grid([row(i) for i in range(5)], T0)
        before = fts_data(data)
        store.upsert_from_grid([row(i) for i in range(5)], T0 + timedelta(days=1))  # the same rows again
        assert fts_data(data) == before
        assert stale(data) == "0"
        store.upsert_from_grid([row(i).model_copy(update={"year": 1990}) for i in range(2)], T0)
        assert fts_data(data) == before  # a filter value changed, not the indexed text
        assert search_library(store, LibraryInput(query="酌减", year_to=1995), data, clock).total == 2


def test_rewritten_rows_are_compacted_at_the_next_open_with_the_same_answers(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_index, "COMPACT_MIN_STALE", 4)
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        refs = [p.record_ref for p in store.upsert_from_grid([row(i) for i in range(10)], T0)]
        rewrite_texts(store, refs[:3], clock)  # below the threshold (4)
        assert stale(data) == "3"
    kept = fts_data(data)
    with Store.open(data, clock) as store:
        assert fts_data(data) == kept  # not due: the open leaves the index as it is
        rewrite_texts(store, refs[3:], clock)
        assert stale(data) == "10"
        before = answers(store, clock)
    grown = fts_data(data)
    with Store.open(data, clock) as store:
        assert stale(data) == "0"
        compacted = fts_data(data)
        assert len(compacted) < len(grown)  # the dead entries are gone
        assert answers(store, clock) == before


def test_an_index_that_never_counted_its_rewrites_is_compacted_once(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        refs = [p.record_ref for p in store.upsert_from_grid([row(i) for i in range(6)], T0)]
        rewrite_texts(store, refs, clock)
        before = answers(store, clock)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:  # as the release before this counter left it
        conn.execute("DELETE FROM library_meta WHERE key = 'stale'")
    grown = fts_data(data)
    with Store.open(data, clock) as store:
        assert stale(data) == "0"
        assert len(fts_data(data)) < len(grown)
        assert answers(store, clock) == before


def test_a_compaction_that_fails_leaves_the_store_open_and_searchable(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        refs = [p.record_ref for p in store.upsert_from_grid([row(i) for i in range(6)], T0)]
        rewrite_texts(store, refs, clock)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        conn.execute("DELETE FROM library_meta WHERE key = 'stale'")
    kept = fts_data(data)

    def full(conn: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(library_index, "compact_index", full)
    with Store.open(data, clock) as store:
        assert store.notices == []
        assert search_library(store, LibraryInput(query="酌减"), data, clock).total == 6
    assert fts_data(data) == kept
    assert stale(data) is None  # still due: the next open tries again
