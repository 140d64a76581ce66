"""A large library's index is rebuilt after the open, step by step, and a rebuild cut short goes
on where it stopped (DESIGN.md §Library search, "Rebuild"): a start after an upgrade must answer
the client's handshake, which a 100,000-paper rebuild inside the open did not within 60 s."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import DataDirectoryUnusable, LibraryIndexBuilding
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.store import Store
from cnki_mcp.store import library as library_index
from cnki_mcp.store import library_upkeep as upkeep
from cnki_mcp.store.db import _V_CHECKPOINT_LOG, _V_READER_PAGES, MIGRATIONS
from tests.component.test_library_compaction import row

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAPERS = 9


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Libraries of more than 3 papers count as large, rebuilt 2 papers per step."""
    monkeypatch.setattr(upkeep, "REBUILD_AT_OPEN", 3)
    monkeypatch.setattr(upkeep, "REBUILD_STEP", 2)


def meta(data: Path, key: str) -> str | None:
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        got = conn.execute("SELECT value FROM library_meta WHERE key = ?", (key,)).fetchone()
    return got[0] if got else None


def set_meta(data: Path, key: str, value: str | None) -> None:
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        if value is None:
            conn.execute("DELETE FROM library_meta WHERE key = ?", (key,))
        else:
            conn.execute("INSERT OR REPLACE INTO library_meta (key, value) VALUES (?, ?)", (key, value))


def library_of(data: Path, clock: FakeClock, papers: int = PAPERS) -> None:
    """A library whose index an upgrade left to rebuild (the analyzer mark gone, as every schema
    step from schema 3 on leaves it)."""
    with Store.open(data, clock) as store:
        store.upsert_from_grid([row(i) for i in range(papers)], T0)
    set_meta(data, "analyzer", None)


def finish(store: Store) -> None:
    """Every step of the upkeep the open left, as the store's thread takes them."""
    while not store.index_step():
        pass


def building(store: Store, clock: FakeClock) -> dict[str, object]:
    """The details of the LIBRARY_INDEX_BUILDING search_library answers during a rebuild."""
    with pytest.raises(LibraryIndexBuilding) as refused:
        found(store, clock)
    assert refused.value.code == "LIBRARY_INDEX_BUILDING" and refused.value.retryable
    return refused.value.details


def found(store: Store, clock: FakeClock, query: str = "酌减") -> int:
    return search_library(store, LibraryInput(query=query, limit=100), store.data_dir, clock).total


def test_a_large_library_is_searchable_only_once_its_rebuild_after_the_open_is_done(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        assert building(store, clock) == {"indexed": 0, "papers": PAPERS}
        for _ in range(PAPERS // 2 + 1):  # 2 papers a step
            assert not store.index_step()
        assert meta(data, "analyzer") == library_index.ANALYZER_VERSION and meta(data, "rebuild_after") is None
        assert found(store, clock) == PAPERS
        assert meta(data, "stale") is None  # the compaction follows, in steps too
        finish(store)
        assert meta(data, "stale") == "0"
        assert found(store, clock) == PAPERS


def test_a_rebuild_cut_short_goes_on_where_it_stopped(tmp_path: Path, clock: FakeClock, small_steps: None) -> None:
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        assert not store.index_step() and not store.index_step()
    with Store.open(data, clock, upkeep=False) as store:
        assert building(store, clock) == {"indexed": 4, "papers": PAPERS}
        finish(store)
        assert found(store, clock) == PAPERS


def test_a_rebuild_under_way_with_another_analyzer_or_after_a_migration_starts_again(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        assert not store.index_step() and not store.index_step()
    set_meta(data, "rebuilding", "bigram-1")  # a release with another analyzer was cut short
    with Store.open(data, clock, upkeep=False) as store:
        assert building(store, clock)["indexed"] == 0
        store.index_step()
    with sqlite3.connect(data / "cnki.sqlite3") as conn:  # a release whose schema step follows
        conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_V_CHECKPOINT_LOG)}")
        conn.execute("DROP TABLE operation_log")
    with Store.open(data, clock, upkeep=False) as store:
        assert building(store, clock)["indexed"] == 0


def test_a_schema_step_the_index_does_not_read_leaves_the_built_index_alone(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    # the reader pages' table: a large library kept search_library waiting on a rebuild for nothing
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        finish(store)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_V_READER_PAGES)}")
        conn.execute("DROP TABLE reader_pages")
    with Store.open(data, clock, upkeep=False) as store:
        store.check_index_built()  # not LIBRARY_INDEX_BUILDING
        assert found(store, clock) == PAPERS and store.reader_page("rec_none", clock.now(), parser_version=1) is None


