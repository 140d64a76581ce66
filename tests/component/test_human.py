"""The human gate on a fake clock with scripted pages: when a step ends, timeouts, skip, racing
requests, the operation's state and active time, and the limiter around the step."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import VerificationNotFound, VerificationSkipped, VerificationTimeout
from cnki_mcp.jobs import BudgetSpec, JobManager, MemorySink, OperationContext, OperationKind, OperationStatus
from cnki_mcp.site.human import (
    HEADLESS_MESSAGES,
    MESSAGES,
    HumanGate,
    PageKind,
    PageState,
    StepOutcome,
)
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.page_lease import PageLease

CH = PageState(PageKind.CHALLENGE)
LOGIN = PageState(PageKind.LOGIN)
CLEAR = PageState(PageKind.CLEAR)
LOADING = PageState(PageKind.CLEAR, ready=False)


class ScriptedPage:
    """Answers `inspect` from a script; the last state repeats."""

    def __init__(self, clock: FakeClock, *states: PageState) -> None:
        self.clock = clock
        self.states = list(states)
        self.inspected_at: list[float] = []
        self.shown = 0
        self.minimised = 0

    async def inspect(self) -> PageState:
        self.inspected_at.append(self.clock.monotonic())
        index = min(len(self.inspected_at) - 1, len(self.states) - 1)
        return self.states[index]

    async def show(self) -> None:
        self.shown += 1

    async def minimise(self) -> None:
        self.minimised += 1


class FakeOp:
    def __init__(self, operation_id: str = "op_a") -> None:
        self.operation_id = operation_id
        self.events: list[tuple[str, str]] = []
        self.status = "running"

    def awaiting_user(self, message: str) -> None:
        self.status = "awaiting_user"
        self.events.append(("awaiting_user", message))

    def running(self) -> None:
        self.status = "running"
        self.events.append(("running", ""))


def make_gate(clock: FakeClock, **kwargs: object) -> tuple[HumanGate, Limiter]:
    limiter = Limiter(clock, 0.5, 6)
    return HumanGate(clock, limiter, **kwargs), limiter  # type: ignore[arg-type]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_two_clear_observations_in_a_row_end_the_step() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    page = ScriptedPage(clock, CH, CH, CLEAR, CLEAR)
    op = FakeOp()
    t0 = clock.monotonic()
    [outcome] = await clock.run_until_complete(gate.handle("challenge", page, op, "wait"))
    assert outcome is StepOutcome.CLEARED
    assert page.inspected_at == [t0, t0 + 1, t0 + 2, t0 + 3]
    assert page.shown == 1 and page.minimised == 1
    assert op.events == [("awaiting_user", MESSAGES["challenge"]), ("running", "")]
    assert gate.epoch == 1 and not gate.active
    assert not limiter.held and limiter.backoff == 2.0


async def test_one_clear_then_challenge_again_does_not_end_the_step() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)
    page = ScriptedPage(clock, CH, CLEAR, CH, CLEAR, LOADING, CLEAR, CLEAR)
    [outcome] = await clock.run_until_complete(gate.handle("challenge", page, None, "wait"))
    assert outcome is StepOutcome.CLEARED
    assert len(page.inspected_at) == 7  # a page still loading is not clear either


async def test_resume_ends_the_step_without_a_clear_page() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    page = ScriptedPage(clock, CH)
    op = FakeOp()
    step = asyncio.ensure_future(gate.handle("challenge", page, op, "wait"))
    await clock.advance_settled(5.0)
    assert gate.active and limiter.held and gate.waiting_operations == ["op_a"]
    resumed_at = clock.monotonic()
    gate.resume()
    [outcome] = await clock.run_until_complete(step)
    assert outcome is StepOutcome.RESUMED
    assert clock.monotonic() == resumed_at  # woke on the signal, not on the next poll
    assert not limiter.held and op.status == "running"


async def test_timeout_raises_and_releases_the_limiter() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock, timeout=20 * 60)
    page = ScriptedPage(clock, CH)
    op = FakeOp()
    t0 = clock.monotonic()
    with pytest.raises(VerificationTimeout) as info:
        await clock.run_until_complete(gate.handle("challenge", page, op, "wait"))
    assert info.value.code == "VERIFICATION_TIMEOUT"
    assert clock.monotonic() == t0 + 20 * 60
    assert not limiter.held and not gate.active
    assert limiter.backoff == 2.0
    assert op.status == "running" and page.minimised == 1


async def test_skip_policy_raises_at_once_and_holds_nothing() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    page = ScriptedPage(clock, CH)
    op = FakeOp()
    with pytest.raises(VerificationSkipped) as info:
        await gate.handle("challenge", page, op, "skip")
    assert info.value.code == "VERIFICATION_SKIPPED"
    assert page.shown == 0 and page.inspected_at == []
    assert not limiter.held and limiter.backoff == 1.0 and op.events == []
    assert gate.epoch == 0


class LimitedOp(FakeOp):
    """An operation whose request goes through the limiter (its budget), by its on_verification."""

    def __init__(self, operation_id: str, on_verification: str) -> None:
        super().__init__(operation_id)
        self.on_verification = on_verification
        self.charged = 0  # requests counted against its budget

    def charge(self) -> None:
        self.charged += 1


async def test_a_skip_operation_held_by_another_operations_step_is_skipped_not_awaiting_user() -> None:
    # docs/reliability.md: under skip the operation never turns awaiting_user; a request of it
    # that met another operation's step in the limiter waited for the person with that message
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    step = asyncio.ensure_future(
        gate.handle("challenge", ScriptedPage(clock, CH, CH, CH, CLEAR), FakeOp(), "wait")
    )
    await settle()
    assert limiter.held

    async def request(op: LimitedOp) -> None:
        async with limiter.slot(budget=op):
            pass

    skipping = LimitedOp("op_b", "skip")
    skipped = asyncio.ensure_future(request(skipping))
    await settle()
    assert skipped.done() and skipping.events == [] and gate.waiting_operations == ["op_a"]
    error = skipped.exception()
    assert isinstance(error, VerificationSkipped)
    assert error.details["gate"] == "challenge" and error.details["waiting_for"] == ["op_a"]
    waiting = LimitedOp("op_c", "wait")  # an operation that waits is held as before
    other = asyncio.ensure_future(request(waiting))
    await settle()
    assert waiting.status == "awaiting_user" and gate.waiting_operations == ["op_a", "op_c"]
    await clock.run_until_complete(step, other)
    assert waiting.status == "running"
    # review 7a L5: the skipped request was never sent, so its budget is not charged for it (it
    # was, and a skip search's enrichment could end BUDGET_EXHAUSTED on requests never sent)
    assert skipping.charged == 0 and waiting.charged == 1


async def test_a_racing_challenge_waits_for_the_first_step_and_returns_for_retry() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)
    page_a = ScriptedPage(clock, CH, CH, CH, CLEAR, CLEAR)
    page_b = ScriptedPage(clock, CH)
    op_a, op_b = FakeOp("op_a"), FakeOp("op_b")
    first = asyncio.ensure_future(gate.handle("challenge", page_a, op_a, "wait"))
    await settle()
    second = asyncio.ensure_future(gate.handle("challenge", page_b, op_b, "wait"))
    await settle()
    assert op_b.status == "awaiting_user"
    assert gate.waiting_operations == ["op_a", "op_b"]
    outcomes = await clock.run_until_complete(first, second)
    assert outcomes == [StepOutcome.CLEARED, StepOutcome.CLEARED]
    assert page_b.shown == 0 and page_b.inspected_at == []  # no second step
    assert gate.epoch == 1
    assert op_b.events[-1] == ("running", "")


async def test_a_request_sent_before_a_finished_step_retries_at_once() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)
    sent_epoch = gate.epoch
    await clock.run_until_complete(gate.handle("challenge", ScriptedPage(clock, CLEAR), None, "wait"))
    late_page = ScriptedPage(clock, CH)
    outcome = await gate.handle("challenge", late_page, FakeOp(), "wait", epoch=sent_epoch)
    assert outcome is StepOutcome.CLEARED
    assert late_page.inspected_at == [] and gate.epoch == 1


async def test_racers_of_a_step_that_timed_out_time_out_too() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock, timeout=60)
    first = asyncio.ensure_future(gate.handle("challenge", ScriptedPage(clock, CH), FakeOp("op_a"), "wait"))
    await settle()
    racer = FakeOp("op_b")
    second = asyncio.ensure_future(gate.handle("challenge", ScriptedPage(clock, CH), racer, "wait"))
    await clock.advance_settled(61)
    await settle()
    for task in (first, second):
        assert isinstance(task.exception(), VerificationTimeout)
    assert racer.status == "running" and not limiter.held


async def test_the_limiter_is_held_during_the_step_and_slowed_after() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    page = ScriptedPage(clock, CH, CH, CH, CH, CLEAR, CLEAR)
    step = asyncio.ensure_future(gate.handle("challenge", page, None, "wait"))
    await settle()
    starts: list[float] = []

    async def other_request() -> None:
        async with limiter.slot() as started:
            starts.append(started)

    other = asyncio.ensure_future(other_request())
    await clock.advance_settled(3.0)
    assert limiter.held and starts == []
    await clock.run_until_complete(step, other)
    step_end = page.inspected_at[-1]
    assert limiter.backoff == 2.0
    assert starts == [step_end + 0.5 * 2.0]  # released, then the next start pushed by the slowed spacing


async def test_login_step_uses_the_login_message_and_headless_says_how_to_solve() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)
    op = FakeOp()
    await clock.run_until_complete(gate.handle("login", ScriptedPage(clock, LOGIN, CLEAR, CLEAR), op, "wait"))
    assert op.events[0] == ("awaiting_user", "知网要求登录：请在弹出的浏览器窗口登录，完成后任务会自动继续")

    headless, _ = make_gate(clock, headless=True)
    op2 = FakeOp()
    await clock.run_until_complete(headless.handle("challenge", ScriptedPage(clock, CLEAR), op2, "wait"))
    message = op2.events[0][1]
    assert message == HEADLESS_MESSAGES["challenge"]
    # restarting ends the step, so the advice is to continue after the restart, not to show it
    assert "continue" in message and "show" not in message and "CNKI_HEADLESS=0" in message
    assert "login" in headless.message_for("login")
    browser_headless = False
    decided_later, _ = make_gate(clock, headless=lambda: browser_headless)
    assert decided_later.message_for("challenge") == MESSAGES["challenge"]
    browser_headless = True
    assert decided_later.message_for("challenge") == HEADLESS_MESSAGES["challenge"]


async def test_show_and_resume_without_a_step_are_not_found() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)
    with pytest.raises(VerificationNotFound) as info:
        await gate.show()
    assert info.value.code == "VERIFICATION_NOT_FOUND"
    with pytest.raises(VerificationNotFound):
        gate.resume()


async def test_show_raises_the_active_page_again() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)
    page = ScriptedPage(clock, CH)
    step = asyncio.ensure_future(gate.handle("challenge", page, None, "wait"))
    await settle()
    await gate.show()
    assert page.shown == 2
    gate.resume()
    await clock.run_until_complete(step)


async def test_a_failing_page_does_not_end_the_step_early() -> None:
    clock = FakeClock()
    gate, _ = make_gate(clock)

    class FlakyPage(ScriptedPage):
        async def inspect(self) -> PageState:
            state = await super().inspect()
            if len(self.inspected_at) == 2:
                raise RuntimeError("navigating")
            return state

        async def show(self) -> None:
            raise RuntimeError("no window")

    page = FlakyPage(clock, CLEAR)
    [outcome] = await clock.run_until_complete(gate.handle("challenge", page, None, "wait"))
    assert outcome is StepOutcome.CLEARED
    assert len(page.inspected_at) == 4  # clear, (error), clear, clear


async def test_cancelling_the_step_releases_everything() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    op = FakeOp()
    step = asyncio.ensure_future(gate.handle("challenge", ScriptedPage(clock, CH), op, "wait"))
    await clock.advance_settled(3.0)
    step.cancel()
    await settle()
    assert step.cancelled()
    assert not limiter.held and not gate.active and op.status == "running"


async def test_waiting_for_the_person_is_not_charged_to_active_time() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    manager = JobManager(clock, MemorySink(), inline_wait=0)
    page = ScriptedPage(clock, *([CH] * 100), CLEAR, CLEAR)
    seen: dict[str, object] = {}

    async def runner(ctx: OperationContext) -> dict[str, int]:
        async with limiter.slot(budget=ctx):
            pass
        await clock.sleep(5)
        before = ctx.active_seconds
        await gate.handle("challenge", page, ctx, ctx.on_verification)
        seen["after_step"] = ctx.active_seconds - before
        await clock.sleep(5)
        return {"ok": 1}

    job = manager.start(OperationKind.READ, runner, BudgetSpec(max_requests=5, timeout_seconds=30))
    await settle()
    assert manager.status(job.operation_id).status is OperationStatus.RUNNING  # type: ignore[union-attr]
    await clock.advance_settled(6)  # now inside the step
    await settle()
    waiting = manager.status(job.operation_id)
    assert waiting is not None and waiting.status is OperationStatus.AWAITING_USER
    assert waiting.message == MESSAGES["challenge"]
    [record] = await clock.run_until_complete(job.finish())
    assert record.status is OperationStatus.COMPLETED
    assert seen["after_step"] == 0.0
    assert record.active_seconds == 10.0  # 101 s with the person are not counted against 30 s
    assert record.requests == 1
    await manager.shutdown()


async def test_a_request_held_by_another_operations_step_waits_for_the_person_too() -> None:
    # "A captcha or login page pauses everything": an operation whose request waits out another
    # operation's step in the limiter is waiting for the person, not running. It was left
    # `running`, its active time charged, so it ended BUDGET_EXHAUSTED while the person was still
    # at the page (session_status(refresh=true) during a login: 60 s).
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    manager = JobManager(clock, MemorySink(), inline_wait=0)
    page = ScriptedPage(clock, *([CH] * 100), CLEAR, CLEAR)
    owner = FakeOp("op_owner")
    step = asyncio.ensure_future(gate.handle("challenge", page, owner, "wait"))
    await settle()

    async def runner(ctx: OperationContext) -> dict[str, int]:
        async with limiter.slot(budget=ctx):
            pass
        await clock.sleep(5)
        return {"ok": 1}

    job = manager.start(OperationKind.READ, runner, BudgetSpec(max_requests=5, timeout_seconds=30))
    await clock.advance_settled(40)
    await settle()
    held = manager.status(job.operation_id)
    assert held is not None and held.status is OperationStatus.AWAITING_USER
    assert held.message == MESSAGES["challenge"]
    assert gate.waiting_operations == ["op_owner", job.operation_id]
    [record, outcome] = await clock.run_until_complete(job.finish(), step)
    assert outcome is StepOutcome.CLEARED
    assert record.status is OperationStatus.COMPLETED  # not BUDGET_EXHAUSTED after 30 s
    # its 5 s plus the slowed spacing (0.5 s x 2) after the step: the 101 s the step held it are not counted
    assert record.active_seconds == 6.0
    assert record.requests == 1
    assert gate.waiting_operations == [] and not limiter.held
    await manager.shutdown()


async def test_show_under_headless_says_there_is_no_window() -> None:
    # operation_control show answered "已把等待处理的窗口切到前台" with a headless browser.
    clock = FakeClock()
    gate, _ = make_gate(clock, headless=True)
    page = ScriptedPage(clock, CH)
    step = asyncio.ensure_future(gate.handle("challenge", page, FakeOp(), "wait"))
    await settle()
    shown_at_start = page.shown
    assert await gate.show() is False
    assert page.shown == shown_at_start
    headed, _ = make_gate(clock)
    headed_page = ScriptedPage(clock, CH)
    other = asyncio.ensure_future(headed.handle("challenge", headed_page, FakeOp(), "wait"))
    await settle()
    assert await headed.show() is True and headed_page.shown == 2
    gate.resume()
    headed.resume()
    await clock.run_until_complete(step, other)


async def test_an_operation_with_two_requests_held_by_a_step_is_listed_waiting_once() -> None:
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    manager = JobManager(clock, MemorySink(), inline_wait=0)
    page = ScriptedPage(clock, *([CH] * 100), CLEAR, CLEAR)
    step = asyncio.ensure_future(gate.handle("challenge", page, FakeOp("op_owner"), "wait"))
    await settle()

    async def runner(ctx: OperationContext) -> dict[str, int]:
        async def one() -> None:
            async with limiter.slot(budget=ctx):
                pass

        await asyncio.gather(one(), one())  # a detail page and a journal page asked together
        return {"ok": 1}

    job = manager.start(OperationKind.READ, runner, BudgetSpec(max_requests=5, timeout_seconds=30))
    await clock.advance_settled(40)
    await settle()
    assert gate.waiting_operations == ["op_owner", job.operation_id]
    [record, _] = await clock.run_until_complete(job.finish(), step)
    assert record.status is OperationStatus.COMPLETED and record.requests == 2
    await manager.shutdown()


@pytest.mark.parametrize("resource", ["capture_lock", "work_lease"])
async def test_a_wait_behind_a_holder_that_then_opens_a_step_becomes_the_steps(resource: str) -> None:
    # review 9 finding 3: behind_step read the step once, on entry. An operation that began
    # waiting for the capture lock (or the work tab's lease) while its holder was still loading the
    # search page, before the holder met the challenge and opened its step, stayed `running`: a
    # skip operation was never skipped and waited as long as the person took.
    clock = FakeClock()
    gate, limiter = make_gate(clock)
    lock = asyncio.Lock()
    lease = PageLease()

    def wait_for_it() -> tuple[AbstractAsyncContextManager[object], bool]:
        if resource == "capture_lock":
            return lock, lock.locked()
        return lease.exclusive(), lease.exclusive_busy

    owner = FakeOp("op_a")
    holding = asyncio.Event()
    release = asyncio.Event()
    page = ScriptedPage(clock, *([CH] * 10), CLEAR, CLEAR)

    async def holder() -> StepOutcome:
        async with gate.behind_step(owner, *wait_for_it()):
            holding.set()
            await release.wait()  # loading AdvSearch ...
            return await gate.handle("challenge", page, owner, "wait")  # ... which shows a challenge

    entered: list[str] = []

    async def waiter(op: LimitedOp) -> None:
        async with gate.behind_step(op, *wait_for_it()):
            entered.append(op.operation_id)

    first = asyncio.ensure_future(holder())
    await holding.wait()
    skipping, waiting = LimitedOp("op_b", "skip"), LimitedOp("op_c", "wait")
    skipped = asyncio.ensure_future(waiter(skipping))
    queued = asyncio.ensure_future(waiter(waiting))
    await settle()
    assert not skipped.done() and skipping.status == "running" and waiting.status == "running"
    release.set()  # the holder meets the challenge: its step opens while they wait
    await settle()
    assert gate.active and limiter.held
    assert skipped.done() and isinstance(skipped.exception(), VerificationSkipped)
    error = skipped.exception()
    assert isinstance(error, VerificationSkipped)
    assert error.code == "VERIFICATION_SKIPPED"
    assert error.details["gate"] == "challenge" and error.details["waiting_for"] == ["op_a"]
    assert skipping.events == []  # never awaiting_user
    assert waiting.status == "awaiting_user" and waiting.events == [("awaiting_user", MESSAGES["challenge"])]
    assert gate.waiting_operations == ["op_a", "op_c"]
    [outcome, _] = await clock.run_until_complete(first, queued)
    assert outcome is StepOutcome.CLEARED
    assert entered == ["op_c"] and waiting.status == "running"
    assert not lock.locked() and not lease.exclusive_busy and not limiter.held
