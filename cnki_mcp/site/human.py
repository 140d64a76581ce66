"""The human gate: one human step (captcha/slider or login page) at a time. The step holds the
limiter, marks the operation `awaiting_user` with a message saying what to do, shows the page and
polls it until it is clear twice in a row (or `resume()`), then releases the limiter, slows it down
and minimises the window. Requests that raced into the same challenge wait for the step and retry.

Every call on the page (inspect, show, minimise) has a deadline (site/deadline.py): a page that
does not answer counts as not clear, and a window that cannot be raised does not end the step.

The gate talks to the page through the small `HumanPage` protocol (the Playwright host implements
it) and to the operation through `OperationHandle` (jobs.OperationContext implements it)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

from cnki_mcp.clock import Clock, event_or_timeout
from cnki_mcp.errors import CnkiError, VerificationNotFound, VerificationSkipped, VerificationTimeout
from cnki_mcp.site.deadline import CALL_SECONDS, CLOSE_SECONDS, bounded
from cnki_mcp.site.limiter import Limiter

log = logging.getLogger(__name__)

StepKind = Literal["challenge", "login"]
Policy = Literal["wait", "skip"]

MESSAGES: dict[StepKind, str] = {
    "challenge": "知网要求人工验证：请在弹出的浏览器窗口完成验证，完成后任务会自动继续",
    "login": "知网要求登录：请在弹出的浏览器窗口登录，完成后任务会自动继续",
}
# Headless: there is no window to pop up, so the message says how the person can solve it.
HEADLESS_MESSAGES: dict[StepKind, str] = {
    "challenge": (
        "知网要求人工验证，但浏览器以无界面模式运行，无法弹出窗口：请在有显示器的环境以有界面模式"
        "（CNKI_HEADLESS=0）重启服务（重启不丢已取得的数据），再用 operation_control 的 continue 继续检索"
        "（其他操作重新调用原工具）：验证页面会在弹出的窗口中出现，完成后任务自动继续"
    ),
    "login": (
        "知网要求登录，但浏览器以无界面模式运行，无法弹出窗口：请在有显示器的环境以有界面模式"
        "（CNKI_HEADLESS=0）重启服务（重启不丢已取得的数据），用 login 工具登录，"
        "再用 operation_control 的 continue 继续检索（其他操作重新调用原工具）"
    ),
}

# The `login` tool's own step, headless: "use the login tool" (HEADLESS_MESSAGES) is this very call,
# and nobody can log in where no window can be shown, while the step holds every other operation's
# requests for the gate's 20 minutes. So the message says to cancel it.
# Operations waiting behind the step are shown the same message, so it names the login operation.
def headless_login_tool_message(operation_id: str | None) -> str:
    which = f"login 任务 {operation_id}" if operation_id else "这次 login"
    return (
        f"浏览器以无界面模式运行，无法弹出登录窗口，{which}无法完成；它等待期间其他任务的知网请求都在排队："
        f"请用 operation_control 的 cancel 结束{which}，在有显示器的环境以有界面模式（CNKI_HEADLESS=0）"
        "重启服务（重启不丢已取得的数据）后再调用 login"
    )

# A request of an operation with on_verification skip met another operation's step (the limiter is held).
HELD_SKIPPED: dict[StepKind, str] = {
    "challenge": "另一个任务正在等待人工验证，按 on_verification=skip 未等待；验证完成后再调用",
    "login": "另一个任务正在等待登录，按 on_verification=skip 未等待；登录完成后再调用",
}


class PageKind(StrEnum):
    CLEAR = "clear"
    CHALLENGE = "challenge"
    LOGIN = "login"


@dataclass(frozen=True, slots=True)
class PageState:
    """One observation of the page under a human step."""

    kind: PageKind
    ready: bool = True  # document.readyState !== 'loading'
    # what the page shows cannot end well: the step ends with this error (a login through a
    # library proxy, REMOTE_ACCESS_UNSUPPORTED), not after its 20 minutes
    error: CnkiError | None = None

    @property
    def clear(self) -> bool:
        return self.kind is PageKind.CLEAR and self.ready


class HumanPage(Protocol):
    """What the site layer provides for a human step."""

    async def inspect(self) -> PageState:
        """Look at the live page: challenge, login or clear, and whether it is ready."""
        ...

    async def show(self) -> None:
        """Raise and focus the window holding the page."""
        ...

    async def minimise(self) -> None: ...


@runtime_checkable
class OperationHandle(Protocol):
    """What the gate needs from the operation that met the page (or whose request waits for the
    step in the limiter)."""

    @property
    def operation_id(self) -> str: ...

    def awaiting_user(self, message: str) -> None:
        """Status `awaiting_user` with `message`; active time stops being charged."""
        ...

    def running(self) -> None:
        """Back to `running`; active time is charged again."""
        ...


class StepOutcome(StrEnum):
    CLEARED = "cleared"
    RESUMED = "resumed"
    TIMED_OUT = "timed_out"
    ABORTED = "aborted"  # the owner was cancelled or the page failed


@dataclass(slots=True)
class _Step:
    kind: StepKind
    page: HumanPage
    message: str
    resume: asyncio.Event = field(default_factory=asyncio.Event)
    operation_ids: list[str] = field(default_factory=list)


class HumanGate:
    """One human step at a time; see the module docstring.

    `epoch` goes up when a step ends. A request that met a challenge passes the epoch it read
    before it was sent: if a step ended since, the page it met was that step's page, so `handle`
    returns at once and the caller retries."""

    def __init__(
        self,
        clock: Clock,
        limiter: Limiter,
        *,
        poll_interval: float = 1.0,
        timeout: float = 20 * 60,
        clear_checks: int = 2,
        headless: bool | Callable[[], bool | None] = False,
    ) -> None:
        if clear_checks < 1:
            raise ValueError("clear_checks must be >= 1")
        self._clock = clock
        self._limiter = limiter
        self._poll = poll_interval
        self._timeout = timeout
        self._clear_checks = clear_checks
        # a callable (e.g. `lambda: host.headless`) because the browser decides when it launches
        self._headless = headless
        self._lock = asyncio.Lock()
        self._epoch = 0
        self._step: _Step | None = None
        self._step_opened = asyncio.Event()  # set (and replaced) each time a step opens
        self._outcomes: dict[int, StepOutcome] = {}  # epoch a step ended with -> outcome

    # --- introspection ----------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def poll_interval(self) -> float:
        """Seconds between looks at a step's page while the person works in it."""
        return self._poll

    @property
    def active(self) -> bool:
        return self._step is not None

    @property
    def active_kind(self) -> StepKind | None:
        return self._step.kind if self._step else None

    @property
    def active_message(self) -> str | None:
        return self._step.message if self._step else None

    @property
    def waiting_operations(self) -> list[str]:
        """Operations currently waiting for the person (the step owner first), each once."""
        return list(dict.fromkeys(self._step.operation_ids)) if self._step else []

    @property
    def headless(self) -> bool:
        value = self._headless() if callable(self._headless) else self._headless
        return bool(value)

    def message_for(self, kind: StepKind) -> str:
        return (HEADLESS_MESSAGES if self.headless else MESSAGES)[kind]

    # --- control ----------------------------------------------------------------------

    def resume(self) -> None:
        """End the active step now (the person says the page is done)."""
        if self._step is None:
            raise VerificationNotFound()
        self._step.resume.set()

    async def show(self) -> bool:
        """Raise the window of the active step again. False when headless: there is no window,
        and the step's message says what to do instead."""
        if self._step is None:
            raise VerificationNotFound()
        if self.headless:
            return False
        await self._step.page.show()
        return True

    # --- the step ---------------------------------------------------------------------

    async def handle(
        self,
        kind: StepKind,
        page: HumanPage,
        op: OperationHandle | None,
        policy: Policy = "wait",
        *,
        epoch: int | None = None,
        opened: Callable[[], None] | None = None,
        headless_message: str | None = None,
    ) -> StepOutcome:
        """Get the person past `page`; on return the caller retries its request.

        `epoch`: the gate's epoch read before the request was sent (default: now). `opened`: called
        once this call's own step is open (`active`), before anything is awaited in it.
        `headless_message`: this step's message when headless, instead of HEADLESS_MESSAGES. Raises
        VerificationSkipped (policy skip, nothing held) or VerificationTimeout."""
        if policy == "skip":
            raise VerificationSkipped()
        seen = self._epoch if epoch is None else epoch
        if self._epoch > seen:
            return self._outcome_since(seen)
        if self._step is not None and op is not None:
            # A step is already open: this operation waits for the person too.
            return await self._wait_for_step(seen, op)
        async with self._lock:
            if self._epoch > seen:
                return self._outcome_since(seen)
            message = headless_message if headless_message is not None and self.headless else self.message_for(kind)
            return await self._run_step(kind, page, op, opened, message)

    async def _wait_for_step(self, seen: int, op: OperationHandle) -> StepOutcome:
        step = self._step
        assert step is not None
        step.operation_ids.append(op.operation_id)
        op.awaiting_user(step.message)
        try:
            async with self._lock:
                pass
        finally:
            if op.operation_id in step.operation_ids:
                step.operation_ids.remove(op.operation_id)
            op.running()
        return self._outcome_since(seen)

    @asynccontextmanager
    async def _held(self, budget: object) -> AsyncIterator[None]:
        """Around a request that waits out the step's hold in the limiter: everything pauses for
        the person, so its operation is awaiting_user with the step's message (its active time
        is not charged, docs/reliability.md) and is listed among the waiting operations."""
        step = self._step
        if step is None or not isinstance(budget, OperationHandle):
            yield
            return
        if getattr(budget, "on_verification", None) == "skip":
            # on_verification skip never waits for the person (docs/reliability.md): it turned
            # awaiting_user with the other operation's step message; the request is skipped as a
            # page it met itself would be, before anything is sent
            raise VerificationSkipped(
                HELD_SKIPPED[step.kind], gate=step.kind, waiting_for=step.operation_ids[:1]
            )
        step.operation_ids.append(budget.operation_id)
        budget.awaiting_user(step.message)
        try:
            yield
        finally:
            ids = step.operation_ids  # its last entry goes: the owner stays first
            if budget.operation_id in ids:
                del ids[len(ids) - 1 - ids[::-1].index(budget.operation_id)]
            budget.running()

    @asynccontextmanager
    async def behind_step(
        self, op: object, resource: AbstractAsyncContextManager[object], busy: bool
    ) -> AsyncIterator[None]:
        """Hold `resource` (the work tab's lease, the grid capture's lock) for the block. What is
        `busy` there while a step is open waits for the step (the step holds the work tab, or holds
        up whoever holds it), so that wait is the step's, as a request waiting out the limiter's
        hold is (`_held`): on_verification skip is VERIFICATION_SKIPPED at once, another operation
        is awaiting_user with the step's message. Before, such an operation answered `running`
        with no request sent for as long as the person took (20 minutes headless), skip or not.
        An operation the step already counts (its owner's other requests) just waits.

        A step that opens while the wait is under way (its holder was loading the search page and
        met the challenge) turns the wait into the step's the same way: the step was read once, on
        entry, and such an operation stayed `running`, never skipped (review 9 finding 3)."""
        async with AsyncExitStack() as stack:
            if busy and isinstance(op, OperationHandle):
                await self._wait_behind_step(op, resource, stack)
            else:
                await stack.enter_async_context(resource)
            yield

    async def _wait_behind_step(
        self, op: OperationHandle, resource: AbstractAsyncContextManager[object], stack: AsyncExitStack
    ) -> None:
        """Enter `resource` into `stack`, switching to the step's wait (`_held`) when a step that
        does not count `op` is open, or opens before the resource is free."""
        entering = asyncio.ensure_future(stack.enter_async_context(resource))
        try:
            async with AsyncExitStack() as held:
                seen: _Step | None = None  # the last step looked at
                holding = False
                while not entering.done():
                    step = self._step
                    if not holding and step is not None and step is not seen:
                        seen = step
                        if op.operation_id not in step.operation_ids:  # not its own step
                            await held.enter_async_context(self._held(op))  # skip: raises here
                            holding = True
                    opened = asyncio.ensure_future(self._step_opened.wait())
                    try:
                        await asyncio.wait({entering, opened}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        opened.cancel()
                entering.result()
        except BaseException:
            if not entering.done():
                entering.cancel()
                # the resource, if it was taken meanwhile, is in `stack` and released with it
                await asyncio.gather(entering, return_exceptions=True)
            raise

    def _outcome_since(self, seen: int) -> StepOutcome:
        outcome = self._outcomes.get(self._epoch, StepOutcome.CLEARED)
        if outcome is StepOutcome.TIMED_OUT and self._epoch == seen + 1:
            # the step this request waited for ran out of time: so does this request
            raise VerificationTimeout()
        return outcome

    async def _run_step(
        self,
        kind: StepKind,
        page: HumanPage,
        op: OperationHandle | None,
        opened: Callable[[], None] | None,
        message: str,
    ) -> StepOutcome:
        step = _Step(kind=kind, page=page, message=message)
        if op is not None:
            step.operation_ids.append(op.operation_id)
        self._step = step
        self._step_opened.set()  # waits behind the step that started before it turn the step's
        self._step_opened = asyncio.Event()
        if opened is not None:
            opened()
        outcome = StepOutcome.ABORTED
        self._limiter.hold(waiter=self._held)
        try:
            if op is not None:
                op.awaiting_user(step.message)
            try:
                await bounded(page.show(), CALL_SECONDS, "show the page")
            except Exception:  # a window that cannot be raised must not end the step
                log.warning("human step: could not show the page", exc_info=True)
            outcome = await self._poll_until_clear(step)
            if outcome is StepOutcome.TIMED_OUT:
                raise VerificationTimeout(kind=kind, timeout_seconds=self._timeout)
            return outcome
        finally:
            self._epoch += 1
            self._outcomes[self._epoch] = outcome
            self._outcomes.pop(self._epoch - 8, None)
            self._step = None
            # slow before release so the first start after the step is spaced with the new backoff
            self._limiter.slow()
            self._limiter.release()
            try:
                await asyncio.shield(bounded(page.minimise(), CLOSE_SECONDS, "minimise"))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("human step: could not minimise the page", exc_info=True)
            finally:
                if op is not None:
                    op.running()

    async def _poll_until_clear(self, step: _Step) -> StepOutcome:
        deadline = self._clock.monotonic() + self._timeout
        clear_in_a_row = 0
        while True:
            if step.resume.is_set():
                return StepOutcome.RESUMED
            try:
                state = await bounded(step.page.inspect(), CALL_SECONDS, "inspect the page")
            except Exception:  # a page mid-navigation cannot be read: not clear, look again
                log.debug("human step: inspect failed", exc_info=True)
                state = PageState(PageKind.CHALLENGE, ready=False)
            if state.error is not None:
                raise state.error
            clear_in_a_row = clear_in_a_row + 1 if state.clear else 0
            if clear_in_a_row >= self._clear_checks:
                return StepOutcome.CLEARED
            if step.resume.is_set():
                return StepOutcome.RESUMED
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                return StepOutcome.TIMED_OUT
            await event_or_timeout(self._clock, step.resume, min(self._poll, remaining))
