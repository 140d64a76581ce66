"""The work tab's lease (DESIGN.md "The shared search page"). Every channel's grid page is an in-page
fetch of the one search page; navigating that page (a template capture, a slider shown in it, a
browser recovery) destroys the fetches in flight there. A fetch holds the lease shared; a navigation
holds it exclusive: it waits until the fetches in flight have answered, and no new one starts until
it is done. A waiting navigation goes before fetches that arrive after it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


class PageLease:
    """A readers-writer lease, writer first. Releasing never awaits (safe on cancellation)."""

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._changed = asyncio.Event()

    @property
    def readers(self) -> int:
        return self._readers

    @property
    def exclusive_held(self) -> bool:
        return self._writer

    @property
    def exclusive_busy(self) -> bool:
        """`exclusive()` would wait now."""
        return self._writer or self._readers > 0

    @property
    def shared_busy(self) -> bool:
        """`shared()` would wait now."""
        return self._writer or self._writers_waiting > 0

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            await self._changed.wait()

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        """An in-page request: after any navigation waiting or under way."""
        await self._until(lambda: not self._writer and self._writers_waiting == 0)
        self._readers += 1
        try:
            yield
        finally:
            self._readers -= 1
            self._notify()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """A navigation of the page: once nothing else uses it, and alone."""
        self._writers_waiting += 1
        try:
            await self._until(lambda: not self._writer and self._readers == 0)
        except BaseException:
            self._writers_waiting -= 1
            self._notify()
            raise
        self._writers_waiting -= 1
        self._writer = True
        try:
            yield
        finally:
            self._writer = False
            self._notify()
