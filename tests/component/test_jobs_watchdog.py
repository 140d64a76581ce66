"""The operations' watchdog on a fake clock: budgets hold by construction, whatever a runner awaits;
time awaiting the person is not counted; a user cancel stays cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import (
    CANCEL_WAIT_SECONDS,
    CONTINUE_DEFAULT_SECONDS,
    BudgetSpec,
    JobManager,
    MemorySink,
    OperationContext,
    OperationKind,
    OperationStatus,
)
from tests.component import jobs_support
from tests.component.jobs_support import search_runner, search_with_active_time, settle, sleeper

env = jobs_support.env  # the fixture: (clock, sink, manager, limiter) on a fake clock


def stubborn_runner(
    released: asyncio.Event,
    before: Callable[[OperationContext], None] = lambda ctx: None,
    after: Callable[[OperationContext], None] = lambda ctx: None,
) -> Callable[[OperationContext], Awaitable[str]]:
    """A runner (or a library under it) that swallows cancellation until `released`."""

    async def stubborn(ctx: OperationContext) -> str:
        before(ctx)
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                continue
        after(ctx)
        return "late"

    return stubborn


# --- the watchdog (budgets hold by construction) ----------------------------------------------


async def test_watchdog_ends_a_runner_stuck_on_a_non_clock_await_partial_at_its_active_budget(
    env: Any,
) -> None:
    clock, _, manager, limiter = env
    never = asyncio.Event()  # a browser call that never answers

    async def runner(ctx: OperationContext) -> str:
        async with limiter.slot(budget=ctx):
            await clock.sleep(1.0)
        ctx.set_result({"items": ["p1"]})
        ctx.set_stage("enrichment", "读取详情 1/36")
        await never.wait()  # no request is charged from here on
        return "unreachable"

    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=100, timeout_seconds=60))
    t0 = clock.monotonic()
    [record] = await clock.run_until_complete(job.finish())
    assert clock.monotonic() - t0 == pytest.approx(60.0)  # fake seconds: exactly the budget
    assert record.status is OperationStatus.PARTIAL
    assert record.errors[0].code == "BUDGET_EXHAUSTED"
    assert record.errors[0].details["reason"] == "timeout_seconds"
    assert record.errors[0].details["stage"] == "enrichment"
    assert record.result == {"items": ["p1"]}
    assert record.active_seconds == pytest.approx(60.0)
    assert clock.pending == 0  # the watchdog left no sleeper behind


async def test_watchdog_excludes_time_awaiting_the_person(env: Any) -> None:
    clock, _, manager, _ = env
    never = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        await clock.sleep(10.0)
        ctx.awaiting_user("请完成验证")
        await clock.sleep(500.0)  # the person takes their time: not charged
        ctx.running()
        await never.wait()
        return "unreachable"

    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=100, timeout_seconds=60))
    t0 = clock.monotonic()
    [record] = await clock.run_until_complete(job.finish())
    assert clock.monotonic() - t0 == pytest.approx(560.0)
    assert record.status is OperationStatus.PARTIAL
    assert record.errors[0].code == "BUDGET_EXHAUSTED"
    assert record.active_seconds == pytest.approx(60.0)


async def test_watchdog_lets_the_runner_hand_in_its_result_so_far(env: Any) -> None:
    clock, _, manager, _ = env
    never = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        try:
            await never.wait()
        except asyncio.CancelledError:
            failure = ctx.deadline_error
            if failure is None:
                raise
            ctx.set_result({"summary": "what we have"})
            raise failure from None
        return "unreachable"

    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=10, timeout_seconds=30))
    [record] = await clock.run_until_complete(job.finish())
    assert record.status is OperationStatus.PARTIAL
    assert [e.code for e in record.errors] == ["BUDGET_EXHAUSTED"]
    assert record.result == {"summary": "what we have"}


async def test_watchdog_finishes_the_record_when_the_runner_ignores_the_cancellation(env: Any) -> None:
    clock, _, manager, _ = env
    released = asyncio.Event()

    stubborn = stubborn_runner(released)

    job = manager.start(OperationKind.SEARCH, stubborn, BudgetSpec(max_requests=10, timeout_seconds=30))
    t0 = clock.monotonic()
    [record] = await clock.run_until_complete(job.finish())
    assert clock.monotonic() - t0 == pytest.approx(30.0 + 5.0)  # the budget plus the fixed grace
    assert record.status is OperationStatus.PARTIAL
    assert record.errors[0].code == "BUDGET_EXHAUSTED"
    assert manager.status(job.operation_id).status is OperationStatus.PARTIAL  # type: ignore[union-attr]
    released.set()
    await settle()
    assert manager.status(job.operation_id).status is OperationStatus.PARTIAL  # type: ignore[union-attr]


async def test_a_user_cancel_of_a_runner_that_does_not_stop_ends_cancelled_within_the_cancels_wait(
    env: Any,
) -> None:
    """A runner that swallows the user's cancel (or awaits something that never sees it) stayed
    `running` until the watchdog ended it at its budget (up to 900 s and more), then `partial`
    with BUDGET_EXHAUSTED as if the budget had stopped it. The cancel ends it: `cancelled`
    (CANCELLED) within the cancel's wait, with the result it set, and the watchdog never turns
    it into a budget error afterwards."""
    clock, sink, manager, _ = env
    released = asyncio.Event()

    stubborn = stubborn_runner(released, before=lambda ctx: ctx.set_result({"so_far": 1}))

    job = manager.start(OperationKind.READ, stubborn, BudgetSpec(max_requests=10, timeout_seconds=30))
    try:
        await clock.advance_settled(1.0)
        t0 = clock.monotonic()
        [asked] = await clock.run_until_complete(manager.cancel(job.operation_id))
        assert asked.status is OperationStatus.CANCELLED
        assert clock.monotonic() - t0 == pytest.approx(CANCEL_WAIT_SECONDS)
        assert [e.code for e in asked.errors] == ["CANCELLED"] and asked.result == {"so_far": 1}
        await clock.advance_settled(60.0)  # past the budget: the watchdog is gone with the operation
        stored = sink.load(job.operation_id)
        assert stored is not None and stored.status is OperationStatus.CANCELLED
    finally:
        released.set()
    [record] = await clock.run_until_complete(job.finish())
    assert record.status is OperationStatus.CANCELLED


async def test_a_cancel_whose_caller_stops_waiting_still_ends_the_operation(env: Any) -> None:
    """The bound on a cancel does not hang on the call that asked: a client that gives up on
    operation_control(cancel) (its request cancelled) still leaves the operation ended."""
    clock, _, manager, _ = env
    released = asyncio.Event()

    stubborn = stubborn_runner(released)

    job = manager.start(OperationKind.READ, stubborn, BudgetSpec(max_requests=10, timeout_seconds=900))
    try:
        t0 = clock.monotonic()
        asking = asyncio.ensure_future(manager.cancel(job.operation_id))
        await settle()
        asking.cancel()
        await settle()
        [record] = await clock.run_until_complete(job.finish())
        assert clock.monotonic() - t0 == pytest.approx(CANCEL_WAIT_SECONDS)
        assert record.status is OperationStatus.CANCELLED
        assert [e.code for e in record.errors] == ["CANCELLED"]
    finally:
        released.set()


async def test_a_runner_ended_without_it_writes_nothing_over_the_run_that_continued_it(env: Any) -> None:
    """A search cancelled while its runner ignored the cancel can be continued at once; the old
    runner, still going, wrote its stage and checkpoints under the same id over the new run's."""
    clock, sink, manager, _ = env
    released = asyncio.Event()

    def late(ctx: OperationContext) -> None:
        ctx.set_stage("late")
        ctx.checkpoint({"next_page": 99, "items": ["stale"]})

    stubborn = stubborn_runner(released, before=lambda ctx: ctx.checkpoint({"next_page": 1, "items": []}), after=late)

    job = manager.start(OperationKind.SEARCH, stubborn, BudgetSpec(max_requests=100, timeout_seconds=900))
    gate = asyncio.Event()

    async def second(ctx: OperationContext) -> dict[str, Any]:
        ctx.set_stage("retrieval")
        await gate.wait()
        return {"from": ctx.resume_from}

    try:
        await settle()
        [asked] = await clock.run_until_complete(manager.cancel(job.operation_id))
        assert asked.status is OperationStatus.CANCELLED
        manager.continue_(job.operation_id, second)
        await settle()
        released.set()  # the old runner goes on now, under the continued id
        await settle()
        stored = sink.load(job.operation_id)
        assert stored is not None and stored.status is OperationStatus.RUNNING
        assert stored.stage == "retrieval" and stored.checkpoint == {"next_page": 1, "items": []}
    finally:
        released.set()
        gate.set()
    await settle()
    assert manager.status(job.operation_id).status is OperationStatus.COMPLETED  # type: ignore[union-attr]


