"""`login(force=true)` while account A is logged in (site-rules.md §2.6): the identity the site
shows at the start does not end the step, so the person can switch accounts. Once the person is
seen logged out (CNKI's login page, or a header without the login, in a tab loaded after the login
tab opened), logging in again ends the step, as the same account too; it waited its 20 minutes
(VERIFICATION_TIMEOUT), every other request held behind the step. A tab still showing the old
login from before the logout does not end it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import IdentityKind
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.login import LoginFlow
from cnki_mcp.site.pages import LOAD_STATE_JS
from tests.login_fakes import HostChores, NoLimit, TabChores

ENDPOINTS = Endpoints(Settings(data_dir=Path("unused")))
LOGIN = "https://login.cnki.net/login/?ReturnURL=https://kns.cnki.net/kns8s/AdvSearch"


ENTRY = "<a href='/login/'>登录</a>"


def header(name: str | None) -> str:
    """`name` logged in (its badge); None: nobody (the 登录 entry); "bare:<name>": a header that
    shows the account with a bare 退出 and no badge (other CNKI pages' headers)."""
    if name is None:
        who = ENTRY
    elif name.startswith("bare:"):
        who = f"<span>{name[5:]}</span><a>退出</a>"
    else:
        who = (
            f"<div class='ecp_header_personalName_loginbg'><div class='ecp_header_personalName' title='{name}'>"
            f"{name}</div></div><a>退出登录</a>"
        )
    return f"<html><body><div class='ecp_header_login_area'>{who}</div></body></html>"


@dataclass
class Tab(TabChores):
    """A tab the person moves: `moves` = [(fake monotonic second, url, account shown)]; each move
    loads a new document (its timeOrigin is that second, in ms on the browser's clock)."""

    clock: FakeClock
    moves: list[tuple[float, str, str | None]]
    closed: bool = False
    # {move's second: seconds}: that page's header shows the 登录 entry until its script draws
    # the badge, after load and without jQuery
    late: dict[float, float] = field(default_factory=dict)

    def _now(self) -> tuple[float, str, str | None]:
        t = self.clock.monotonic()
        return [m for m in self.moves if m[0] <= t][-1]

    @property
    def url(self) -> str:
        return self._now()[1]

    async def goto(self, url: str, **_kwargs: Any) -> None:
        return None  # the product's navigations are in `moves` already

    async def evaluate(self, script: str, *_args: Any) -> Any:
        if script == LOAD_STATE_JS:
            return {"complete": True, "pending": False}
        if "querySelectorAll" in script:  # the visible 登录 entry's href, else None
            return LOGIN if ENTRY in await self.content() else None
        if "timeOrigin +" in script:
            return self.clock.monotonic() * 1000
        if "timeOrigin" in script:
            return self._now()[0] * 1000
        return (self.clock.monotonic() - self._now()[0]) * 1000  # performance.now()

    async def content(self) -> str:
        at, _url, name = self._now()
        drawn = self.clock.monotonic() >= at + self.late.get(at, 0.0)
        return header(name if drawn else None)



@dataclass
class Host(HostChores):
    login_tab: Tab
    pages: list[Tab] = field(default_factory=list)

    async def new_page(self) -> Tab:
        self.pages.append(self.login_tab)
        return self.login_tab


ADV = ENDPOINTS.adv_search


@pytest.mark.parametrize(
    ("again", "other_tab"),
    [("alice", False), ("bob", False), ("bob", True)],
    ids=["same-account-again", "another-account", "another-account-in-a-new-tab"],
)
async def test_a_forced_login_ends_when_the_person_logs_out_and_in_again(again: str, other_tab: bool) -> None:
    clock = FakeClock()
    start = clock.monotonic()
    opened = [(start + 1, ADV, "alice")]  # the product's login tab: AdvSearch shows alice
    person = [(start + 30, ADV, None), (start + 40, LOGIN, None), (start + 90, ADV, again)]
    login_tab = Tab(clock, [(start, "about:blank", None), *opened, *([] if other_tab else person)])
    host = Host(login_tab)
    if other_tab:  # the person logs out and in on a tab of their own; the login tab still shows alice
        host.pages.append(Tab(clock, [(start, ADV, "alice"), *person]))
    gate = HumanGate(clock, Limiter(clock, 0.5, 6))
    flow = LoginFlow(host, ENDPOINTS, NoLimit(), gate, clock)  # type: ignore[arg-type]

    async def run() -> Any:
        await clock.advance(1)  # the login tab's AdvSearch loads
        return await flow.run(None, None, force=True)

    (identity,) = await clock.run_until_complete(run())

    assert identity.personal is IdentityKind.AUTHENTICATED and identity.personal_name == again
    assert not gate.active


@pytest.mark.parametrize("shown", ["late", "bare"])
async def test_a_forced_login_is_not_ended_by_the_old_account_on_a_page_that_only_looked_logged_out(
    shown: str,
) -> None:
    """The person opens CNKI pages still logged in as alice: one whose badge is drawn after load
    without jQuery (read once, it looks logged out), or one whose header has a bare 退出 and no
    badge. Neither is a logout, so the next page showing alice does not end the step; the person
    then logs out and in as bob, and the step ends as bob."""
    clock = FakeClock()
    start = clock.monotonic()
    login_tab = Tab(clock, [(start, "about:blank", None), (start + 1, ADV, "alice")])
    host = Host(login_tab)
    looked = "alice" if shown == "late" else "bare:alice"
    moves = [(start, ADV, "alice"), (start + 30, ADV, looked), (start + 40, ADV, "alice")]
    moves += [(start + 60, ADV, None), (start + 70, LOGIN, None), (start + 90, ADV, "bob")]
    host.pages.append(Tab(clock, moves, late={start + 30: 1.9} if shown == "late" else {}))
    gate = HumanGate(clock, Limiter(clock, 0.5, 6))
    flow = LoginFlow(host, ENDPOINTS, NoLimit(), gate, clock)  # type: ignore[arg-type]

    async def run() -> Any:
        await clock.advance(1)
        return await flow.run(None, None, force=True)

    (identity,) = await clock.run_until_complete(run())

    assert identity.personal_name == "bob"
