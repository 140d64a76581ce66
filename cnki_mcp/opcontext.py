"""What a running operation's code holds (`OperationContext`) and what the manager keeps of it
(`LiveOperation`): budget charging, stage and progress, checkpoints, per-item errors, the result so far
and the awaiting_user/running transitions the human gate drives. `jobs.JobManager` creates them;
split from jobs.py, which re-exports them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from cnki_mcp.errors import BudgetExhausted, CnkiError
from cnki_mcp.operations import (
    CHECKPOINT_LOG,
    Budget,
    OnVerification,
    OperationErrorInfo,
    OperationKind,
    OperationRecord,
    OperationStatus,
)

if TYPE_CHECKING:
    from cnki_mcp.jobs import JobManager


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """What a progress listener receives (the MCP layer turns it into a notification)."""

    operation_id: str
    status: OperationStatus
    stage: str
    message: str
    done: int
    total: int | None
    unit: str | None
    heartbeat: bool = False


ProgressListener = Callable[[ProgressEvent], Awaitable[None] | None]
Runner = Callable[["OperationContext"], Awaitable[Any]]


class LiveOperation:
    """An operation running in this process."""

    def __init__(self, record: OperationRecord, budget: Budget) -> None:
        self.record = record
        self.budget = budget
        self.task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()
        self.changed = asyncio.Event()
        self.listeners: list[ProgressListener] = []
        self.item_errors: list[OperationErrorInfo] = []
        self.result: Any = None
        self.has_result = False
        self.cancel_requested = False
        self.server_exit = False  # cancelled because the server is shutting down, not by the user
        self.awaiting_depth = 0
        self.awaiting_shown = False  # the last long-poll answer showed awaiting_user (JobManager.wait)
        self.running_message = ""
        self.heartbeat: asyncio.Task[None] | None = None
        self.watchdog: asyncio.Task[None] | None = None
        self.canceller: asyncio.Task[None] | None = None  # bounds a requested cancel (JobManager.cancel)
        self.deadline_error: BudgetExhausted | None = None  # set when the watchdog fired
        self.key: str | None = None  # what the operation computes (`JobManager.running_with`)

    def bump(self) -> None:
        """Wake every long-poll waiting on this operation (fire-and-replace)."""
        self.changed.set()
        self.changed = asyncio.Event()


class OperationContext:
    """What a runner gets: budget charging (pass it to `limiter.slot(budget=ctx)`), stage and
    progress, checkpoints, per-item errors, the result so far, and the awaiting_user/running
    transitions the human gate drives (it fits site.human.OperationHandle)."""

    def __init__(self, manager: JobManager, live: LiveOperation, resume_from: Any) -> None:
        self._manager = manager
        self._live = live
        self.resume_from = resume_from  # the checkpoint to continue from, or None on a fresh start

    @property
    def operation_id(self) -> str:
        return self._live.record.operation_id

    @property
    def kind(self) -> OperationKind:
        return self._live.record.kind

    @property
    def on_verification(self) -> OnVerification:
        return self._live.record.budget.on_verification

    @property
    def requests(self) -> int:
        return self._live.budget.requests

    @property
    def active_seconds(self) -> float:
        return self._live.budget.active_seconds

    @property
    def budget_exhausted(self) -> bool:
        return self._live.budget.exhausted

    @property
    def cancelled(self) -> bool:
        return self._live.cancel_requested

    @property
    def item_errors(self) -> list[OperationErrorInfo]:
        return list(self._live.item_errors)

    @property
    def deadline_error(self) -> BudgetExhausted | None:
        """BUDGET_EXHAUSTED once the watchdog ended the active time (the runner was cancelled for
        it); None otherwise. A runner catching that cancellation raises this after recording its
        result so far; any other cancellation it lets through."""
        return self._live.deadline_error

    def charge(self) -> None:
        """Count one request against the budget (BudgetExhausted when used up)."""
        try:
            self._live.budget.charge()
        finally:
            self._live.record.requests = self._live.budget.requests

    def store_requests(self) -> None:
        """Store the record as it is (the requests spent): a crash after an answer was kept loses no count."""
        self._manager._changed(self._live, persist=True, notify=False)

    def set_stage(self, stage: str, message: str | None = None) -> None:
        """Enter `stage` (or say `message` in it). A new stage has counted nothing yet (it kept the
        old stage's done/total, which progress notifications then added to the new stage)."""
        rec = self._live.record
        if stage != rec.stage:
            rec.progress.done, rec.progress.total, rec.progress.unit = 0, None, None
        rec.stage = stage
        if message is not None:
            self._live.running_message = message
            if rec.status is OperationStatus.RUNNING:
                rec.message = message
        self._manager._changed(self._live, persist=True)

    def progress(self, done: int, total: int | None = None, unit: str | None = None) -> None:
        prog = self._live.record.progress
        prog.done = done
        prog.total = total
        if unit is not None:
            prog.unit = unit
        self._manager._changed(self._live, persist=False)

    def checkpoint(self, data: Any) -> None:
        """Store `data` (JSON-ready) as the point a `continue` starts from (replacing the last
        checkpoint and every entry appended to it)."""
        self._live.record.checkpoint = data
        self._manager._changed(self._live, persist=True, notify=False, with_checkpoint=True)

    def checkpoint_append(self, entry: Any) -> None:
        """Add `entry` (JSON-ready) to the dict checkpoint stored last: one small write, whatever the
        checkpoint's size. `continue` finds the entries, in order, under the checkpoint's `log` key
        (`operations.CHECKPOINT_LOG`)."""
        live = self._live
        if not isinstance(live.record.checkpoint, dict):
            raise TypeError("checkpoint_append needs a dict checkpoint saved first")
        live.record.checkpoint.setdefault(CHECKPOINT_LOG, []).append(entry)
        if self._manager.superseded(live):
            return
        self._manager._sink.append_checkpoint(live.record.operation_id, entry)

    def set_result(self, result: Any) -> None:
        """The result so far: kept when the runner then raises (the operation ends partial)."""
        self._live.result = jsonable(result)
        self._live.has_result = True

    def retract_item_errors(self, retried: Callable[[OperationErrorInfo], bool]) -> None:
        """Drop the per-item errors a continued operation is retrying (carried over from the
        run before): whether the retry fails again or not, the new outcome is what counts."""
        self._live.item_errors = [e for e in self._live.item_errors if not retried(e)]

    def add_item_error(self, error: CnkiError | OperationErrorInfo, **details: Any) -> None:
        info = OperationErrorInfo.of(error) if isinstance(error, CnkiError) else error
        if details:
            info = info.model_copy(update={"details": {**info.details, **details}})
        self._live.item_errors.append(info)
        self._manager._changed(self._live, persist=False, notify=False)

    def awaiting_user(self, message: str) -> None:
        live = self._live
        live.awaiting_depth += 1
        if live.awaiting_depth > 1 or live.record.status is not OperationStatus.RUNNING:
            return
        live.budget.pause()
        live.running_message = live.record.message
        live.record.status = OperationStatus.AWAITING_USER
        live.record.message = message
        self._manager._start_heartbeat(live)
        self._manager._changed(live, persist=True)

    def running(self) -> None:
        live = self._live
        live.awaiting_depth = max(0, live.awaiting_depth - 1)
        if live.awaiting_depth > 0 or live.record.status is not OperationStatus.AWAITING_USER:
            return
        live.budget.resume()
        live.record.status = OperationStatus.RUNNING
        live.record.message = live.running_message
        self._manager._stop_heartbeat(live)
        self._manager._changed(live, persist=True)


def jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value
