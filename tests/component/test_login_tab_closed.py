"""A `login` whose tab the person closes (site-rules.md §2.6): the step ends, as a slider's or a
download's login step does when its tab is closed, and `login` reports who the site shows now,
read on a tab of its own. It waited the gate's 20 minutes (VERIFICATION_TIMEOUT), holding every
request of every other operation behind the step all that time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import IdentityKind
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.login import LoginFlow
from cnki_mcp.site.pages import LOAD_STATE_JS
from tests.login_fakes import HostChores, NoLimit

ENDPOINTS = Endpoints(Settings(data_dir=Path("unused")))
ANONYMOUS = "<html><body><div class='ecp_header_login_area'><a href='/login/'>登录</a></div></body></html>"


@dataclass
class Tab:
    """A tab showing CNKI's anonymous header; `closes_at` (fake monotonic time): the person closes it."""

    clock: FakeClock
    closes_at: float | None = None
    visited: list[str] = field(default_factory=list)
    closed_by_product: bool = False

    @property
    def url(self) -> str:
        return self.visited[-1] if self.visited else "about:blank"

    async def goto(self, url: str, **_kwargs: Any) -> None:
        self.visited.append(url)

    async def evaluate(self, script: str, *_args: Any) -> Any:
        if script == LOAD_STATE_JS:
            return {"complete": True, "pending": False}
        return None if "querySelectorAll" in script else 1.0  # no login entry; the browser's clock

    async def content(self) -> str:
        return ANONYMOUS

    def is_closed(self) -> bool:
        return self.closed_by_product or (self.closes_at is not None and self.clock.monotonic() >= self.closes_at)

    async def close(self) -> None:
        self.closed_by_product = True


@dataclass
class Host(HostChores):
    clock: FakeClock
    closes_at: float
    pages: list[Tab] = field(default_factory=list)

    async def new_page(self) -> Tab:
        tab = Tab(self.clock, self.closes_at if not self.pages else None)
        self.pages.append(tab)
        return tab


async def test_a_login_tab_the_person_closes_ends_the_login_with_who_the_site_shows_now() -> None:
    clock = FakeClock()
    host = Host(clock, closes_at=clock.monotonic() + 30)
    gate = HumanGate(clock, Limiter(clock, 0.5, 6))
    login = LoginFlow(host, ENDPOINTS, NoLimit(), gate, clock)  # type: ignore[arg-type]

    (identity,) = await clock.run_until_complete(login.run(None, None))

    assert identity.personal is not IdentityKind.AUTHENTICATED and identity.institutions == []
    assert not gate.active
    _login_tab, read_on = host.pages  # the login tab, then a tab of its own to read the site now
    assert read_on.visited == [ENDPOINTS.adv_search] and read_on.closed_by_product


class Op:
    operation_id = "op_login1"

    def __init__(self) -> None:
        self.messages: list[str] = []

    def awaiting_user(self, message: str) -> None:
        self.messages.append(message)

    def running(self) -> None:
        return None


async def test_a_headless_login_tells_to_cancel_it_not_to_use_the_login_tool() -> None:
    """Headless, the login tool's step said "…用 login 工具登录…" (the shared headless login text):
    this very call, which no person can complete without a window, while it holds every other
    operation's requests for 20 minutes. Its message names itself and says to cancel it."""
    from cnki_mcp.site.human import HEADLESS_MESSAGES

    clock = FakeClock()
    host = Host(clock, closes_at=clock.monotonic() + 30)
    gate = HumanGate(clock, Limiter(clock, 0.5, 6), headless=True)
    login = LoginFlow(host, ENDPOINTS, NoLimit(), gate, clock)  # type: ignore[arg-type]
    op = Op()

    await clock.run_until_complete(login.run(None, op))  # type: ignore[arg-type]

    (message,) = op.messages
    assert message != HEADLESS_MESSAGES["login"]
    assert "cancel" in message and "op_login1" in message
