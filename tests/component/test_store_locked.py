"""A database another program holds locked while the server runs (a SQLite browser, a backup tool):
every store write, and an operation's final record, end with DATABASE_UNUSABLE reason `locked`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import DatabaseUnusable
from cnki_mcp.jobs import JobManager, OperationKind, OperationRecord, OperationStatus
from cnki_mcp.operations import MemorySink, StoreSink
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.store import Store
from tests.component.jobs_support import SEARCH_BUDGET, FakeBackend, search_runner
from tests.paper_samples import sample_row


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The store with no busy timeout: a lock held by another connection answers at once what
    it answers after 5 s in the product ("database is locked")."""
    from cnki_mcp.store import db

    real = db._connect

    def impatient(path: Path) -> sqlite3.Connection:
        conn = real(path)
        conn.execute("PRAGMA busy_timeout = 0")
        return conn

    monkeypatch.setattr(db, "_connect", impatient)
    with Store.open(tmp_path, FakeClock()) as s:
        yield s


def _other_program(store: Store) -> sqlite3.Connection:
    """Another program's connection holding the write lock."""
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_write_while_another_program_holds_the_database_is_database_unusable(store: Store) -> None:
    other = _other_program(store)
    try:
        with pytest.raises(DatabaseUnusable) as info:
            store.upsert_from_grid([sample_row()], store.clock.now())
        assert info.value.code == "DATABASE_UNUSABLE" and info.value.details["reason"] == "locked"
    finally:
        other.execute("ROLLBACK")
        other.close()
    [paper] = store.upsert_from_grid([sample_row()], store.clock.now())  # released: it writes again
    assert store.get(paper.record_ref) is not None


async def test_an_operation_whose_database_gets_locked_ends_with_the_cause(store: Store) -> None:
    """The database is locked while a search runs: its checkpoint and its final record are
    refused. It ends (not interrupted: the server never restarted) with DATABASE_UNUSABLE
    `locked`. The raw sqlite3 error escaped the final save, and the task's done callback recorded
    the operation `interrupted` with the server-restart message."""
    clock = FakeClock()
    manager = JobManager(clock, StoreSink(store), inline_wait=40, heartbeat_interval=5)
    limiter = Limiter(clock, 0.5, 6)
    other: sqlite3.Connection | None = None
    try:
        job = manager.start(OperationKind.SEARCH, search_runner(FakeBackend(clock), limiter), SEARCH_BUDGET)
        await clock.advance_settled(2.5)
        other = _other_program(store)
        await clock.advance_settled(3.0)
        assert job.finished
        record = manager.status(job.operation_id)
        assert record is not None and record.status in (OperationStatus.FAILED, OperationStatus.PARTIAL)
        assert [e.code for e in record.errors] == ["DATABASE_UNUSABLE"]
        assert record.errors[0].details["reason"] == "locked"
        assert manager.active_operations() == []
    finally:
        if other is not None:
            other.close()
        await manager.shutdown()


class BrokenSink(MemorySink):
    """A store whose final save raises an uncoded error (`error`, a bug) once `broken` is set."""

    broken = False
    error: Exception = sqlite3.InterfaceError("bad parameter")

    def save(self, record: OperationRecord, **kwargs: Any) -> None:
        if self.broken and record.status is not OperationStatus.RUNNING:
            raise self.error
        super().save(record, **kwargs)


@pytest.mark.parametrize(
    "error",
    [sqlite3.InterfaceError("bad parameter"), RuntimeError("sink bug"), KeyError("operation_id"), OSError(28, "No space")],
)
async def test_an_uncoded_failure_of_the_final_save_is_internal_not_interrupted(
    error: Exception,
) -> None:
    """`_save_final` with a sink raising something other than a CnkiError: the operation still
    ends with its own status, INTERNAL once among its errors; the store keeps its last running
    record, so the manager answers the finished one from memory, not a `running` from the store."""
    clock = FakeClock()
    sink = BrokenSink()
    sink.error = error
    manager = JobManager(clock, sink, inline_wait=40, heartbeat_interval=5)
    limiter = Limiter(clock, 0.5, 6)
    try:
        job = manager.start(
            OperationKind.SEARCH, search_runner(FakeBackend(clock, pages=2), limiter), SEARCH_BUDGET
        )
        sink.broken = True
        await clock.advance_settled(5.0)
        assert job.finished
        stored = sink.load(job.operation_id)
        assert stored is not None and stored.status is OperationStatus.RUNNING  # the final save never landed
        record = manager.status(job.operation_id)
        assert record is not None and record.status is OperationStatus.COMPLETED
        assert [e.code for e in record.errors] == ["INTERNAL"]
        assert manager.active_operations() == []
    finally:
        await manager.shutdown()