async def test_a_server_exit_is_not_held_by_a_runner_that_ignores_the_cancellation(env: Any) -> None:
    """The shutdown awaited every runner to its end: one that swallows the cancellation kept the
    server from closing the browser and the store, and the process from exiting. It is finished
    `interrupted` (a continue carries it on) within the cancel's bound."""
    clock, sink, manager, _ = env
    released = asyncio.Event()

    stubborn = stubborn_runner(released, before=lambda ctx: ctx.checkpoint({"next_page": 1, "items": []}))

    async def release_later() -> None:  # without the bound the exit waits this long, not for ever
        await clock.sleep(100.0)
        released.set()

    job = manager.start(OperationKind.SEARCH, stubborn, BudgetSpec(max_requests=10, timeout_seconds=900))
    releaser = asyncio.ensure_future(release_later())
    try:
        await settle()
        t0 = clock.monotonic()
        await clock.run_until_complete(manager.shutdown())
        assert clock.monotonic() - t0 == pytest.approx(CANCEL_WAIT_SECONDS)
        stored = sink.load(job.operation_id)
        assert stored is not None and stored.status is OperationStatus.INTERRUPTED
    finally:
        released.set()
        releaser.cancel()


async def test_watchdog_never_fires_for_an_operation_that_finishes_in_time(env: Any) -> None:
    clock, sink, manager, _ = env
    job = manager.start(
        OperationKind.SEARCH, sleeper(clock, 59.0, "ok"), BudgetSpec(max_requests=1, timeout_seconds=60)
    )
    [record] = await clock.run_until_complete(job.finish())
    assert record.status is OperationStatus.COMPLETED and record.result == "ok"
    assert clock.pending == 0
    await clock.advance_settled(120.0)
    assert sink.load(job.operation_id).status is OperationStatus.COMPLETED  # type: ignore[union-attr]


