"""Operations on a fake clock with a fake backend: inline wait, long-poll, cancel, budgets,
continue without repeated requests, recovery after a restart, final status rules, progress."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError, LoginRequired, RateLimited, SiteError, VerificationSkipped
from cnki_mcp.jobs import (
    IDLE,
    Budget,
    BudgetSpec,
    JobManager,
    MemorySink,
    OperationContext,
    OperationErrorInfo,
    OperationKind,
    OperationRecord,
    OperationStatus,
    ProgressEvent,
    final_status,
)
from cnki_mcp.operations import INTERRUPTED_MESSAGE, finished_message
from cnki_mcp.server.progress import ProgressScale
from cnki_mcp.site.human import HumanGate, PageKind, PageState
from cnki_mcp.site.limiter import Limiter
from tests.component import jobs_support
from tests.component.jobs_support import (
    SEARCH_BUDGET,
    FakeBackend,
    Killable,
    search_runner,
    search_with_active_time,
    settle,
    sleeper,
    timed,
)

env = jobs_support.env  # the fixture: (clock, sink, manager, limiter) on a fake clock


async def test_inline_wait_returns_the_result_when_fast(env: Any) -> None:
    clock, _, manager, _ = env
    [(took, record)] = await clock.run_until_complete(
        timed(clock, manager.run_inline(OperationKind.READ, sleeper(clock, 3, {"text": "ok"})))
    )
    assert took == 3
    assert record.status is OperationStatus.COMPLETED and record.result == {"text": "ok"}
    assert record.operation_id.startswith("op_") and len(record.operation_id) == 27


async def test_inline_wait_returns_a_running_operation_when_slow(env: Any) -> None:
    clock, _, manager, _ = env
    [(took, record)] = await clock.run_until_complete(
        timed(clock, manager.run_inline(OperationKind.READ, sleeper(clock, 100, {"text": "ok"})))
    )
    assert took == 40
    assert record.status is OperationStatus.RUNNING and record.result is None
    [(took, done)] = await clock.run_until_complete(timed(clock, manager.wait(record.operation_id, 55)))
    assert took == 55 and done.status is OperationStatus.RUNNING
    [(took, done)] = await clock.run_until_complete(timed(clock, manager.wait(record.operation_id, 55)))
    assert took == 5 and done.status is OperationStatus.COMPLETED and done.result == {"text": "ok"}


async def test_long_poll_returns_on_completion(env: Any) -> None:
    clock, _, manager, _ = env
    job = manager.start(OperationKind.METADATA, sleeper(clock, 12, [1, 2]))
    [(took, record)] = await clock.run_until_complete(timed(clock, manager.wait(job.operation_id, 55)))
    assert took == 12 and record.status is OperationStatus.COMPLETED and record.result == [1, 2]
    # a finished operation answers at once, from the sink
    [(took, again)] = await clock.run_until_complete(timed(clock, manager.wait(job.operation_id, 55)))
    assert took == 0 and again.status is OperationStatus.COMPLETED


async def test_long_poll_wait_is_clamped_to_55_seconds(env: Any) -> None:
    clock, _, manager, _ = env
    job = manager.start(OperationKind.READ, sleeper(clock, 500))
    [(took, _)] = await clock.run_until_complete(timed(clock, manager.wait(job.operation_id, 600)))
    assert took == 55
    [(took, _)] = await clock.run_until_complete(timed(clock, manager.wait(job.operation_id, -3)))
    assert took == 0


async def test_long_poll_ignores_progress_but_returns_on_newly_awaiting_user(env: Any) -> None:
    clock, _, manager, _ = env
    person_done = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        for i in range(5):
            await clock.sleep(1)
            ctx.progress(i + 1, 10)
        ctx.awaiting_user("知网要求人工验证：请在弹出的浏览器窗口完成验证，完成后任务会自动继续")
        await person_done.wait()
        ctx.running()
        return "done"

    job = manager.start(OperationKind.READ, runner)
    [(took, record)] = await clock.run_until_complete(timed(clock, manager.wait(job.operation_id, 55)))
    assert took == 5
    assert record.status is OperationStatus.AWAITING_USER and record.progress.done == 5
    assert "知网要求人工验证" in record.message
    person_done.set()
    [done] = await clock.run_until_complete(job.finish())
    assert done.status is OperationStatus.COMPLETED


async def test_long_poll_blocks_while_already_awaiting_user(env: Any) -> None:
    clock, _, manager, _ = env
    person_done = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        ctx.awaiting_user("请完成验证")
        await person_done.wait()
        ctx.running()
        await clock.sleep(100)
        return "done"

    job = manager.start(OperationKind.READ, runner)
    await settle()
    # no answer has shown the awaiting_user yet: the first poll says it at once (it waited 30 s)
    first = asyncio.ensure_future(manager.wait(job.operation_id, 30))
    await settle()
    assert first.done() and first.result().status is OperationStatus.AWAITING_USER
    poll = asyncio.ensure_future(timed(clock, manager.wait(job.operation_id, 30)))
    await settle()
    pending_sleepers = clock.pending
    await clock.advance_settled(29.0)
    assert not poll.done()
    assert clock.pending == pending_sleepers  # blocked on one timer and an event, not polling
    await clock.advance_settled(1.0)
    took, record = await poll
    assert took == 30 and record.status is OperationStatus.AWAITING_USER

    poll = asyncio.ensure_future(timed(clock, manager.wait(job.operation_id, 30)))
    await clock.advance_settled(12.0)
    assert not poll.done()
    person_done.set()  # the state changes: awaiting_user -> running
    await settle()
    took, record = await poll
    assert took == 12 and record.status is OperationStatus.RUNNING


async def test_awaiting_user_begun_after_the_inline_answer_is_said_by_the_next_poll_at_once(env: Any) -> None:
    """The tool's inline answer said running; a moment later the operation turned awaiting_user
    (it met another operation's step). The client's long poll then began in that state and
    waited its whole wait_seconds before the client heard that the person was needed."""
    clock, _, manager, _ = env
    person_done = asyncio.Event()

    async def runner(ctx: OperationContext) -> str:
        await clock.sleep(1)  # after the inline answer
        ctx.awaiting_user("请完成验证")
        await person_done.wait()
        ctx.running()
        return "done"

    manager.inline_wait = 0.5
    first = await clock.run_until_complete(manager.run_inline(OperationKind.READ, runner))
    [record] = first
    assert record.status is OperationStatus.RUNNING
    await clock.advance_settled(1.0)
    news = asyncio.ensure_future(manager.wait(record.operation_id, 50))
    await settle()
    assert news.done() and news.result().status is OperationStatus.AWAITING_USER
    poll = asyncio.ensure_future(manager.wait(record.operation_id, 50))
    await settle()
    assert not poll.done()  # shown now: the next poll waits for a change
    person_done.set()
    await settle()
    assert (await poll).status in (OperationStatus.RUNNING, OperationStatus.COMPLETED)


async def test_cancel_ends_cancelled_and_is_persisted(env: Any) -> None:
    clock, sink, manager, limiter = env
    backend = FakeBackend(clock, pages=1000)
    job = manager.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    await clock.advance_settled(5.0)
    [record] = await clock.run_until_complete(manager.cancel(job.operation_id))
    assert record.status is OperationStatus.CANCELLED
    stored = sink.load(job.operation_id)
    assert stored is not None and stored.status is OperationStatus.CANCELLED
    assert stored.checkpoint is not None  # a cancelled search keeps its checkpoint
    assert limiter.inflight == 0
    assert manager.status() is None  # idle again
    again = await manager.cancel(job.operation_id)
    assert again.status is OperationStatus.CANCELLED


async def test_a_server_exit_leaves_a_running_search_interrupted_and_it_continues_without_repeats() -> None:
    clock = FakeClock()
    sink = MemorySink()
    limiter = Limiter(clock, 0.5, 6)
    backend = FakeBackend(clock)
    old = JobManager(clock, sink)
    job = old.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    await clock.advance_settled(3.2)  # pages 1-3 checkpointed, page 4 in flight
    await old.shutdown()  # the client closed: the server exits cleanly
    stored = sink.load(job.operation_id)
    assert stored is not None and stored.status is OperationStatus.INTERRUPTED
    assert stored.message == INTERRUPTED_MESSAGE and stored.checkpoint is not None

    new = JobManager(clock, sink)
    assert new.recover_interrupted() == []  # nothing was left running
    resumed = new.continue_(job.operation_id, search_runner(backend, limiter))
    asked = len(backend.log)
    [final] = await clock.run_until_complete(resumed.finish())
    assert final.status is OperationStatus.COMPLETED
    assert backend.log[asked:] == list(range(4, 11))
    await new.shutdown()


async def test_no_operation_starts_once_the_server_began_stopping(env: Any) -> None:
    """A call still before its operation when shutdown() ran (a search planning its concepts)
    used to start it afterwards: the browser launched during the shutdown and the search ran past
    it, the call's answer lost. Now it gets SERVER_STOPPING (retryable) and nothing runs."""
    clock, sink, manager, limiter = env
    backend = FakeBackend(clock)
    job = manager.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    await clock.advance_settled(1.2)
    await manager.shutdown()
    asked = len(backend.log)
    for begin in (
        lambda: manager.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET),
        lambda: manager.continue_(job.operation_id, search_runner(backend, limiter)),
    ):
        with pytest.raises(CnkiError) as raised:
            begin()
        assert raised.value.code == "SERVER_STOPPING" and raised.value.retryable
    await clock.advance_settled(5.0)
    assert len(backend.log) == asked and manager.status() is None
    stored = sink.load(job.operation_id)
    assert stored is not None and stored.status is OperationStatus.INTERRUPTED


