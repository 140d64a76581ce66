"""The browser recovery after a grid transport failure waits for the work tab's lease exclusive; a
human step showing its page in the work tab holds that lease. That wait is the step's
(docs/reliability.md): an on_verification skip operation is VERIFICATION_SKIPPED at once, another is
awaiting_user with the step's message, and recovers once the person is done. Real CnkiSite retry
loop, HumanGate, Limiter and PageLease on a fake clock; the browser is a stand-in that counts
recoveries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import VerificationSkipped
from cnki_mcp.settings import Settings
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.human import MESSAGES, HumanGate, PageKind, PageState, StepOutcome
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.transport import TransportError
from tests.component.test_human import LimitedOp, settle


class Host:
    """What the retry loop asks of the browser host."""

    generation = 1
    started = True
    profile_dir = None

    def __init__(self) -> None:
        self.recovered = 0

    def lost_since(self, generation: int) -> bool:
        return False

    async def recover(self, generation: int | None = None) -> bool:
        if generation is not None and generation != self.generation:
            return False  # recovered since by another request (BrowserHost.recover)
        self.recovered += 1
        self.generation += 1
        return True


class Page:
    """The work tab under the step: a challenge for a while, then clear."""

    def __init__(self) -> None:
        self.states = [PageState(PageKind.CHALLENGE)] * 5 + [PageState(PageKind.CLEAR)] * 2

    async def inspect(self) -> PageState:
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]

    async def show(self) -> None:
        pass

    async def minimise(self) -> None:
        pass


async def test_the_recovery_after_a_transport_failure_waits_behind_a_step_as_the_steps(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    gate = HumanGate(clock, limiter)
    host = Host()
    site = CnkiSite(Settings(data_dir=tmp_path), clock, host, limiter, gate)  # type: ignore[arg-type]
    lease = site._work_lease
    owner = LimitedOp("op_a", "wait")

    async def person_step() -> StepOutcome:  # PersonSteps shows a page in the work tab this way
        async with lease.exclusive():
            return await gate.handle("challenge", Page(), owner, "wait")

    step = asyncio.ensure_future(person_step())
    await settle()
    assert gate.active and lease.exclusive_busy

    def failing_once() -> Callable[[], Awaitable[str]]:
        calls: list[int] = []

        async def attempt() -> str:
            calls.append(1)
            if len(calls) == 1:
                raise TransportError("the browser did not answer")
            return "answered"

        return attempt

    skipping, waiting = LimitedOp("op_b", "skip"), LimitedOp("op_c", "wait")
    skipped = asyncio.ensure_future(site._with_retries(failing_once(), skipping, on_transport="recover"))
    recovering = asyncio.ensure_future(site._with_retries(failing_once(), waiting, on_transport="recover"))
    await settle()
    assert skipped.done(), "a skip operation waited for the person behind the step"
    error = skipped.exception()
    assert isinstance(error, VerificationSkipped) and error.code == "VERIFICATION_SKIPPED"
    assert error.details["gate"] == "challenge" and error.details["waiting_for"] == ["op_a"]
    assert skipping.events == []
    assert waiting.status == "awaiting_user" and waiting.events == [("awaiting_user", MESSAGES["challenge"])]
    assert gate.waiting_operations == ["op_a", "op_c"] and host.recovered == 0
    [outcome, answer] = await clock.run_until_complete(step, recovering)
    assert outcome is StepOutcome.CLEARED and answer == "answered"
    assert host.recovered == 1 and waiting.status == "running"
    assert not lease.exclusive_busy
