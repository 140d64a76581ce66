"""Progress notifications: JobManager events -> `ctx.report_progress` while a tool call waits on
an operation. The SDK sends nothing when the request carried no progress token, so this is
always safe. While the operation awaits the person the manager emits heartbeats, which keep
clients that reset their timeout on progress from giving up.

Events are sent in order by one sender per request, and the wait flushes them before the tool
returns: over HTTP a request's notifications travel on its own SSE response, which closes with
the result, so a notification still in flight then would be lost (over stdio it would not)."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, TypeVar

from mcp.server.mcpserver import Context

from cnki_mcp.jobs import BudgetSpec, Job, JobManager, OperationKind, OperationRecord, ProgressEvent, Runner
from cnki_mcp.server.models import OperationView

log = logging.getLogger(__name__)

V = TypeVar("V", bound=OperationView)


class ProgressScale:
    """One operation's stages (each counting its own `done` of `total`: candidates, then papers,
    ...) on one scale whose value always increases, as MCP requires, and never passes its total:
    a stage starts where the one before stopped (its total is that offset plus its own)."""

    def __init__(self) -> None:
        self.last = -1.0
        self.base = 0.0
        self.stage: str | None = None
        self.done = 0

    def map(self, stage: str, done: int, total: int | None) -> tuple[float, float | None]:
        if stage != self.stage or done < self.done:  # a new stage, or a count that started again
            if self.stage is not None:
                self.base = max(self.last, 0.0)
            self.stage = stage
        self.done = done
        value = round(self.base + done, 3)
        if value <= self.last:
            # heartbeats and repeats must still increase; rounded, so a client shows 16.002, not
            # the float sum 16.002000000000002
            value = round(self.last + 0.001, 3)
        self.last = value
        return value, (round(max(self.base + total, value), 3) if total else None)


class ProgressBridge:
    """Forwards one operation's events to one request's progress token (values increase)."""

    FLUSH_SECONDS = 5.0  # upper bound on delivering the last notifications of a request

    def __init__(self, ctx: Context[Any, Any]) -> None:
        self._ctx = ctx
        self._scale = ProgressScale()
        self.sent = 0
        self._queue: deque[tuple[str, int, int | None, str]] = deque()
        self._sender: asyncio.Task[None] | None = None

    async def send(self, stage: str, done: int, total: int | None, message: str) -> None:
        value, top = self._scale.map(stage, done, total)
        try:
            await self._ctx.report_progress(value, top, message or None)
            self.sent += 1
        except Exception:  # a closed stream must not break the operation
            log.debug("progress notification failed", exc_info=True)

    def enqueue(self, stage: str, done: int, total: int | None, message: str) -> None:
        self._queue.append((stage, done, total, message))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._queue:
            await self.send(*self._queue.popleft())

    def on_event(self, event: ProgressEvent) -> None:
        """The manager's listener (synchronous: the sending happens in this bridge's sender)."""
        if event.heartbeat:
            message = f"等待人工操作：{event.message}" if event.message else "等待人工操作"
        else:
            message = progress_message(event.status.value, event.stage, event.message)
        self.enqueue(event.stage, event.done, event.total, message)

    async def flush(self) -> None:
        """Deliver what is queued (bounded), so it precedes the tool's result on the wire."""
        sender = self._sender
        if sender is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(sender), self.FLUSH_SECONDS)
        except TimeoutError:
            log.debug("progress notifications not flushed in time")

    def abandon(self) -> None:
        self._queue.clear()
        if self._sender is not None:
            self._sender.cancel()


SEPARATOR = " · "


def progress_message(status: str, stage: str, message: str | None = None) -> str:
    """The text of a progress notification: `<status> · <stage>[ · <message>]`."""
    return SEPARATOR.join([status, stage, *([message] if message else [])])


def stage_of(message: str | None) -> str | None:
    """The stage named by a `progress_message` text; None for other texts (a human-wait notice)."""
    parts = (message or "").split(SEPARATOR)
    return parts[1] if len(parts) >= 2 else None


async def wait_with_progress(
    ctx: Context[Any, Any],
    jobs: JobManager,
    operation_id: str,
    wait_seconds: float,
    bridge: ProgressBridge | None = None,
) -> OperationRecord:
    """Long-poll `operation_id` for up to `wait_seconds`, forwarding its progress to this request.
    A request that waits on one operation and then another passes its one `bridge` to both
    waits: the values of a progress token must go on increasing (a fresh scale starts at 0)."""
    if bridge is None:
        bridge = ProgressBridge(ctx)  # report_progress is a no-op without a progress token
    unsubscribe = jobs.subscribe(operation_id, bridge.on_event)
    try:
        current = jobs.status(operation_id)
        if current is not None and current.status.active:
            bridge.enqueue(
                current.stage,
                current.progress.done,
                current.progress.total,
                progress_message(current.status.value, current.stage),
            )
        record = await jobs.wait(operation_id, wait_seconds)
    except BaseException:
        unsubscribe()
        bridge.abandon()
        raise
    unsubscribe()
    await bridge.flush()
    return record


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