async def test_an_operation_the_user_cancelled_stays_cancelled_when_the_server_exits(env: Any) -> None:
    clock, sink, manager, limiter = env
    backend = FakeBackend(clock, pages=1000)
    job = manager.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    await clock.advance_settled(2.0)
    stopping = asyncio.ensure_future(manager.cancel(job.operation_id))
    await settle()  # the cancel is asked before the server exits
    await manager.shutdown()
    await stopping
    stored = sink.load(job.operation_id)
    assert stored is not None and stored.status is OperationStatus.CANCELLED


async def test_a_cancelled_operation_says_so_by_the_code_cancelled_and_whether_it_kept_a_result(
    env: Any,
) -> None:
    """A cancelled record had `errors: []`: a client switching on codes could not tell a cancel
    from a success with nothing in it. Now its first error is CANCELLED (not retryable), with the
    stage it stopped in and whether a result so far was kept; a continue drops it."""
    clock, sink, manager, limiter = env
    backend = FakeBackend(clock)
    job = manager.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    await clock.advance_settled(3.5)
    [record] = await clock.run_until_complete(manager.cancel(job.operation_id))
    assert record.status is OperationStatus.CANCELLED
    assert [(e.code, e.retryable) for e in record.errors] == [("CANCELLED", False)]
    assert record.errors[0].details == {"stage": "retrieval", "result_kept": True}
    stored = sink.load(job.operation_id)
    assert stored is not None and [e.code for e in stored.errors] == ["CANCELLED"]
    again = manager.continue_(job.operation_id, search_runner(backend, limiter))
    [done] = await clock.run_until_complete(again.finish())
    assert done.status is OperationStatus.COMPLETED and done.errors == []

    never = asyncio.Event()

    async def nothing_yet(ctx: OperationContext) -> str:
        await never.wait()
        return "unreachable"

    empty = manager.start(OperationKind.READ, nothing_yet)
    [record] = await clock.run_until_complete(manager.cancel(empty.operation_id))
    assert [e.code for e in record.errors] == ["CANCELLED"]
    assert record.errors[0].details["result_kept"] is False and record.result is None


