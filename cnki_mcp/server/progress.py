"""Progress notifications: JobManager events -> `ctx.report_progress` while a tool call waits on
an operation. The SDK sends nothing when the request carried no progress token, so this is
always safe. While the operation awaits the person the manager emits heartbeats, which keep
clients that reset their timeout on progress from giving up."""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from mcp.server.mcpserver import Context

from cnki_mcp.jobs import BudgetSpec, Job, JobManager, OperationKind, OperationRecord, ProgressEvent, Runner
from cnki_mcp.server.models import OperationView

log = logging.getLogger(__name__)

V = TypeVar("V", bound=OperationView)


class ProgressBridge:
    """Forwards one operation's events to one request's progress token (values increase)."""

    def __init__(self, ctx: Context[Any, Any]) -> None:
        self._ctx = ctx
        self._last = -1.0
        self.sent = 0

    def _value(self, done: int) -> float:
        value = float(done)
        if value <= self._last:
            value = self._last + 0.001  # heartbeats and repeats must still increase
        self._last = value
        return value

    async def send(self, done: int, total: int | None, message: str) -> None:
        try:
            await self._ctx.report_progress(
                self._value(done), float(total) if total else None, message or None
            )
            self.sent += 1
        except Exception:  # a closed stream must not break the operation
            log.debug("progress notification failed", exc_info=True)

    async def on_event(self, event: ProgressEvent) -> None:
        if event.heartbeat:
            message = f"等待人工操作：{event.message}" if event.message else "等待人工操作"
        else:
            message = f"{event.status.value} · {event.stage}" + (
                f" · {event.message}" if event.message else ""
            )
        await self.send(event.done, event.total, message)


async def wait_with_progress(
    ctx: Context[Any, Any], jobs: JobManager, operation_id: str, wait_seconds: float
) -> OperationRecord:
    """Long-poll `operation_id` for up to `wait_seconds`, forwarding its progress to this request."""
    bridge = ProgressBridge(ctx)  # report_progress is a no-op without a progress token
    unsubscribe = jobs.subscribe(operation_id, bridge.on_event)
    try:
        current = jobs.status(operation_id)
        if current is not None and current.status.active:
            await bridge.send(
                current.progress.done, current.progress.total, f"{current.status.value} · {current.stage}"
            )
        return await jobs.wait(operation_id, wait_seconds)
    finally:
        unsubscribe()


async def run_job(ctx: Context[Any, Any], jobs: JobManager, job: Job) -> OperationRecord:
    """Wait inline (the manager's inline wait) for a just-started operation, with progress."""
    return await wait_with_progress(ctx, jobs, job.operation_id, jobs.inline_wait)


async def start_operation(
    ctx: Context[Any, Any],
    jobs: JobManager,
    kind: OperationKind,
    runner: Runner,
    budget: BudgetSpec | None = None,
    *,
    stage: str,
    message: str,
) -> OperationRecord:
    """Start an operation and wait for it inline (the manager's inline wait), with progress."""
    return await run_job(ctx, jobs, jobs.start(kind, runner, budget, stage=stage, message=message))


def typed_view(cls: type[V], view: OperationView) -> V:
    """The operation view as the tool's own output model (the same fields, its own schema)."""
    return cls.model_validate(view.model_dump())
