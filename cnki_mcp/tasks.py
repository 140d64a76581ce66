"""Running coroutines together: `all_done` waits for every one of them and raises the first
failure once all have stopped. Imports nothing internal (docs/DESIGN.md "Dependency rules")."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable


async def all_done(tasks: Iterable[Awaitable[None]]) -> None:
    """Run `tasks` together (lookup workers, batches); the first failure, in the order given, is
    raised once all have stopped, so none is left running behind the error."""
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, BaseException):
            raise outcome