async def test_cancel_of_an_unknown_operation_is_not_found(env: Any) -> None:
    _, _, manager, _ = env
    with pytest.raises(CnkiError) as info:
        await manager.cancel("op_" + "0" * 24)
    assert info.value.code == "OPERATION_NOT_FOUND"


async def test_budget_exhaustion_ends_partial_with_the_result_so_far(env: Any) -> None:
    clock, _, manager, limiter = env
    backend = FakeBackend(clock)
    job = manager.start(
        OperationKind.SEARCH, search_runner(backend, limiter), BudgetSpec(max_requests=4, timeout_seconds=900)
    )
    [record] = await clock.run_until_complete(job.finish())
    assert record.status is OperationStatus.PARTIAL
    assert record.errors[0].code == "BUDGET_EXHAUSTED" and record.errors[0].retryable
    assert record.requests == 4 and backend.log == [1, 2, 3, 4]
    assert len(record.result["items"]) == 8
    assert "checkpoint" not in record.public()


async def test_active_time_budget_stops_new_requests(env: Any) -> None:
    backend, _, record = await search_with_active_time(env, 3.2)
    assert record.status is OperationStatus.PARTIAL
    assert record.errors[0].code == "BUDGET_EXHAUSTED"
    assert record.errors[0].details["reason"] == "timeout_seconds"
    assert backend.log == [1, 2, 3, 4]


