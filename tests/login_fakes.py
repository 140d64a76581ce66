"""What a fake browser host and limiter of the login flow's component tests share
(`site/login.py` `LoginFlow` calls these and nothing else on them)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any


class HostChores:
    """The host's calls a fake login host answers with nothing: no browser, no window."""

    async def ensure(self) -> Any:
        return self

    async def save_cookies(self) -> int:
        return 0

    def note_error(self, _exc: BaseException) -> bool:
        return False

    async def show(self, _page: Any) -> None:
        return None

    async def minimise(self, _page: Any) -> None:
        return None

    def verify_exits(self, since: int = 0) -> list[Any]:
        return []


class TabChores:
    """A fake tab's open/closed state (`closed`, a field of the tab's dataclass)."""

    closed: bool

    def is_closed(self) -> bool:
        return self.closed

    async def close(self) -> None:
        self.closed = True


class NoLimit:
    """A limiter that never waits."""

    @contextlib.asynccontextmanager
    async def slot(self, **_kwargs: Any) -> AsyncIterator[None]:
        yield