def test_papers_written_during_a_rebuild_are_each_found_once_it_is_done(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        assert not store.index_step()
        store.upsert_from_grid([row(0, "滞纳金的酌减"), row(8, "格式条款的酌减"), row(20, "定金罚则的酌减")], T0)
        finish(store)
        assert found(store, clock) == PAPERS + 1
        assert found(store, clock, "违约金") == PAPERS - 2
        assert [found(store, clock, q) for q in ("滞纳金", "格式条款", "定金罚则")] == [1, 1, 1]


def test_the_store_finishes_a_rebuild_in_its_own_thread(tmp_path: Path, clock: FakeClock, small_steps: None) -> None:
    data = tmp_path / "data"
    library_of(data, clock)
    store = Store.open(data, clock)
    try:
        assert store._upkeep is not None
        store._upkeep.join()
        assert found(store, clock) == PAPERS
    finally:
        store.close()
    assert meta(data, "analyzer") == library_index.ANALYZER_VERSION


def test_closing_the_store_stops_its_rebuild_at_a_step_and_the_next_open_goes_on(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    data = tmp_path / "data"
    library_of(data, clock, papers=PAPERS * 20)
    store = Store.open(data, clock)
    store.close()  # waits for a step under way; the thread stops before the next
    assert store._upkeep is not None and not store._upkeep.is_alive()
    after = meta(data, "rebuild_after")
    with Store.open(data, clock, upkeep=False) as again:
        if after is not None:
            assert building(again, clock)["indexed"] == int(after)
        finish(again)
        assert found(again, clock) == PAPERS * 20


def rewritten(data: Path, clock: FakeClock) -> list[tuple[int, bytes]]:
    """A library whose rewritten rows made a compaction due (the FTS blocks as they are)."""
    with Store.open(data, clock) as store:
        refs = [p.record_ref for p in store.upsert_from_grid([row(i) for i in range(PAPERS)], T0)]
        for n, ref in enumerate(refs):
            store.save_fulltext(ref, "html", f"正文第{n}篇讨论违约金的酌减。", T0)
    set_meta(data, "stale", None)  # as a store from before the counter: compacted once
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        return conn.execute("SELECT id, block FROM library_fts_data ORDER BY id").fetchall()


def test_a_large_library_is_compacted_after_the_open_in_steps_with_the_same_answers(
    tmp_path: Path, clock: FakeClock, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setattr(upkeep, "REBUILD_AT_OPEN", PAPERS + 10)  # compacted inside the open
    small = tmp_path / "small"
    grown = rewritten(small, clock)
    with Store.open(small, clock, upkeep=False) as store:
        assert store.index_step()  # nothing left
        before = [found(store, clock, q) for q in ("违约金", "正文", "酌减")]
    with sqlite3.connect(small / "cnki.sqlite3") as conn:
        compacted = conn.execute("SELECT id, block FROM library_fts_data ORDER BY id").fetchall()
    assert len(compacted) < len(grown) and meta(small, "stale") == "0"

    monkeypatch.setattr(upkeep, "REBUILD_AT_OPEN", 3)  # large: after the open
    monkeypatch.setattr(upkeep, "COMPACT_PAGES", 1)
    assert rewritten(data, clock) == grown
    with Store.open(data, clock, upkeep=False) as store:
        with sqlite3.connect(data / "cnki.sqlite3") as conn:
            assert conn.execute("SELECT id, block FROM library_fts_data ORDER BY id").fetchall() == grown
        assert [found(store, clock, q) for q in ("违约金", "正文", "酌减")] == before  # searchable meanwhile
        steps = 1
        while not store.index_step():
            steps += 1
        assert steps >= 2  # a merge, then one that found nothing left
        assert [found(store, clock, q) for q in ("违约金", "正文", "酌减")] == before
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert len(conn.execute("SELECT id, block FROM library_fts_data").fetchall()) == len(compacted)
    assert meta(data, "stale") == "0"


def test_a_small_library_is_rebuilt_inside_the_open(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    library_of(data, clock, papers=5)
    with Store.open(data, clock, upkeep=False) as store:
        assert store.index_step()  # nothing left
        assert found(store, clock) == 5
    assert meta(data, "stale") == "0" and meta(data, "rebuild_after") is None


def test_the_rebuild_makes_the_index_table_the_migrations_make(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    def table(data: Path) -> str:
        with sqlite3.connect(data / "cnki.sqlite3") as conn:
            return str(conn.execute("SELECT sql FROM sqlite_master WHERE name = 'library_fts'").fetchone()[0])

    fresh = tmp_path / "fresh"
    Store.open(fresh, clock).close()
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False):
        assert table(data) == table(fresh)


def test_a_refused_step_is_tried_again_and_search_library_says_why_meanwhile(
    tmp_path: Path, clock: FakeClock, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step refused (a backup tool holding the database past the busy timeout) ended the
    thread, and search_library said 稍后重试 for as long as the process lived."""
    from cnki_mcp.store import core

    monkeypatch.setattr(core, "UPKEEP_RETRY_MIN", 3600.0)  # the thread waits until woken below
    data = tmp_path / "data"
    library_of(data, clock)
    real = upkeep.rebuild_step
    calls: list[int] = []

    def refused_once(conn: sqlite3.Connection, limit: int, chars: int | None = None) -> bool:
        calls.append(limit)
        if len(calls) == 2:
            raise sqlite3.OperationalError("database is locked")
        return real(conn, limit, chars)

    class Told:
        """The thread's log: it says the step was refused once it has noted why, then waits."""

        refused = threading.Event()

        def warning(self, *args: object) -> None:
            self.refused.set()

        def info(self, *args: object) -> None:
            pass

    told = Told()
    monkeypatch.setattr(upkeep, "rebuild_step", refused_once)
    monkeypatch.setattr(core, "log", told)
    store = Store.open(data, clock)
    try:
        told.refused.wait()
        assert building(store, clock) == {"indexed": 2, "papers": PAPERS, "stalled": "locked"}
        assert store._upkeep is not None and store._upkeep.is_alive()
        store._upkeep_wake.set()  # the pause ends: the step is tried again
        store._upkeep.join()
        assert found(store, clock) == PAPERS
        assert len(calls) > 2
    finally:
        store.close()


def test_a_step_whose_commit_is_refused_leaves_the_rebuild_due(
    tmp_path: Path, clock: FakeClock, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        for _ in range(PAPERS // 2):  # 8 of 9 indexed, 2 a step
            assert not store.index_step()
        real_write = Store._write

        @contextmanager
        def commit_refused(self: Store) -> Iterator[sqlite3.Connection]:
            with real_write(self) as conn:  # rolled back, as a COMMIT the full disk refused
                yield conn
                raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(Store, "_write", commit_refused)
        with pytest.raises(DataDirectoryUnusable) as refused:
            store.index_step()  # the last papers: finished, but not committed
        assert refused.value.details["reason"] == "disk_full"
        monkeypatch.setattr(Store, "_write", real_write)
        with pytest.raises(LibraryIndexBuilding):
            found(store, clock)
        finish(store)
        assert found(store, clock) == PAPERS


def test_a_step_ends_once_it_has_analysed_enough_characters(
    tmp_path: Path, clock: FakeClock, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step was 200 papers however long their full texts: 200 theses held the store ~40 s."""
    monkeypatch.setattr(upkeep, "REBUILD_STEP", 200)
    monkeypatch.setattr(upkeep, "REBUILD_STEP_CHARS", 2_500)
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        refs = [p.record_ref for p in store.upsert_from_grid([row(i) for i in range(PAPERS)], T0)]
        for ref in refs:
            store.save_fulltext(ref, "html", "违约金的酌减" * 200, T0)  # 1,200 characters each
    set_meta(data, "analyzer", None)
    with Store.open(data, clock, upkeep=False) as store:
        assert not store.index_step()
        assert building(store, clock)["indexed"] == 3  # 3 x ~1,230 characters reach 2,500
        finish(store)
        assert found(store, clock) == PAPERS


def test_a_rebuild_an_older_release_finished_over_starts_again(
    tmp_path: Path, clock: FakeClock, small_steps: None
) -> None:
    """An older release knows no rebuild marks: run in between, it rebuilt the whole index with
    its analyzer and left this release's place, which then went on over the older analysis."""
    data = tmp_path / "data"
    library_of(data, clock)
    with Store.open(data, clock, upkeep=False) as store:
        assert not store.index_step() and not store.index_step()
    set_meta(data, "analyzer", "bigram-1")  # the older release's finished rebuild
    with Store.open(data, clock, upkeep=False) as store:
        assert building(store, clock)["indexed"] == 0


def test_search_library_during_a_rebuild_reads_no_pdf_and_checks_no_type_first(
    tmp_path: Path, clock: FakeClock, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It read every pending PDF (seconds each) and checked document types against the half-built
    index (INVALID_ARGUMENT for a type not re-indexed yet) before saying LIBRARY_INDEX_BUILDING."""
    from cnki_mcp.pipeline import library as pipeline_library

    def reads_pdfs(*args: object) -> None:
        raise AssertionError("the PDFs were read before the rebuild was checked")

    data = tmp_path / "data"
    library_of(data, clock)
    monkeypatch.setattr(pipeline_library, "index_downloaded_pdfs", reads_pdfs)
    with Store.open(data, clock, upkeep=False) as store, pytest.raises(LibraryIndexBuilding):
        search_library(store, LibraryInput(query="酌减", document_types=["期刊"]), data, clock)