async def test_continue_resumes_from_the_checkpoint_without_repeating_a_request(env: Any) -> None:
    clock, _, manager, limiter = env
    backend = FakeBackend(clock)
    runner = search_runner(backend, limiter)
    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=4, timeout_seconds=900))
    [first] = await clock.run_until_complete(job.finish())
    assert first.status is OperationStatus.PARTIAL

    again = manager.continue_(job.operation_id, runner)
    assert again.operation_id == job.operation_id
    [record] = await clock.run_until_complete(again.finish())
    assert record.status is OperationStatus.COMPLETED and record.errors == []
    assert backend.log == list(range(1, 11))  # no page fetched twice
    assert record.budget.max_requests == 4 + 200  # default top-up when the budget was used up
    assert len(record.result["items"]) == 20

    reference = FakeBackend(clock)
    fresh = manager.start(OperationKind.SEARCH, search_runner(reference, limiter), SEARCH_BUDGET)
    [uninterrupted] = await clock.run_until_complete(fresh.finish())
    assert record.requests == uninterrupted.requests == 10
    assert record.result == uninterrupted.result


async def test_continue_adds_the_requested_budget(env: Any) -> None:
    clock, _, manager, limiter = env
    backend = FakeBackend(clock)
    runner = search_runner(backend, limiter)
    job = manager.start(OperationKind.SEARCH, runner, BudgetSpec(max_requests=3, timeout_seconds=900))
    await clock.run_until_complete(job.finish())
    [record] = await clock.run_until_complete(
        manager.continue_(job.operation_id, runner, additional_requests=2, additional_seconds=60).finish()
    )
    assert record.status is OperationStatus.PARTIAL and record.errors[0].code == "BUDGET_EXHAUSTED"
    assert record.budget.max_requests == 5 and record.budget.timeout_seconds == 960
    assert record.requests == 5 and backend.log == [1, 2, 3, 4, 5]


async def test_continue_refuses_the_wrong_kinds_and_states(env: Any) -> None:
    clock, _, manager, limiter = env
    read = manager.start(OperationKind.READ, sleeper(clock, 1))
    await clock.run_until_complete(read.finish())
    with pytest.raises(CnkiError) as info:
        manager.continue_(read.operation_id, sleeper(clock, 1))
    assert info.value.code == "CONTINUE_UNAVAILABLE"

    running = manager.start(OperationKind.SEARCH, search_runner(FakeBackend(clock), limiter), SEARCH_BUDGET)
    await settle()
    with pytest.raises(CnkiError) as info:
        manager.continue_(running.operation_id, sleeper(clock, 1))
    assert info.value.code == "OPERATION_BUSY"
    [done] = await clock.run_until_complete(running.finish())
    assert done.status is OperationStatus.COMPLETED
    with pytest.raises(CnkiError) as info:
        manager.continue_(running.operation_id, sleeper(clock, 1))
    assert info.value.code == "OPERATION_STATE"

    async def failing(ctx: OperationContext) -> None:
        raise RateLimited()

    no_checkpoint = manager.start(OperationKind.SEARCH, failing, SEARCH_BUDGET)
    await clock.run_until_complete(no_checkpoint.finish())
    with pytest.raises(CnkiError) as info:
        manager.continue_(no_checkpoint.operation_id, failing)
    assert info.value.code == "CONTINUE_UNAVAILABLE"

    with pytest.raises(CnkiError) as info:
        manager.continue_("op_" + "f" * 24, failing)
    assert info.value.code == "OPERATION_NOT_FOUND"