async def test_a_user_cancel_stays_cancelled_not_budget_exhausted(env: Any) -> None:
    clock, _, manager, _ = env
    never = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        await never.wait()
        return "unreachable"

    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=10, timeout_seconds=30))
    await clock.advance_settled(10.0)
    [record] = await clock.run_until_complete(manager.cancel(job.operation_id))
    assert record.status is OperationStatus.CANCELLED
    assert [e.code for e in record.errors] == ["CANCELLED"]  # the cancel, not BUDGET_EXHAUSTED


@pytest.mark.parametrize(
    ("added", "max_requests", "most_seconds"),
    [
        ({"additional_seconds": 100}, 100, 103.5),
        # only requests added: the spent time still gets the default extension (jobs.continue_)
        ({"additional_requests": 50}, 150, 3.5 + CONTINUE_DEFAULT_SECONDS),
    ],
)
async def test_continue_after_the_watchdog_gets_a_fresh_deadline(
    env: Any, added: dict[str, Any], max_requests: int, most_seconds: float
) -> None:
    clock, _, manager, limiter = env
    backend, job, first = await search_with_active_time(env, 3.5)
    assert first.status is OperationStatus.PARTIAL and first.errors[0].code == "BUDGET_EXHAUSTED"
    again = manager.continue_(job.operation_id, search_runner(backend, limiter), **added)
    [done] = await clock.run_until_complete(again.finish())
    assert done.status is OperationStatus.COMPLETED, done.errors
    # only the page in flight when the deadline hit (its answer never observed) is fetched again
    assert sorted(backend.log) == [1, 2, 3, 4, 4, 5, 6, 7, 8, 9, 10]
    assert first.result["items"] == ["p1-a", "p1-b", "p2-a", "p2-b", "p3-a", "p3-b"]
    assert done.budget.max_requests == max_requests and done.active_seconds <= most_seconds


@pytest.mark.parametrize("timeout", [0.3, 0.7, 12.345])
async def test_watchdog_ends_the_operation_when_a_float_remainder_is_below_the_clocks_resolution(
    timeout: float,
) -> None:
    """Found by the chaos suite (seed 175): active time landing a hair below the budget left a
    remainder too small to move the clock, and the watchdog slept 0 s for ever."""
    clock = FakeClock(start=123_456.789)
    manager = JobManager(clock, MemorySink())
    never = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        await clock.sleep(0.1)
        await never.wait()
        return "unreachable"

    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=5, timeout_seconds=timeout))
    try:
        async with asyncio.timeout(30):  # bounds a spin; never a timing assertion
            [record] = await clock.run_until_complete(job.finish())
        assert record.status is OperationStatus.PARTIAL
        assert record.errors[0].code == "BUDGET_EXHAUSTED"
        assert record.active_seconds == pytest.approx(timeout, abs=0.002)
    finally:
        await manager.shutdown()
