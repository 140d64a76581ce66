"""Time as a dependency: the Clock protocol, the system clock and a fake clock for tests."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time (UTC), for timestamps that are stored or shown."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic scale, for spacing and timeouts."""
        ...

    async def sleep(self, seconds: float) -> None: ...


def local_year(now: datetime) -> int:
    """The year of `now` on this machine's clock, in its time zone: the year the person means by
    今年, 去年 or 近五年 (the UTC year is still the old one for eight hours after midnight on
    1 January in China, and already the new one on 31 December evening in California)."""
    return now.astimezone().year


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that only moves when told to (`advance`) or when every sleeper is waiting
    and `auto_advance` is on: then it jumps to the earliest wake-up time.

    Sleepers are woken in order of their deadline; `advance` yields to the loop after each
    wake-up so woken tasks run before later ones are released."""

    def __init__(self, start: float = 1_000.0, wall: datetime | None = None) -> None:
        self._t = start
        self._wall0 = wall or datetime(2026, 1, 1, tzinfo=UTC)
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        from datetime import timedelta

        return self._wall0 + timedelta(seconds=self._t - self._start)

    def monotonic(self) -> float:
        return self._t

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._t + seconds, next(self._seq), fut))
        try:
            await fut
        finally:
            if not fut.done():
                fut.cancel()

    @property
    def pending(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    @property
    def next_deadline(self) -> float | None:
        """The earliest wake-up time of a live sleeper (None when nobody sleeps)."""
        live = [d for d, _, f in self._sleepers if not f.done()]
        return min(live) if live else None

    async def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, waking every sleeper whose deadline passes."""
        target = self._t + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            if fut.done():
                continue
            self._t = max(self._t, deadline)
            fut.set_result(None)
            for _ in range(5):
                await asyncio.sleep(0)
        self._t = target
        for _ in range(5):
            await asyncio.sleep(0)

    async def advance_settled(self, seconds: float) -> None:
        """Like `advance`, but lets runnable tasks settle (register their sleeps) before and after
        each wake-up, so a chain of sleeps inside the window runs at its exact times."""
        target = self._t + seconds
        while True:
            for _ in range(20):
                await asyncio.sleep(0)
            nxt = self.next_deadline
            if nxt is None or nxt > target:
                break
            await self.advance(max(0.0, nxt - self._t))
        await self.advance(max(0.0, target - self._t))
        for _ in range(20):
            await asyncio.sleep(0)

    async def run_until_complete(self, *aws: Awaitable[Any], max_seconds: float = 1e6) -> list[Any]:
        """Run `aws` to completion, moving time only to the next sleeper's deadline, one at a time,
        so tasks finish at exactly the fake time they would in real life. Returns their results in
        order (the first exception propagates). Raises RuntimeError when the tasks are stuck on
        something other than the clock, or after `max_seconds` of fake time."""
        tasks = [asyncio.ensure_future(a) for a in aws]
        end = self._t + max_seconds
        try:
            while not all(t.done() for t in tasks):
                for _ in range(20):
                    await asyncio.sleep(0)
                    if all(t.done() for t in tasks):
                        break
                else:
                    if await _drain_ready():
                        continue  # work that needs more than 20 turns of the loop was still runnable
                    nxt = self.next_deadline
                    if nxt is None:
                        raise RuntimeError("deadlock: tasks wait on something other than the clock")
                    if nxt > end:
                        raise RuntimeError(f"tasks still running after {max_seconds} fake seconds")
                    await self.advance(max(0.0, nxt - self._t))
            return [t.result() for t in tasks]
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def run_until_idle(self, limit: float = 3600.0) -> None:
        """Advance to each next deadline until no sleeper is left (or `limit` seconds pass)."""
        end = self._t + limit
        while True:
            for _ in range(5):
                await asyncio.sleep(0)
            live = [(d, s, f) for d, s, f in self._sleepers if not f.done()]
            if not live:
                return
            nxt = min(d for d, _, _ in live)
            if nxt > end:
                return
            await self.advance(nxt - self._t)


async def _drain_ready(limit: int = 100_000) -> bool:
    """Yield while other callbacks are ready to run (CPython's loop keeps them in `_ready`); True
    when any was. Time must not move while work that needs no sleeper is still runnable."""
    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    if ready is None:
        return False
    spun = 0
    while ready and spun < limit:
        await asyncio.sleep(0)
        spun += 1
    return spun > 0


async def event_or_timeout(clock: Clock, event: asyncio.Event, seconds: float) -> bool:
    """Wait for `event` at most `seconds` on `clock`; True when the event fired."""
    if event.is_set():
        return True
    if seconds <= 0:
        return False
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiter, sleeper):
            if not task.done():
                task.cancel()
        await asyncio.gather(waiter, sleeper, return_exceptions=True)
    return event.is_set()