@pytest.mark.parametrize("kind", [OperationKind.CITATIONS, OperationKind.SEARCH])
async def test_a_citation_list_without_a_checkpoint_is_told_apart_from_a_search_that_lost_its_own(
    env: Any, kind: OperationKind
) -> None:
    """get_references / get_citing run as `citations` operations, a kind `continue` takes, but keep
    no checkpoint: their continue was refused as a search's ("没有可继续的检查点 → 重新发起检索")
    when calling the tool again is the way (its pages are stored). `details.kind` tells them
    apart."""
    clock, _, manager, _ = env

    async def failing(ctx: OperationContext) -> None:
        raise RateLimited()

    job = manager.start(kind, failing, SEARCH_BUDGET if kind is OperationKind.SEARCH else None)
    await clock.run_until_complete(job.finish())
    with pytest.raises(CnkiError) as info:
        manager.continue_(job.operation_id, failing)
    assert info.value.code == "CONTINUE_UNAVAILABLE" and info.value.details["kind"] == kind.value


async def test_restart_marks_unfinished_operations_interrupted_and_a_search_can_continue() -> None:
    clock = FakeClock()
    sink = MemorySink()
    dying = Killable(sink)
    limiter = Limiter(clock, 0.5, 6)
    backend = FakeBackend(clock)
    old = JobManager(clock, dying)
    job = old.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
    reader = old.start(OperationKind.READ, sleeper(clock, 1000))
    await clock.advance_settled(3.2)  # pages 1-3 fetched and checkpointed, page 4 in flight
    dying.dead = True  # the process dies here
    await old.shutdown()
    stored = sink.load(job.operation_id)
    assert stored is not None and stored.status is OperationStatus.RUNNING
    assert stored.checkpoint["next_page"] == 4 and stored.requests == 3

    new = JobManager(clock, sink)
    ids = new.recover_interrupted()
    assert set(ids) == {job.operation_id, reader.operation_id}
    record = new.status(job.operation_id)
    assert record is not None and record.status is OperationStatus.INTERRUPTED
    assert "continue" in record.message and record.message == INTERRUPTED_MESSAGE
    with pytest.raises(CnkiError) as info:
        await new.resume(job.operation_id)
    # an ended (interrupted) operation has no human step: its state, not "runs in another process"
    assert info.value.code == "OPERATION_STATE" and info.value.details["status"] == "interrupted"

    resumed = new.continue_(job.operation_id, search_runner(backend, limiter))
    log_before = len(backend.log)
    [final] = await clock.run_until_complete(resumed.finish())
    assert final.status is OperationStatus.COMPLETED
    assert backend.log[log_before:] == list(range(4, 11))  # nothing the checkpoint holds is fetched again
    assert final.requests == 10 and len(final.result["items"]) == 20
    with pytest.raises(CnkiError) as info:
        new.continue_(reader.operation_id, sleeper(clock, 1))
    assert info.value.code == "CONTINUE_UNAVAILABLE"
    await new.shutdown()


async def test_an_unrecovered_stale_record_reads_interrupted() -> None:
    clock = FakeClock()
    sink = MemorySink()
    now = clock.now()
    sink.save(
        OperationRecord(
            operation_id="op_" + "a" * 24,
            kind=OperationKind.SEARCH,
            budget=SEARCH_BUDGET,
            created_at=now,
            updated_at=now,
        )
    )
    manager = JobManager(clock, sink)
    record = await manager.wait("op_" + "a" * 24, 10)
    assert record.status is OperationStatus.INTERRUPTED


