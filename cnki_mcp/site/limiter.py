"""The one request limiter: every CNKI request charges its operation's budget, waits while the
limiter is held (a human step), then waits for its turn: a start time spaced by interval x
backoff and a free in-flight slot. Turns go first to the operation served least recently, then
by `Priority`, first come first served within one (DESIGN.md "Request priorities"); `slow()` after 429/5xx/verification, `fast()` after a success.
Nothing else in the program sleeps between requests."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import statistics
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from cnki_mcp.clock import Clock
from cnki_mcp.site.backend import Pacing

MIN_BACKOFF = 1.0
MAX_BACKOFF = 8.0
LATENCY_SAMPLES = 9  # timed requests whose median is the pacing's latency


class Priority(IntEnum):
    """Whose turn comes first when several requests wait (lower first). A request others wait on
    goes before one nothing waits on, so a channel's page chain, the longest dependent run of a
    search, is never queued behind reads that could go at any time."""

    CHAIN = 0  # a grid page (the capture click included): the next page needs its cursor
    BATCH = 1  # a batch export: the enrichment's next decision needs its abstracts
    NORMAL = 2  # a detail, journal or any other page


@dataclass(order=True, slots=True)
class _Ticket:
    priority: int
    seq: int
    turn: asyncio.Event = field(compare=False, default_factory=asyncio.Event)
    group: int | None = field(compare=False, default=None)  # the operation: id() of its budget


SERVED_KEPT = 256  # operations whose last turn is remembered; a forgotten one is served as new


class Chargeable(Protocol):
    """An operation's budget as the limiter sees it: `charge()` counts one request or raises
    BudgetExhausted (the limiter lets that propagate before taking anything)."""

    def charge(self) -> None: ...


# What a hold does for a request that has to wait it out (`hold(waiter=...)`): the human gate
# marks the request's operation as waiting for the person while it waits (DESIGN.md "Runtime rules").
HoldWaiter = Callable[[Chargeable], AbstractAsyncContextManager[None]]


def min_start_gap(starts: Sequence[float]) -> float:
    """Smallest gap between consecutive request starts (inf with fewer than two starts)."""
    ordered = sorted(starts)
    if len(ordered) < 2:
        return math.inf
    return min(b - a for a, b in itertools.pairwise(ordered))


class Limiter:
    """Spacing between request starts, a cap on requests in flight, backoff and hold/release.

    Invariants:
    - The waiters form one queue per operation (the budget they charge; requests without one form
      one group), each ordered by (priority, arrival). The head is the head of the operation whose
      last start is the oldest (one never served first, by arrival): operations take the starts in
      turn, so a short call's request waits for at most one start of each other operation
      waiting, never for a long search's whole chain. Only the head may start, and only
      one waiter at a time sleeps towards the next start time; it records `_last_start` only
      after it actually woke, so two starts are never closer than the spacing in force when the
      later one started. A waiter that wakes behind a newer, more urgent head hands it the turn:
      the head starts at that same instant.
    - The head starts only with an in-flight slot free; a waiter holds no slot, so a queued read
      never keeps a more urgent request from the next free slot.
    - A cancelled waiter holds no reservation: the next head simply inherits the same start time.
    - A slot is counted only after the budget was charged and the hold was passed, and it is
      returned on every exit path.
    """

    def __init__(self, clock: Clock, interval_s: float, max_inflight: int) -> None:
        if interval_s < 0:
            raise ValueError("interval_s must be >= 0")
        if max_inflight < 1:
            raise ValueError("max_inflight must be >= 1")
        self._clock = clock
        self._interval = float(interval_s)
        self._max_inflight = max_inflight
        self._backoff = MIN_BACKOFF
        self._last_start: float | None = None
        self._not_before: float = -math.inf  # set by release(): no start before this instant
        # asyncio primitives bind to the running loop lazily, so building them here is safe.
        self._queues: dict[int | None, list[_Ticket]] = {}  # a heap per operation with waiters
        self._served: dict[int | None, int] = {}  # operation -> `_started` at its last start
        self._seq = itertools.count()
        self._sleeping = False  # a waiter sleeps towards the next start time
        self._open = asyncio.Event()
        self._open.set()
        self._holds = 0
        self._hold_waiter: HoldWaiter | None = None
        self._inflight = 0
        self._peak_inflight = 0
        self._started = 0
        self._waiting = 0
        self._latencies: deque[float] = deque(maxlen=LATENCY_SAMPLES)

    # --- introspection ----------------------------------------------------------------

    @property
    def interval(self) -> float:
        return self._interval

    @property
    def max_inflight(self) -> int:
        return self._max_inflight

    @property
    def backoff(self) -> float:
        return self._backoff

    @property
    def spacing(self) -> float:
        """Current gap between starts: interval x backoff."""
        return self._interval * self._backoff

    @property
    def held(self) -> bool:
        return self._holds > 0

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def peak_inflight(self) -> int:
        return self._peak_inflight

    @property
    def started(self) -> int:
        """How many requests have started since the limiter was built."""
        return self._started

    @property
    def waiting(self) -> int:
        """Requests that charged their budget but have not started yet."""
        return self._waiting

    @property
    def last_start(self) -> float | None:
        return self._last_start

    def note_latency(self, seconds: float) -> None:
        """One answered request's time from its start to its answer (the site notes its grid
        pages'), a sample of `pacing()`'s latency."""
        self._latencies.append(seconds)

    def pacing(self) -> Pacing | None:
        """The spacing in force and the median latency of the last `LATENCY_SAMPLES` noted
        (`note_latency`); None before any was noted."""
        if not self._latencies:
            return None
        return Pacing(self.spacing, statistics.median(self._latencies))

    def snapshot(self) -> dict[str, float | int | bool | None]:
        """Diagnostics view (monotonic times are the clock's own scale)."""
        return {
            "interval_seconds": self._interval,
            "backoff": self._backoff,
            "spacing_seconds": self.spacing,
            "max_inflight": self._max_inflight,
            "inflight": self._inflight,
            "peak_inflight": self._peak_inflight,
            "held": self.held,
            "started": self._started,
            "waiting": self._waiting,
        }

    # --- control ----------------------------------------------------------------------

    def slow(self) -> None:
        """After 429, 5xx or a human step: double the spacing (between 2x and 8x)."""
        self._backoff = min(MAX_BACKOFF, max(2.0, self._backoff * 2.0))

    def fast(self) -> None:
        """After a successful parse: shrink the spacing by 10% towards 1x."""
        self._backoff = max(MIN_BACKOFF, self._backoff * 0.9)

    def hold(self, waiter: HoldWaiter | None = None) -> None:
        """Block every request that has not started yet (nested holds need as many releases).
        `waiter`: entered around the wait of every request with a budget that meets the hold (the
        human gate: its operation waits for the person, not running)."""
        self._holds += 1
        if waiter is not None:
            self._hold_waiter = waiter
        self._open.clear()

    def release(self) -> None:
        """Undo one hold; when the last hold goes, requests resume and the next start is pushed to
        now + spacing, so the first request after a human step does not start at once."""
        if self._holds == 0:
            return
        self._holds -= 1
        if self._holds == 0:
            self._hold_waiter = None
            self._not_before = self._clock.monotonic() + self.spacing
            self._open.set()

    # --- the slot ---------------------------------------------------------------------

    @asynccontextmanager
    async def slot(
        self, budget: Chargeable | None = None, priority: Priority = Priority.NORMAL
    ) -> AsyncIterator[float]:
        """Charge `budget`, wait out a hold, then wait for the turn of `priority` (a start time and
        a free in-flight slot).

        Yields the start instant (clock.monotonic()). The slot is returned when the block exits.
        BudgetExhausted from `budget.charge()` propagates before anything is taken. A request the
        hold's waiter refuses (an on_verification=skip operation meeting another operation's human
        step: VerificationSkipped) is refused before it is charged: it is never sent."""
        self._waiting += 1
        try:
            await self._wait_open(budget, charge=True)
            start = await self._wait_turn(int(priority), budget)
        finally:
            self._waiting -= 1
        try:
            yield start
        finally:
            self._inflight -= 1
            self._wake_head()

    async def _wait_open(self, budget: Chargeable | None = None, *, charge: bool = False) -> None:
        """Wait out a hold; `charge`: charge `budget` first, or once the hold's waiter took the
        request in (a request it refuses is not charged)."""
        waiter = self._hold_waiter
        if self._holds == 0 or budget is None or waiter is None:
            if charge and budget is not None:
                budget.charge()
            while self._holds > 0:
                await self._open.wait()
            return
        async with waiter(budget):
            if charge:
                budget.charge()
            while self._holds > 0:
                await self._open.wait()

    def _head(self) -> _Ticket | None:
        """The next to start: the most urgent waiter of the operation served least recently."""
        best: _Ticket | None = None
        best_key: tuple[int, int] | None = None
        for group, queue in self._queues.items():
            key = (self._served.get(group, -1), queue[0].seq)
            if best_key is None or key < best_key:
                best, best_key = queue[0], key
        return best

    def _wake_head(self) -> None:
        head = self._head()
        if head is not None:
            head.turn.set()

    def _enqueue(self, ticket: _Ticket) -> None:
        heapq.heappush(self._queues.setdefault(ticket.group, []), ticket)

    def _dequeue(self, ticket: _Ticket) -> None:
        queue = self._queues.get(ticket.group)
        if queue is None or ticket not in queue:
            return
        queue.remove(ticket)
        if queue:
            heapq.heapify(queue)
        else:
            del self._queues[ticket.group]

    def _note_served(self, group: int | None) -> None:
        self._served.pop(group, None)  # re-inserted last: the dict is oldest first
        self._served[group] = self._started
        while len(self._served) > SERVED_KEPT:
            del self._served[next(iter(self._served))]

    async def _wait_turn(self, priority: int, budget: Chargeable | None = None) -> float:
        ticket = _Ticket(priority, next(self._seq), group=None if budget is None else id(budget))
        self._enqueue(ticket)
        # a more urgent ticket can make another operation the head (its own queue's earlier head
        # no longer ranks its group): wake whoever heads now, or after a hold nobody would start
        self._wake_head()
        try:
            while True:
                if self._head() is not ticket or self._sleeping or self._inflight >= self._max_inflight:
                    ticket.turn.clear()
                    await ticket.turn.wait()
                    continue
                if self._holds > 0:
                    # held after this waiter queued: no request starts during a human step
                    await self._wait_open(budget)
                    continue
                now = self._clock.monotonic()
                target = self._not_before
                if self._last_start is not None:
                    target = max(target, self._last_start + self.spacing)
                if now >= target:
                    self._dequeue(ticket)
                    self._last_start = now
                    self._started += 1
                    self._note_served(ticket.group)
                    self._inflight += 1
                    self._peak_inflight = max(self._peak_inflight, self._inflight)
                    self._wake_head()
                    return now
                # re-check after waking: slow(), hold(), release() or a more urgent head may have
                # come in meanwhile
                self._sleeping = True
                try:
                    await self._clock.sleep(target - now)
                finally:
                    self._sleeping = False
                    self._wake_head()
        except BaseException:
            self._dequeue(ticket)
            self._wake_head()
            raise
