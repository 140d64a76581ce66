"""Opening a store an earlier release wrote (tests/fixtures: schema 2 before the library index,
schema 3 with its first version) when the upgrade cannot finish: the process killed between the
last schema step and the end of the library index rebuild, the file locked by another program,
the disk full. The person's database is never set aside for a passing cause, and a start after
the cause is gone finishes the upgrade. And a data directory moved to another place keeps its
downloaded files."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import DatabaseUnusable, DataDirectoryUnusable
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.operations import BudgetSpec, OperationKind, OperationRecord, StoreSink
from cnki_mcp.pdf_text import read_pdf_text
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.pages.files import pdf_bytes
from cnki_mcp.store import Store, file_sha256, library_upkeep
from cnki_mcp.store import db as store_db
from cnki_mcp.store import library as library_index
from cnki_mcp.store.db import SCHEMA_VERSION

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCHEMA2 = FIXTURES / "store-schema2.sqlite3"
SCHEMA3 = FIXTURES / "library-schema3.sqlite3"


class Killed(BaseException):
    """The process dying where it is raised: nothing after it runs, nothing is committed."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


def _data_dir(tmp_path: Path, fixture: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(fixture, data / "cnki.sqlite3")
    return data


def _papers(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT record_ref, data FROM papers ORDER BY record_ref").fetchall()


def _found(store: Store, query: str, clock: FakeClock) -> list[str]:
    page = search_library(store, LibraryInput(query=query), store.data_dir, clock)
    return [r.title for r in page.results]


@pytest.mark.parametrize("indexed_before_the_kill", [0, 2])
def test_a_kill_during_the_index_rebuild_after_the_migration_rebuilds_it_at_the_next_start(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, indexed_before_the_kill: int
) -> None:
    """The schema steps commit (the prefix-index step empties library_fts), then the process dies
    before the rebuild of the index commits. The store written by the first library release
    carries its analyzer mark, so the next start took the empty index for a built one: every
    search_library answer was empty for good."""
    data = _data_dir(tmp_path, SCHEMA3)
    indexed: list[str] = []
    real_index_paper = library_index.index_paper

    def dies_midway(conn: sqlite3.Connection, paper: object) -> int:
        if len(indexed) == indexed_before_the_kill:
            raise Killed
        indexed.append(paper.record_ref)  # type: ignore[attr-defined]
        return real_index_paper(conn, paper)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(library_upkeep, "index_paper", dies_midway)  # as the rebuild calls it
        with pytest.raises(Killed):
            Store.open(data, clock)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # the steps committed
    with Store.open(data, clock) as store:
        assert _found(store, "酌", clock) == ["违约金过高时的司法酌减规则研究"]
        assert _found(store, "情势变更", clock) == ["合同解除与损害赔偿"]  # the kept full text
        assert store.library_size() == (3, 1)


def _connect_with(monkeypatch: pytest.MonkeyPatch, *pragmas: str, timeout: float = 5.0) -> None:
    def connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=timeout)
        for pragma in pragmas:
            conn.execute(pragma)
        return conn

    monkeypatch.setattr(store_db, "_connect", connect)


def test_a_migration_another_program_holds_up_is_database_unusable_and_the_store_is_kept(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DB browser or a backup tool with a write transaction open on cnki.sqlite3 while the
    upgraded server starts: the migration cannot take the file. It was set aside as corrupt and an
    empty database started (library, searches, watches gone from view)."""
    data = _data_dir(tmp_path, SCHEMA2)
    before = _papers(data / "cnki.sqlite3")
    other = sqlite3.connect(data / "cnki.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with monkeypatch.context() as patch:
            _connect_with(patch, timeout=0.01)
            with pytest.raises(DatabaseUnusable) as info:
                Store.open(data, clock)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert info.value.code == "DATABASE_UNUSABLE" and info.value.details["reason"] == "locked"
    # at start the error names the file the person has to close elsewhere
    assert info.value.details["path"] == str(data / "cnki.sqlite3")
    assert list(data.glob("cnki.sqlite3.corrupt-*")) == []
    with Store.open(data, clock) as store:  # the program closed: the upgrade goes through
        assert store.notices == [] and store.paper_count() == 3
        assert _found(store, "违约金", clock) == ["违约金过高时的司法酌减规则研究"]
    assert _papers(data / "cnki.sqlite3") == before


def test_a_migration_on_a_full_disk_is_data_directory_unusable_and_the_store_is_kept(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room for the new tables (max_page_count stands for the full disk: SQLite answers
    SQLITE_FULL either way). The database was set aside as corrupt, and the fresh one could not be
    created either: an uncoded exception, and after space was freed an empty library with no word
    of where the old one went."""
    data = _data_dir(tmp_path, SCHEMA2)
    before = _papers(data / "cnki.sqlite3")
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    with monkeypatch.context() as patch:
        _connect_with(patch, f"PRAGMA max_page_count = {pages}")
        with pytest.raises(DataDirectoryUnusable) as info:
            Store.open(data, clock)
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "disk_full"
    assert list(data.glob("cnki.sqlite3.corrupt-*")) == []
    with Store.open(data, clock) as store:  # space freed
        assert store.notices == [] and store.paper_count() == 3
        assert _found(store, "违约金", clock) == ["违约金过高时的司法酌减规则研究"]
    assert _papers(data / "cnki.sqlite3") == before


def test_a_data_directory_moved_elsewhere_keeps_its_downloaded_files(tmp_path: Path, clock: FakeClock) -> None:
    """Moved to a new disk or machine, restored from a backup, named by another CNKI_DATA_DIR: the
    files are in the new downloads/, but their recorded paths named the old place. read_pdf_text
    refused the file as outside downloads/, download_paper answered FILE_EXISTS for the very file
    it had downloaded, and the PDF's text never reached the library index."""
    record = next(r for r in Corpus.load().records if r.fulltext)
    old = tmp_path / "old" / "downloads" / "data"  # a folder named like the archive on the way
    with Store.open(old, clock) as store:
        grid = GridRow(title=record.title, authors=["王明"], source="法学研究", year=2021, doc_type="期刊",
                       native=NativeId(dbname="CJFDLAST2021", filename="P1"))  # fmt: skip
        [paper] = store.upsert_from_grid([grid], T0)
        path = old / "downloads" / "民法" / "p1.pdf"  # in a subdirectory
        path.parent.mkdir(parents=True)
        path.write_bytes(pdf_bytes(record))
        store.record_download(paper.record_ref, "pdf", path, file_sha256(path), path.stat().st_size, T0)
    new = tmp_path / "new"
    old.rename(new)
    with Store.open(new, clock) as store:
        stored = store.download_for(paper.record_ref, "pdf")
        assert stored is not None and stored.path == new / "downloads" / "民法" / "p1.pdf"
        assert stored.intact()  # download_paper answers from the archive
        words = next(s.text for s in record.fulltext if len(s.text) > 80)[30:60]
        assert words in read_pdf_text(str(stored.path), new).text
        assert _found(store, words, clock) == [record.title]  # the PDF's text was indexed


@pytest.mark.parametrize(
    "damaged",
    [
        "json_set(data, '$.year', 'MMXXI')",
        # not JSON at all (cut short): load raised json's JSONDecodeError, which the rebuild let out
        "substr(data, 1, length(data) - 1)",
    ],
)
def test_a_stored_paper_the_current_models_cannot_read_does_not_stop_the_upgrade(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture, damaged: str
) -> None:
    """One paper row with a value this release cannot read (a newer release changed its type,
    before the person went back to this one; or an earlier bug wrote it) made the index rebuild
    after the migration raise a bare ValidationError: the server could not start, on every try."""
    data = _data_dir(tmp_path, SCHEMA3)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        conn.execute(
            f"UPDATE papers SET data = {damaged} WHERE rowid ="
            " (SELECT rowid FROM papers WHERE json_extract(data, '$.title') = '合同解除与损害赔偿')"
        )
    with Store.open(data, clock) as store:
        assert store.paper_count() == 3
        assert _found(store, "酌", clock) == ["违约金过高时的司法酌减规则研究"]
    assert [r.levelno for r in caplog.records if r.name == "cnki_mcp.store.library_upkeep"] == [logging.WARNING]


def test_records_a_newer_release_wrote_with_fields_this_one_does_not_know_are_read(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A release adds fields to stored records without a schema step; a person who goes back to
    this release finds them. Every model nested in a paper and an operation record forbids
    unknown keys: search_library, get_metadata and export_citations failed INVALID_ARGUMENT (as if
    the caller's arguments were wrong) or INTERNAL, operation_status and diagnostics too."""
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        grid = GridRow(title="违约金过高时的司法酌减规则研究", authors=["王明"], source="法学研究", year=2021,
                       native=NativeId(dbname="CJFDLAST2021", filename="P1"))  # fmt: skip
        [paper] = store.upsert_from_grid([grid], T0)
        sink = StoreSink(store)
        sink.save(OperationRecord(operation_id="op_" + "a" * 24, kind=OperationKind.SEARCH, created_at=T0,
                                  updated_at=T0, budget=BudgetSpec(max_requests=9, timeout_seconds=60)))  # fmt: skip
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        conn.execute(
            "UPDATE papers SET data = json_set(data, '$.authors[0].orcid', '0000-0002', '$.native.family', 'JOURNAL',"
            " '$.reading_time', 12)"
        )
        conn.execute(
            "UPDATE operations SET record = json_set(record, '$.progress.eta_seconds', 5,"
            " '$.budget.max_pages', 3, '$.priority', 'high')"
        )
    with Store.open(data, clock) as store:
        stored = store.get(paper.record_ref)
        assert stored is not None and stored.author_names() == ["王明"] and stored.native == paper.native
        assert _found(store, "酌减", clock) == ["违约金过高时的司法酌减规则研究"]
        record = StoreSink(store).load("op_" + "a" * 24)
        assert record is not None and record.budget.max_requests == 9 and record.progress.done == 0