ERR_RETRYABLE = OperationErrorInfo.of(RateLimited())
ERR_FATAL = OperationErrorInfo.of(SiteError())
ERR_SKIPPED = OperationErrorInfo.of(VerificationSkipped())


@pytest.mark.parametrize(
    ("cancelled", "error", "has_result", "item_errors", "expected"),
    [
        (True, ERR_FATAL, True, 3, OperationStatus.CANCELLED),
        (False, ERR_FATAL, True, 0, OperationStatus.PARTIAL),
        (False, ERR_RETRYABLE, False, 0, OperationStatus.PARTIAL),
        (False, ERR_SKIPPED, False, 0, OperationStatus.SKIPPED),
        (False, ERR_SKIPPED, True, 0, OperationStatus.PARTIAL),
        (False, ERR_FATAL, False, 2, OperationStatus.FAILED),
        (False, None, True, 2, OperationStatus.PARTIAL),
        (False, None, True, 0, OperationStatus.COMPLETED),
        (False, None, False, 0, OperationStatus.COMPLETED),
    ],
)
def test_the_final_status_follows_cancel_error_result_and_item_errors(
    cancelled: bool,
    error: OperationErrorInfo | None,
    has_result: bool,
    item_errors: int,
    expected: OperationStatus,
) -> None:
    status = final_status(cancelled=cancelled, error=error, has_result=has_result, item_errors=item_errors)
    assert status is expected


async def test_runner_outcomes_map_to_final_status(env: Any) -> None:
    clock, _, manager, _ = env

    async def skipped(ctx: OperationContext) -> None:
        raise VerificationSkipped()

    async def failed(ctx: OperationContext) -> None:
        raise SiteError()

    async def item_errors(ctx: OperationContext) -> list[int]:
        ctx.add_item_error(LoginRequired(), record_ref="r1", stage="detail")
        return [1]

    async def crashed(ctx: OperationContext) -> None:
        raise KeyError("bug")

    jobs = [manager.start(OperationKind.READ, r) for r in (skipped, failed, item_errors, crashed)]
    records = await clock.run_until_complete(*(j.finish() for j in jobs))
    assert [r.status for r in records] == [
        OperationStatus.SKIPPED,
        OperationStatus.FAILED,
        OperationStatus.PARTIAL,
        OperationStatus.FAILED,
    ]
    assert records[0].errors[0].code == "VERIFICATION_SKIPPED"
    assert records[2].errors[0].details == {"record_ref": "r1", "stage": "detail"}
    assert records[2].message == finished_message(OperationStatus.PARTIAL, 1)  # not its last progress message
    assert records[3].errors[0].code == "INTERNAL"


async def test_progress_subscription_gets_updates_and_heartbeats_while_awaiting(env: Any) -> None:
    clock, _, manager, _ = env
    person_done = asyncio.Event()
    events: list[ProgressEvent] = []

    async def runner(ctx: OperationContext) -> str:
        await clock.sleep(1)
        ctx.set_stage("retrieval")
        ctx.progress(1, 4, "pages")
        ctx.awaiting_user("请完成验证")
        await person_done.wait()
        ctx.running()
        ctx.progress(4, 4)
        return "ok"

    job = manager.start(OperationKind.SEARCH, runner, SEARCH_BUDGET)
    received: list[ProgressEvent] = []

    async def async_listener(event: ProgressEvent) -> None:
        received.append(event)

    manager.subscribe(job.operation_id, events.append)
    unsubscribe = manager.subscribe(job.operation_id, async_listener)
    await clock.advance_settled(1.0)
    await clock.advance_settled(21.0)
    beats = [e for e in events if e.heartbeat]
    assert len(beats) == 4  # every 5 s while the person works
    assert all(b.status is OperationStatus.AWAITING_USER and b.done == 1 and b.total == 4 for b in beats)
    unsubscribe()
    person_done.set()
    await clock.run_until_complete(job.finish())
    assert [e.done for e in events if not e.heartbeat][-2:] == [4, 4]  # progress, then the final record
    assert events[-1].status is OperationStatus.COMPLETED
    assert len([e for e in events if e.heartbeat]) == 4  # heartbeats stopped with the wait
    assert 0 < len(received) < len(events)


