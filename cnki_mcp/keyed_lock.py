"""One asyncio lock per key (a paper, a list page): work that two clients ask for at once runs
once, and the second caller then finds the first one's result where it was kept (the body cache,
the archived download, the stored page) instead of asking CNKI again.

A key's lock exists only while someone holds it or waits for it, so the map does not grow with
the number of papers ever read and no lock outlives the event loop it was used on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class KeyedLocks:
    """`async with locks.hold(key):` — one holder per key at a time, first come first served."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            left = self._users[key] - 1
            if left:
                self._users[key] = left
            else:
                del self._users[key]
                del self._locks[key]

    def busy(self, key: str) -> bool:
        """Someone holds or waits for `key` (tests, diagnostics)."""
        return key in self._locks

    def __len__(self) -> int:
        return len(self._locks)
