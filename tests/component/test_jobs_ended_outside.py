"""Operations ended from outside the runner: the server's tasks cancelled (Ctrl-C, SIGTERM), a store
that refuses the first record or fills up mid-operation."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.jobs import JobManager, MemorySink, OperationKind, OperationRecord, OperationStatus
from cnki_mcp.operations import INTERRUPTED_MESSAGE
from cnki_mcp.site.limiter import Limiter
from tests.component import jobs_support
from tests.component.jobs_support import SEARCH_BUDGET, FakeBackend, search_runner

env = jobs_support.env  # the fixture: (clock, sink, manager, limiter) on a fake clock


async def test_an_operation_cancelled_from_outside_ends_interrupted_not_cancelled(env: Any) -> None:
    # Ctrl-C or SIGTERM to `cnki-mcp serve` (stdio): asyncio cancels every task, the operations'
    # runners too, before the server's own shutdown; nobody asked to cancel them
    clock, sink, manager, limiter = env
    backend = FakeBackend(clock, pages=1000)
    job = manager.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    await clock.advance_settled(2.0)
    assert job._live.task is not None
    job._live.task.cancel()  # what asyncio.run does to the tasks left when it is interrupted
    record = await job.finish()
    assert record.status is OperationStatus.INTERRUPTED and record.message == INTERRUPTED_MESSAGE
    stored = sink.load(job.operation_id)
    assert stored is not None and stored.status is OperationStatus.INTERRUPTED
    assert stored.checkpoint is not None


class RefusingSink(MemorySink):
    """A store that refuses every write (a full disk, the database deleted under the server)."""

    def save(self, record: OperationRecord, **kwargs: Any) -> None:
        from cnki_mcp.errors import DataDirectoryUnusable

        raise DataDirectoryUnusable(reason="database_replaced")


async def test_an_operation_the_store_refuses_to_record_is_not_left_running() -> None:
    """The first save of a new operation failing (DATA_DIRECTORY_UNUSABLE) fails the call; the
    operation stayed in the live table and operation_status reported it `running` for ever, with
    no task behind it."""
    clock = FakeClock()
    manager = JobManager(clock, RefusingSink(), inline_wait=40, heartbeat_interval=5)
    limiter = Limiter(clock, 0.5, 6)
    try:
        with pytest.raises(CnkiError) as info:
            manager.start(OperationKind.SEARCH, search_runner(FakeBackend(clock), limiter), SEARCH_BUDGET)
        assert info.value.code == "DATA_DIRECTORY_UNUSABLE"
        assert manager.status() is None and manager.active_operations() == []
    finally:
        await manager.shutdown()


class FillingSink(MemorySink):
    """A store on a disk that fills up once `full` is set: every write is refused from then on,
    the operation's final record too."""

    full = False

    def save(self, record: OperationRecord, **kwargs: Any) -> None:
        from cnki_mcp.errors import DataDirectoryUnusable

        if self.full:
            raise DataDirectoryUnusable("数据目录所在的磁盘已满，未能写入；释放空间后重试", reason="disk_full")
        super().save(record, **kwargs)


async def test_a_disk_that_fills_during_an_operation_ends_it_with_the_cause() -> None:
    """The disk fills while a search runs: its next checkpoint is refused, and so is its final
    record. The operation ends (not interrupted: the server never restarted) with
    DATA_DIRECTORY_UNUSABLE among its errors and leaves the live table. The refused final save
    escaped `_finish` before the operation was marked done, and the task's done callback then
    recorded it `interrupted` with the server-restart message and no error."""
    clock = FakeClock()
    sink = FillingSink()
    manager = JobManager(clock, sink, inline_wait=40, heartbeat_interval=5)
    limiter = Limiter(clock, 0.5, 6)
    try:
        job = manager.start(OperationKind.SEARCH, search_runner(FakeBackend(clock), limiter), SEARCH_BUDGET)
        await clock.advance_settled(2.5)
        sink.full = True
        await clock.advance_settled(3.0)
        assert job.finished
        record = manager.status(job.operation_id)
        assert record is not None and record.status is not OperationStatus.INTERRUPTED
        assert record.status in (OperationStatus.FAILED, OperationStatus.PARTIAL)
        assert [e.code for e in record.errors] == ["DATA_DIRECTORY_UNUSABLE"]
        assert record.errors[0].details["reason"] == "disk_full"
        assert manager.active_operations() == []
    finally:
        await manager.shutdown()