async def test_a_new_stage_starts_counting_from_zero_on_the_progress_scale(env: Any) -> None:
    # set_stage kept the stage before's done/total: enrichment's first notification carried
    # retrieval's 17/30 under its own name, and the client's bar jumped from 17/30 to 34/47
    clock, _, manager, _ = env
    events: list[ProgressEvent] = []

    async def runner(ctx: OperationContext) -> str:
        await clock.sleep(1)
        ctx.set_stage("retrieval", "检索")
        ctx.progress(17, 30, "candidates")
        ctx.set_stage("enrichment", "读取期刊 0/8")
        ctx.progress(0, 8, "papers")
        ctx.set_stage("enrichment", "读取期刊 1/8")
        ctx.progress(1, 8)
        return "ok"

    job = manager.start(OperationKind.SEARCH, runner, SEARCH_BUDGET)
    manager.subscribe(job.operation_id, events.append)
    await clock.run_until_complete(job.finish())
    entered = next(e for e in events if e.stage == "enrichment")
    assert (entered.done, entered.total, entered.unit) == (0, None, None)
    scale = ProgressScale()
    sent = [scale.map(e.stage, e.done, e.total) for e in events]
    values = [value for value, _ in sent]
    at_entry = values[events.index(entered)]
    assert 17 <= at_entry < 18  # enrichment starts where retrieval stopped
    assert sent[-2] == (pytest.approx(18.0, abs=0.01), pytest.approx(25.0, abs=0.01))  # 1 of 8 past 17


async def test_resume_signals_the_human_step(env: Any) -> None:
    clock, _, manager, limiter = env
    gate = HumanGate(clock, limiter)
    manager.human = gate

    class Stuck:
        async def inspect(self) -> PageState:
            return PageState(PageKind.CHALLENGE)

        async def show(self) -> None: ...

        async def minimise(self) -> None: ...

    async def runner(ctx: OperationContext) -> str:
        await gate.handle("challenge", Stuck(), ctx, ctx.on_verification)
        return "through"

    job = manager.start(OperationKind.READ, runner)
    idle = manager.start(OperationKind.READ, sleeper(clock, 100))
    await clock.advance_settled(10.0)
    with pytest.raises(CnkiError) as info:
        await manager.resume(idle.operation_id)
    assert info.value.code == "OPERATION_STATE"
    with pytest.raises(CnkiError) as info:
        await manager.resume("op_" + "1" * 24)
    assert info.value.code == "OPERATION_NOT_FOUND"
    await manager.show()  # there is a step to show
    [record] = await clock.run_until_complete(manager.resume(job.operation_id))
    assert record.status in (OperationStatus.RUNNING, OperationStatus.COMPLETED)
    [done] = await clock.run_until_complete(job.finish())
    assert done.status is OperationStatus.COMPLETED and done.result == "through"
    with pytest.raises(CnkiError) as info:
        await manager.show()
    assert info.value.code == "VERIFICATION_NOT_FOUND"


async def test_status_without_an_id_is_idle_or_the_newest_active_operation(env: Any) -> None:
    clock, _, manager, _ = env
    assert manager.status() is None and IDLE == "idle"
    manager.start(OperationKind.READ, sleeper(clock, 10))
    await clock.advance_settled(1)
    newest = manager.start(OperationKind.DOWNLOAD, sleeper(clock, 10))
    current = manager.status()
    assert current is not None and current.operation_id == newest.operation_id
    assert current.budget.max_requests == 30  # the download tool's fixed budget


