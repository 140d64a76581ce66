"""What the operation tests share: a fake paged backend and its search runner, the manager on a
fake clock (`env`), a sink that dies with its process (`Killable`), and small awaiting helpers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import BudgetSpec, JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.site.limiter import Limiter

SEARCH_BUDGET = BudgetSpec(max_requests=100, timeout_seconds=900)


class FakeBackend:
    """Ten result pages, one second each; remembers every request."""

    def __init__(self, clock: FakeClock, pages: int = 10) -> None:
        self.clock = clock
        self.pages = pages
        self.log: list[int] = []

    async def fetch(self, page: int) -> list[str]:
        self.log.append(page)
        await self.clock.sleep(1.0)
        return [f"p{page}-a", f"p{page}-b"]


def search_runner(backend: FakeBackend, limiter: Limiter) -> Any:
    """A paged search that checkpoints after every page and resumes from `ctx.resume_from`."""

    async def run(ctx: OperationContext) -> dict[str, Any]:
        state: dict[str, Any] = ctx.resume_from or {"next_page": 1, "items": []}
        ctx.set_stage("retrieval")
        while state["next_page"] <= backend.pages:
            async with limiter.slot(budget=ctx):
                rows = await backend.fetch(state["next_page"])
            state = {"next_page": state["next_page"] + 1, "items": state["items"] + rows}
            ctx.checkpoint(state)
            ctx.set_result({"items": state["items"]})
            ctx.progress(state["next_page"] - 1, backend.pages, "pages")
        return {"items": state["items"]}

    return run



async def search_with_active_time(env: Any, seconds: float) -> tuple[FakeBackend, Any, OperationRecord]:
    """A paged search on `env`'s manager with `seconds` of active time (100 requests), run to its
    end on the fake clock: (its backend, its job, its final record)."""
    clock, _, manager, limiter = env
    backend = FakeBackend(clock)
    job = manager.start(
        OperationKind.SEARCH, search_runner(backend, limiter), BudgetSpec(max_requests=100, timeout_seconds=seconds)
    )
    [record] = await clock.run_until_complete(job.finish())
    return backend, job, record

@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClock, MemorySink, JobManager, Limiter]]:
    clock = FakeClock()
    sink = MemorySink()
    manager = JobManager(clock, sink, inline_wait=40, heartbeat_interval=5)
    limiter = Limiter(clock, 0.5, 6)
    yield clock, sink, manager, limiter
    await manager.shutdown()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def sleeper(clock: FakeClock, seconds: float, result: Any = None) -> Any:
    async def run(ctx: OperationContext) -> Any:
        await clock.sleep(seconds)
        return result

    return run


async def timed(clock: FakeClock, coro: Any) -> tuple[float, Any]:
    """Run `coro`; return (fake seconds it took, its value)."""
    t0 = clock.monotonic()
    value = await coro
    return clock.monotonic() - t0, value



class Killable:
    """A sink that stops forwarding writes once its process is declared dead."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dead = False

    def save(self, record: OperationRecord, *, keep: int = 200, with_checkpoint: bool = True) -> None:
        if not self.dead:
            self.inner.save(record, keep=keep, with_checkpoint=with_checkpoint)

    def append_checkpoint(self, operation_id: str, entry: Any) -> None:
        if not self.dead:
            self.inner.append_checkpoint(operation_id, entry)

    def load(self, operation_id: str) -> OperationRecord | None:
        return self.inner.load(operation_id)

    def list_recent(self, n: int) -> list[OperationRecord]:
        return self.inner.list_recent(n)

    def mark_interrupted(self, message: str, at: Any) -> list[str]:
        return self.inner.mark_interrupted(message, at)
