"""Opening a store an earlier release wrote (tests/fixtures: schema 2 before the library index,
schema 3 with its first version) when the upgrade cannot finish: the process killed between the
last schema step and the end of the library index rebuild, the file locked by another program,
the disk full. The person's database is never set aside for a passing cause, and a start after
the cause is gone finishes the upgrade."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.store import Store
from cnki_mcp.store import library as library_index
from cnki_mcp.store.db import SCHEMA_VERSION

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
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

    def dies_midway(conn: sqlite3.Connection, paper: object) -> None:
        if len(indexed) == indexed_before_the_kill:
            raise Killed
        indexed.append(paper.record_ref)  # type: ignore[attr-defined]
        real_index_paper(conn, paper)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(library_index, "index_paper", dies_midway)
        with pytest.raises(Killed):
            Store.open(data, clock)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # the steps committed
    with Store.open(data, clock) as store:
        assert _found(store, "酌", clock) == ["违约金过高时的司法酌减规则研究"]
        assert _found(store, "情势变更", clock) == ["合同解除与损害赔偿"]  # the kept full text
        assert store.library_size() == (3, 1)