def test_budget_charges_until_exhausted_and_excludes_paused_time() -> None:
    clock = FakeClock()
    budget = Budget(clock, max_requests=2, timeout_seconds=10)
    budget.resume()
    budget.charge()
    budget.charge()
    with pytest.raises(CnkiError) as info:
        budget.charge()
    assert info.value.code == "BUDGET_EXHAUSTED" and budget.requests == 2

    timed_budget = Budget(clock, max_requests=100, timeout_seconds=10)
    timed_budget.resume()
    clock._t += 6
    timed_budget.pause()
    clock._t += 1000  # waiting for the person
    timed_budget.resume()
    clock._t += 4
    timed_budget.charge()  # exactly 10 s active: not over
    clock._t += 0.5
    with pytest.raises(CnkiError) as timed:
        timed_budget.charge()
    assert timed.value.code == "BUDGET_EXHAUSTED" and timed_budget.active_seconds == 10.5
    assert timed.value.details == {"active_seconds": 10.5, "timeout_seconds": 10, "reason": "timeout_seconds"}


def test_sink_keeps_the_newest_finished_records_and_never_drops_running_ones() -> None:
    clock = FakeClock()
    sink = MemorySink()
    from datetime import timedelta

    base = clock.now()
    for i in range(6):
        status = OperationStatus.RUNNING if i == 0 else OperationStatus.COMPLETED
        at = base + timedelta(seconds=i)
        sink.save(
            OperationRecord(
                operation_id=f"op_{i:024x}",
                kind=OperationKind.READ,
                status=status,
                budget=SEARCH_BUDGET,
                created_at=at,
                updated_at=at,
            ),
            keep=3,
        )
    kept = {r.operation_id for r in sink.list_recent(10)}
    assert kept == {f"op_{i:024x}" for i in (0, 4, 5)}


def test_record_storage_round_trip_keeps_the_checkpoint_but_never_shows_it() -> None:
    clock = FakeClock()
    record = OperationRecord(
        operation_id="op_" + "b" * 24,
        kind=OperationKind.SEARCH,
        budget=SEARCH_BUDGET,
        created_at=clock.now(),
        updated_at=clock.now(),
        checkpoint={"next_page": 3},
        final_error=True,
    )
    assert "checkpoint" not in record.model_dump() and "checkpoint" not in record.public()
    back = OperationRecord.from_storage(record.to_storage())
    assert back.checkpoint == {"next_page": 3} and back.final_error


async def test_store_sink_persists_records_checkpoints_and_recovery(tmp_path: Any) -> None:
    from cnki_mcp.jobs import StoreSink
    from cnki_mcp.store import Store

    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    backend = FakeBackend(clock)
    store = Store.open(tmp_path, clock)
    try:
        dying = Killable(StoreSink(store))
        old = JobManager(clock, dying)
        job = old.start(OperationKind.SEARCH, search_runner(backend, limiter), SEARCH_BUDGET)
        await clock.advance_settled(2.5)  # two pages checkpointed, the third in flight
        dying.dead = True  # the process dies: nothing it does from now on reaches the store
        await old.shutdown()

        sink = StoreSink(store)
        stored = sink.load(job.operation_id)
        assert stored is not None and stored.status is OperationStatus.RUNNING
        assert stored.checkpoint["next_page"] == 3 and "checkpoint" not in stored.public()

        new = JobManager(clock, sink)
        assert new.recover_interrupted() == [job.operation_id]
        interrupted = new.status(job.operation_id)
        assert interrupted is not None and interrupted.status is OperationStatus.INTERRUPTED
        resumed = new.continue_(job.operation_id, search_runner(backend, limiter))
        [final] = await clock.run_until_complete(resumed.finish())
        assert final.status is OperationStatus.COMPLETED and final.requests == 10
        assert backend.log == [1, 2, 3, *range(3, 11)]  # only the request lost in flight is redone
        reloaded = sink.load(job.operation_id)
        assert reloaded is not None and reloaded.status is OperationStatus.COMPLETED
        assert [r.operation_id for r in sink.list_recent(5)] == [job.operation_id]
    finally:
        store.close()
