"""Operations: every tool that touches CNKI runs as one. An operation has a kind, a status, a stage
and progress, a request and active-time budget, errors and a checkpoint (stored, never returned).
`JobManager` starts them in the background, answers inline within a short wait, long-polls,
cancels, continues searches with more budget from their checkpoint, resumes human steps and, after
a restart, marks what was left unfinished as `interrupted`.

Budgets hold by construction (docs/reliability.md): every operation has a watchdog on the injected
clock that ends it when its active time (time awaiting the person excluded) reaches
`timeout_seconds`, whatever the runner is awaiting. The runner is cancelled; a runner that turns
the cancellation into its result so far (`OperationContext.deadline_error`) ends `partial` with it;
one that does not stop within `WATCHDOG_GRACE_SECONDS` is finished without it.

Persistence goes through the `OperationSink` protocol (the SQLite store implements it; `MemorySink`
is the in-memory one). The human gate reaches the manager through `HumanControl`."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cnki_mcp import datadir
from cnki_mcp.clock import Clock, event_or_timeout
from cnki_mcp.errors import (
    BudgetExhausted,
    Cancelled,
    CnkiError,
    ContinueUnavailable,
    OperationBusy,
    OperationNotFound,
    OperationNotRunning,
    OperationState,
    ServerStopping,
    VerificationNotFound,
)
from cnki_mcp.opcontext import (
    LiveOperation,
    OperationContext,
    ProgressEvent,
    ProgressListener,
    Runner,
    jsonable,
)
from cnki_mcp.operations import (
    DEFAULT_BUDGETS,
    IDLE,
    INTERRUPTED_MESSAGE,
    KEEP_OPERATIONS,
    Budget,
    BudgetSpec,
    MemorySink,
    OperationErrorInfo,
    OperationKind,
    OperationRecord,
    OperationSink,
    OperationStatus,
    Progress,
    StoreSink,
    final_status,
    finished_message,
    new_operation_id,
)

__all__ = [
    "DEFAULT_BUDGETS",
    "IDLE",
    "Budget",
    "BudgetSpec",
    "HumanControl",
    "Job",
    "JobManager",
    "MemorySink",
    "OperationContext",
    "OperationErrorInfo",
    "OperationKind",
    "OperationRecord",
    "OperationSink",
    "OperationStatus",
    "Progress",
    "ProgressEvent",
    "StoreSink",
    "final_status",
]

log = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 55.0
CANCEL_WAIT_SECONDS = 5.0
RESUME_WAIT_SECONDS = 3.0
CONTINUE_DEFAULT_REQUESTS = 200
CONTINUE_DEFAULT_SECONDS = 300.0
# After the watchdog cancels a runner, how long it may take to hand in its result so far.
WATCHDOG_GRACE_SECONDS = 5.0
WATCHDOG_MIN_SLEEP = 0.001
WATCHDOG_PAUSED_LOOK_SECONDS = 60.0  # used up while awaiting the person: look again at least this often


# Kinds whose runner reads `ctx.resume_from`: a search, and the citation walks (DESIGN.md
# "Citation graph"; their checkpoint names the tool and keeps its input).
CONTINUABLE = frozenset({OperationKind.SEARCH, OperationKind.CITATIONS})


class HumanControl(Protocol):
    """The human gate as the manager sees it (site.human.HumanGate fits)."""

    @property
    def active(self) -> bool: ...

    @property
    def waiting_operations(self) -> list[str]: ...

    def resume(self) -> None: ...

    async def show(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Job:
    """A started operation: its id and a way to await its end."""

    operation_id: str
    _live: LiveOperation

    @property
    def finished(self) -> bool:
        return self._live.done.is_set()

    async def finish(self) -> OperationRecord:
        await self._live.done.wait()
        return self._live.record.model_copy(deep=True)


class JobManager:
    """Runs operations in the background and answers about them."""

    def __init__(
        self,
        clock: Clock,
        sink: OperationSink,
        *,
        inline_wait: float = 40.0,
        human: HumanControl | None = None,
        heartbeat_interval: float = 10.0,
        keep: int = KEEP_OPERATIONS,
    ) -> None:
        self._clock = clock
        self._sink = sink
        self.inline_wait = inline_wait
        self.human = human
        self._heartbeat_interval = heartbeat_interval
        self._keep = keep
        self._live: dict[str, LiveOperation] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False  # shutdown() began: no operation starts any more

    # --- starting ---------------------------------------------------------------------

    def start(
        self,
        kind: OperationKind,
        runner: Runner,
        budget: BudgetSpec | None = None,
        *,
        stage: str = "starting",
        message: str = "",
        total: int | None = None,
        unit: str | None = None,
        key: str | None = None,
    ) -> Job:
        spec = budget or DEFAULT_BUDGETS.get(kind)
        if spec is None:
            raise ValueError(f"a budget is required for kind {kind}")
        now = self._clock.now()
        record = OperationRecord(
            operation_id=new_operation_id(),
            kind=kind,
            stage=stage,
            message=message,
            progress=Progress(total=total, unit=unit),
            budget=spec.model_copy(),
            created_at=now,
            updated_at=now,
        )
        live = LiveOperation(record, Budget(self._clock, spec.max_requests, spec.timeout_seconds))
        live.running_message = message
        live.key = key
        return self._launch(live, runner, resume_from=None)

    def running_with(self, kind: OperationKind, key: str) -> Job | None:
        """The operation of `kind` started with `key` (the same work: DESIGN.md "One search for
        identical calls") still running and not being cancelled, or None."""
        for live in self._live.values():
            if (
                live.key == key
                and live.record.kind is kind
                and live.record.status.active
                and not live.done.is_set()
                and not live.cancel_requested
            ):
                return Job(live.record.operation_id, live)
        return None

    async def run_inline(
        self,
        kind: OperationKind,
        runner: Runner,
        budget: BudgetSpec | None = None,
        **start_args: Any,
    ) -> OperationRecord:
        """Start and wait up to `inline_wait`: the finished record, or the record still running
        (the client long-polls its operation_id)."""
        job = self.start(kind, runner, budget, **start_args)
        return await self._wait_live(job._live, self.inline_wait)

    def _launch(self, live: LiveOperation, runner: Runner, resume_from: Any) -> Job:
        if self._stopping:
            # a call that was still before its operation when the server began stopping (a
            # search planning its concepts): starting now would launch the browser during the
            # shutdown and run past it, its answer lost
            raise ServerStopping(kind=live.record.kind.value)
        op_id = live.record.operation_id
        self._live[op_id] = live
        live.budget.resume()
        try:
            self._sink.save(live.record, keep=self._keep)
        except BaseException:
            # nothing started: an operation the store refused (a full disk, the database deleted)
            # is not left listed as running for ever with no task behind it
            del self._live[op_id]
            raise
        ctx = OperationContext(self, live, resume_from)
        live.task = asyncio.get_running_loop().create_task(self._run(live, ctx, runner), name=f"op:{op_id}")
        # A task cancelled before its first step never runs `_run`; finish it here instead.
        live.task.add_done_callback(lambda _t: self._finish_if_open(live))
        live.watchdog = asyncio.get_running_loop().create_task(self._watch(live), name=f"watchdog:{op_id}")
        return Job(op_id, live)

    async def _watch(self, live: LiveOperation) -> None:
        """End the operation when its active time reaches the budget (module docstring).

        Active time grows no faster than the clock, so sleeping for the time left never wakes
        after the budget ran out; time awaiting the person only makes the sleep end early."""
        budget = live.budget
        while not live.done.is_set():
            left = budget.timeout_seconds - budget.active_seconds
            if left > 0:
                # at least 1 ms: a float remainder too small to move the clock would never end the sleep
                await self._clock.sleep(max(left, WATCHDOG_MIN_SLEEP))
            elif budget.running:
                break
            else:  # used up while the person works: stopped once the operation runs again
                await event_or_timeout(self._clock, live.changed, WATCHDOG_PAUSED_LOOK_SECONDS)
        else:
            return
        live.deadline_error = BudgetExhausted(
            active_seconds=round(budget.active_seconds, 3),
            timeout_seconds=budget.timeout_seconds,
            reason="timeout_seconds",
            stage=live.record.stage,
        )
        log.warning(
            "operation %s: active time %.1f s reached timeout_seconds %.1f at stage %s; stopping it",
            live.record.operation_id, budget.active_seconds, budget.timeout_seconds, live.record.stage,
        )  # fmt: skip
        if live.task is not None and not live.task.done():
            live.task.cancel()
        if await event_or_timeout(self._clock, live.done, WATCHDOG_GRACE_SECONDS):
            return
        # The runner did not stop: the record ends now with what it has; the task keeps its cancel.
        log.error("operation %s did not stop within %.0f s of its deadline", live.record.operation_id,
                  WATCHDOG_GRACE_SECONDS)  # fmt: skip
        if live.cancel_requested:  # the user's cancel came first: never turned into a budget error
            self._finish(live, cancelled=True, error=None)
        else:
            self._finish(live, cancelled=False, error=OperationErrorInfo.of(live.deadline_error))

    def _finish_if_open(self, live: LiveOperation) -> None:
        if not live.done.is_set():
            if live.deadline_error is not None and not live.cancel_requested:
                self._finish(live, cancelled=False, error=OperationErrorInfo.of(live.deadline_error))
            else:
                _cancelled_from_outside(live)
                self._finish(live, cancelled=True, error=None)

    async def _run(self, live: LiveOperation, ctx: OperationContext, runner: Runner) -> None:
        error: OperationErrorInfo | None = None
        cancelled = False
        try:
            result = await runner(ctx)
            live.result = jsonable(result)
            live.has_result = True
        except asyncio.CancelledError:
            if live.deadline_error is not None and not live.cancel_requested:
                error = OperationErrorInfo.of(live.deadline_error)
            else:
                _cancelled_from_outside(live)
                cancelled = True
        except CnkiError as exc:
            error = OperationErrorInfo.of(exc)
        except Exception as exc:  # a bug: keep the traceback in the log, report INTERNAL
            refused = datadir.disk_refused(exc)  # a full or read-only disk is no bug
            if refused is not None:
                log.warning("operation %s: %s", live.record.operation_id, refused.message)
                error = OperationErrorInfo.of(refused)
            else:
                log.exception("operation %s crashed", live.record.operation_id)
                error = OperationErrorInfo.of(CnkiError(f"内部错误：{type(exc).__name__}"))
        self._finish(live, cancelled=cancelled or live.cancel_requested, error=error)

    def _finish(self, live: LiveOperation, *, cancelled: bool, error: OperationErrorInfo | None) -> None:
        if live.done.is_set():
            return
        rec = live.record
        live.budget.pause()
        self._stop_heartbeat(live)
        if live.watchdog is not None and live.watchdog is not asyncio.current_task():
            live.watchdog.cancel()
        rec.status = final_status(
            cancelled=cancelled, error=error, has_result=live.has_result, item_errors=len(live.item_errors)
        )
        if cancelled and live.server_exit:
            # the server stopped under it (the client closed or restarted): the same outcome as
            # a crash, which a restart reports `interrupted` and a search can `continue` from
            rec.status = OperationStatus.INTERRUPTED
        if rec.status is OperationStatus.CANCELLED and error is None:
            # the cancel is the error that ended the run, by its code (CANCELLED): a client that
            # switches on codes saw `errors: []` and could not tell a cancel from an empty success
            error = OperationErrorInfo.of(Cancelled(stage=rec.stage, result_kept=live.has_result))
        rec.errors = ([error] if error else []) + list(live.item_errors)
        rec.final_error = error is not None
        rec.result = live.result
        if rec.status is OperationStatus.INTERRUPTED:
            rec.message = INTERRUPTED_MESSAGE
        elif cancelled:
            rec.message = "操作已取消"
        elif error is not None:
            rec.message = error.message
        else:
            rec.message = finished_message(rec.status, len(live.item_errors)) or rec.message
        rec.requests = live.budget.requests
        rec.active_seconds = round(live.budget.active_seconds, 3)
        rec.updated_at = self._clock.now()
        saved = self._save_final(rec)
        live.done.set()
        live.bump()
        self._notify(live)
        live.listeners.clear()
        if saved and self._live.get(rec.operation_id) is live:  # unsaved: answered from memory
            del self._live[rec.operation_id]

    def _save_final(self, rec: OperationRecord) -> bool:
        """Store the finished record (checkpoint as stored). A store refusing it (a full disk, a
        lock; a bug is INTERNAL) still ends the operation, that error among its errors, kept in
        memory (False); raising here left it unfinished, said interrupted by the done callback."""
        try:
            self._sink.save(rec, keep=self._keep, with_checkpoint=False)
        except Exception as raw:
            exc = raw if isinstance(raw, CnkiError) else CnkiError(f"内部错误：{type(raw).__name__}")
            log.warning("operation %s: its final record could not be stored: %s", rec.operation_id, exc.message,
                        exc_info=not isinstance(raw, CnkiError))  # fmt: skip
            if not any(e.code == exc.code for e in rec.errors):
                rec.errors.append(OperationErrorInfo.of(exc))
            return False
        return True

    # --- change plumbing --------------------------------------------------------------

    def _changed(
        self, live: LiveOperation, *, persist: bool, notify: bool = True, with_checkpoint: bool = False
    ) -> None:
        if self.superseded(live):
            return
        rec = live.record
        rec.requests = live.budget.requests
        rec.active_seconds = round(live.budget.active_seconds, 3)
        rec.updated_at = self._clock.now()
        if persist:
            # The checkpoint is written only when it changed (a stage or status change is small).
            self._sink.save(rec, keep=self._keep, with_checkpoint=with_checkpoint)
        live.bump()
        if notify:
            self._notify(live)

    def superseded(self, live: LiveOperation) -> bool:
        """A runner finished without it (a cancel or its deadline it did not stop for) whose
        operation was continued since: what it still writes would overwrite the new run's record
        and checkpoint under the same id, so it is dropped."""
        current = self._live.get(live.record.operation_id)
        return live.done.is_set() and current is not None and current is not live

    def _notify(self, live: LiveOperation, *, heartbeat: bool = False) -> None:
        if not live.listeners:
            return
        rec = live.record
        event = ProgressEvent(
            operation_id=rec.operation_id,
            status=rec.status,
            stage=rec.stage,
            message=rec.message,
            done=rec.progress.done,
            total=rec.progress.total,
            unit=rec.progress.unit,
            heartbeat=heartbeat,
        )
        for listener in list(live.listeners):
            try:
                outcome = listener(event)
            except Exception:
                log.warning("progress listener failed", exc_info=True)
                continue
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(outcome)
                self._background.add(task)
                task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Future[Any]) -> None:
        self._background.discard(task)  # type: ignore[arg-type]
        if not task.cancelled() and task.exception() is not None:
            log.warning("progress listener failed", exc_info=task.exception())

    def _start_heartbeat(self, live: LiveOperation) -> None:
        if live.heartbeat is None and self._heartbeat_interval > 0:
            live.heartbeat = asyncio.get_running_loop().create_task(self._beat(live))

    def _stop_heartbeat(self, live: LiveOperation) -> None:
        if live.heartbeat is not None:
            live.heartbeat.cancel()
            live.heartbeat = None

    async def _beat(self, live: LiveOperation) -> None:
        # While the person works, the progress token keeps the client's call alive.
        while live.record.status is OperationStatus.AWAITING_USER:
            await self._clock.sleep(self._heartbeat_interval)
            if live.record.status is OperationStatus.AWAITING_USER:
                self._notify(live, heartbeat=True)

    def subscribe(self, operation_id: str, listener: ProgressListener) -> Callable[[], None]:
        """Call `listener` on every progress, stage and status change of a running operation, and
        every `heartbeat_interval` while it awaits the person. Returns the unsubscribe function."""
        live = self._live.get(operation_id)
        if live is None:
            self._lookup(operation_id)  # OPERATION_NOT_FOUND for unknown ids
            return lambda: None
        live.listeners.append(listener)

        def unsubscribe() -> None:
            if listener in live.listeners:
                live.listeners.remove(listener)

        return unsubscribe

    # --- queries ----------------------------------------------------------------------

    def _lookup(self, operation_id: str) -> OperationRecord:
        live = self._live.get(operation_id)
        if live is not None:
            return self._snapshot(live)
        record = self._sink.load(operation_id)
        if record is None:
            raise OperationNotFound(operation_id=operation_id)
        if record.status.active:
            # stored as running but not running here: the process that ran it is gone
            record.status = OperationStatus.INTERRUPTED
            record.message = INTERRUPTED_MESSAGE
        return record

    def _snapshot(self, live: LiveOperation) -> OperationRecord:
        rec = live.record
        if rec.status.active:
            rec.requests = live.budget.requests
            rec.active_seconds = round(live.budget.active_seconds, 3)
            rec.errors = list(live.item_errors)
        return rec.model_copy(deep=True)

    def status(self, operation_id: str | None = None) -> OperationRecord | None:
        """One operation's record; without an id the newest active one, or None for `idle`."""
        if operation_id is not None:
            return self._lookup(operation_id)
        active = [live for live in self._live.values() if live.record.status.active]
        if not active:
            return None
        newest = max(active, key=lambda live: live.record.created_at)
        return self._snapshot(newest)

    def active_operations(self) -> list[OperationRecord]:
        return [self._snapshot(live) for live in self._live.values() if live.record.status.active]

    def recent(self, n: int = 20) -> list[OperationRecord]:
        return self._sink.list_recent(n)

    async def wait(self, operation_id: str, wait_seconds: float = 0.0) -> OperationRecord:
        """Long-poll (wait clamped to 0..55 s): returns when the operation finishes or newly enters
        awaiting_user; while it already awaits the person, returns when that state changes, except
        that an awaiting_user no answer has shown yet is returned at once."""
        live = self._live.get(operation_id)
        if live is None:
            return self._lookup(operation_id)
        if live.record.status is OperationStatus.AWAITING_USER and not live.awaiting_shown:
            # awaiting_user that no answer has shown yet is news, said at once: it began after the
            # tool's inline answer said running (or before any answer), and the poll waited its
            # whole wait_seconds (up to 55 s) before the client heard the person was needed
            return self._shown(live)
        return await self._wait_live(live, min(MAX_WAIT_SECONDS, max(0.0, wait_seconds)))

    async def _wait_live(self, live: LiveOperation, seconds: float) -> OperationRecord:
        deadline = self._clock.monotonic() + seconds
        was_awaiting = live.record.status is OperationStatus.AWAITING_USER
        while not live.done.is_set():
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                break
            # Block on the change event (no spinning): progress wakes us too, and we go back to sleep.
            await event_or_timeout(self._clock, live.changed, remaining)
            awaiting = live.record.status is OperationStatus.AWAITING_USER
            if live.done.is_set() or awaiting != was_awaiting:
                break
        return self._shown(live)

    def _shown(self, live: LiveOperation) -> OperationRecord:
        """The record a long poll answers, noting whether it showed awaiting_user."""
        record = self._snapshot(live)
        live.awaiting_shown = record.status is OperationStatus.AWAITING_USER
        return record

    # --- control ----------------------------------------------------------------------

    async def cancel(self, operation_id: str) -> OperationRecord:
        """Cancel a running operation and return its final record: it ends `cancelled` within
        `CANCEL_WAIT_SECONDS` (a runner that does not stop by then is finished without it)."""
        live = self._live.get(operation_id)
        if live is None:
            return self._lookup(operation_id)
        live.cancel_requested = True
        if live.task is not None and not live.task.done():
            live.task.cancel()
        if live.canceller is None and not live.done.is_set():
            live.canceller = asyncio.get_running_loop().create_task(
                self._end_cancelled(live), name=f"cancel:{operation_id}"
            )
        if live.canceller is not None:
            # shielded: a client that stops waiting does not stop the bound on the cancel
            await asyncio.shield(live.canceller)
        return self._snapshot(live)

    async def _end_cancelled(self, live: LiveOperation) -> None:
        """A cancel ends the operation within `CANCEL_WAIT_SECONDS`, whatever the runner does: one
        that swallows the cancellation (or awaits something that never sees it) is finished
        `cancelled` without it, as the watchdog finishes one at its deadline."""
        if await event_or_timeout(self._clock, live.done, CANCEL_WAIT_SECONDS):
            return
        log.error("operation %s did not stop within %.0f s of its cancel", live.record.operation_id,
                  CANCEL_WAIT_SECONDS)  # fmt: skip
        self._finish(live, cancelled=True, error=None)

    async def resume(self, operation_id: str) -> OperationRecord:
        """Tell the human step this operation waits on that the page is done; the status after
        up to 3 s."""
        live = self._live.get(operation_id)
        if live is None:
            record = self._sink.load(operation_id)
            if record is None:
                raise OperationNotFound(operation_id=operation_id)
            if not record.status.active:  # ended here: not 操作不在本进程中运行
                ended = record.status.value
                raise OperationState(
                    f"操作已结束（{ended}），没有等待人工处理的步骤", operation_id=operation_id, status=ended
                )
            raise OperationNotRunning(operation_id=operation_id)
        waiting = (
            live.record.status is OperationStatus.AWAITING_USER
            and self.human is not None
            and self.human.active
            and operation_id in self.human.waiting_operations
        )
        if not waiting or self.human is None:
            raise OperationState("该操作没有等待人工处理的步骤", operation_id=operation_id)
        self.human.resume()
        return await self._wait_live(live, RESUME_WAIT_SECONDS)

    def waiting_step_owner(self) -> str:
        """The operation whose human step is open (the step's owner; VERIFICATION_NOT_FOUND when
        no step is): what `resume` without an operation_id concerns."""
        if self.human is None or not self.human.active or not self.human.waiting_operations:
            raise VerificationNotFound()
        return self.human.waiting_operations[0]

    async def show(self) -> bool:
        """Raise the window of the active human step (VERIFICATION_NOT_FOUND when none); False
        when the browser is headless and there is no window to raise."""
        if self.human is None or not self.human.active:
            raise VerificationNotFound()
        return await self.human.show()

    def continue_(
        self,
        operation_id: str,
        runner: Runner,
        *,
        additional_requests: int | None = None,
        additional_seconds: float | None = None,
    ) -> Job:
        """Continue a search from its checkpoint with more budget, under the same id; the runner
        reads `ctx.resume_from` so no request is repeated. Counts carry over."""
        if additional_requests is not None and additional_requests < 0:
            raise OperationState("additional_requests 不能为负数")
        if additional_seconds is not None and additional_seconds < 0:
            raise OperationState("additional_seconds 不能为负数")
        live = self._live.get(operation_id)
        record = live.record.model_copy(deep=True) if live else self._sink.load(operation_id)
        if record is None:
            raise OperationNotFound(operation_id=operation_id)
        if record.kind not in CONTINUABLE:
            raise ContinueUnavailable(
                f"{record.kind.value} 操作不能从检查点继续（只有检索、引文图与引文路径可以），请重新调用原工具",
                operation_id=operation_id,
                kind=record.kind.value,
            )
        if live is not None and record.status.active:
            raise OperationBusy("该检索仍在运行", operation_id=operation_id)
        if record.checkpoint is None and record.kind is OperationKind.CITATIONS:
            # get_references / get_citing keep no checkpoint: their pages are stored as read
            raise ContinueUnavailable(
                "get_references、get_citing 不从检查点继续：用相同参数再调用（已读的页存在本地，不再请求）",
                operation_id=operation_id, kind=record.kind.value,
            )  # fmt: skip
        if record.checkpoint is None:
            raise ContinueUnavailable(operation_id=operation_id, kind=record.kind.value)
        if record.status is OperationStatus.COMPLETED:
            raise OperationState("操作已完成，无需继续", operation_id=operation_id, status=record.status.value)

        spec = record.budget.model_copy()
        if additional_requests is None and additional_seconds is None:
            if record.requests >= spec.max_requests or record.active_seconds >= spec.timeout_seconds:
                spec.max_requests = max(spec.max_requests, record.requests + CONTINUE_DEFAULT_REQUESTS)
                spec.timeout_seconds = max(
                    spec.timeout_seconds, record.active_seconds + CONTINUE_DEFAULT_SECONDS
                )
        else:
            spec.max_requests += additional_requests or 0
            spec.timeout_seconds += additional_seconds or 0.0
            # the budget the caller did not add to, if spent, gets the default extension: a
            # continue that could not send a request would only stop again at once
            if record.requests >= spec.max_requests:
                spec.max_requests = record.requests + CONTINUE_DEFAULT_REQUESTS
            if record.active_seconds >= spec.timeout_seconds:
                spec.timeout_seconds = record.active_seconds + CONTINUE_DEFAULT_SECONDS

        record.budget = spec
        record.status = OperationStatus.RUNNING
        record.stage = "continuing"
        record.message = "从检查点继续"
        record.result = None
        # the final error of the last run is gone; per-item errors carry over with the counts
        item_errors = record.errors[1:] if record.final_error else list(record.errors)
        record.errors = []
        record.final_error = False
        record.updated_at = self._clock.now()
        budget = Budget(
            self._clock,
            spec.max_requests,
            spec.timeout_seconds,
            requests=record.requests,
            active=record.active_seconds,
        )
        new_live = LiveOperation(record, budget)
        new_live.item_errors = item_errors
        new_live.running_message = record.message
        return self._launch(new_live, runner, resume_from=record.checkpoint)

    def recover_interrupted(self) -> list[str]:
        """At startup: stored running/awaiting_user operations become `interrupted`."""
        return self._sink.mark_interrupted(INTERRUPTED_MESSAGE, self._clock.now())

    async def shutdown(self) -> None:
        """Stop what still runs (server exit). An operation the user had asked to cancel ends
        `cancelled`; every other one ends `interrupted`, its checkpoint kept, as after a crash.
        From now on no operation starts (SERVER_STOPPING)."""
        self._stopping = True
        lives = list(self._live.values())
        for live in lives:
            live.server_exit = not live.cancel_requested
            live.cancel_requested = True
            if live.task is not None:
                live.task.cancel()
        # bounded as a cancel is: a runner that swallows the cancellation held the exit (the
        # browser and the store never closed, the process never ended) until it returned
        await asyncio.gather(*(self._stopped(live) for live in lives if live.task is not None))
        for task in list(self._background):
            task.cancel()

    async def _stopped(self, live: LiveOperation) -> None:
        if not await event_or_timeout(self._clock, live.done, CANCEL_WAIT_SECONDS):
            log.error("operation %s did not stop within %.0f s of the server's exit", live.record.operation_id,
                      CANCEL_WAIT_SECONDS)  # fmt: skip
            self._finish(live, cancelled=True, error=None)
        for helper in (live.canceller, live.watchdog):
            if helper is not None and not helper.done():
                helper.cancel()


def _cancelled_from_outside(live: LiveOperation) -> None:
    """A runner cancelled though nobody asked (no cancel, no deadline): the event loop is ending
    its tasks (Ctrl-C, SIGTERM), so the server is going away. That ends it `interrupted`, as a
    crash would, not `cancelled` (which the user did not ask for and cannot `continue`)."""
    if not live.cancel_requested:
        live.server_exit = True
