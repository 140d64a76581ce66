"""Deadlines for awaits on the browser (docs/reliability.md): a Playwright or CDP call that never
answers (a tab that never closes, a frame that never reports) must not hold an operation. Calls
that take no timeout of their own go through `bounded`, which raises `BrowserStalled` when the
browser has not answered in time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from cnki_mcp.site._pw import error_type

if TYPE_CHECKING:
    from playwright.async_api import Page

T = TypeVar("T")

# Seconds a browser call without a timeout of its own may take (a tab closing, a DOM snapshot, a
# CDP command). Navigations and fetches keep their own 30 s timeouts; these are a few seconds more.
CLOSE_SECONDS = 10.0
CALL_SECONDS = 35.0


class BrowserStalled(Exception):
    """The browser did not answer `what` within `seconds`."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"browser did not answer {what} within {seconds:g} s")
        self.what = what
        self.seconds = seconds


async def bounded(awaitable: Awaitable[T], seconds: float, what: str) -> T:
    """Await `awaitable` for at most `seconds` (then it is cancelled and BrowserStalled raised)."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError as exc:
        raise BrowserStalled(what, seconds) from exc


async def close_tab(page: Page | None) -> None:
    """Close a tab, bounded: a tab that does not close in time is left to the browser."""
    if page is None:
        return
    with contextlib.suppress(error_type(), BrowserStalled):
        if not page.is_closed():
            await bounded(page.close(), CLOSE_SECONDS, "tab close")
