"""What `session_status` remembers once a person got past a login page an operation met
(session_identity.py `login_step_over`, site/pages.py `identity_since_shown`): the header of a CNKI
tab loaded after the login page was shown, dated when it loaded; a tab loaded before it (an old page
still showing a login the site dropped) and login pages prove nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import IdentityKind
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints
from cnki_mcp.site.pages import PlaywrightHumanPage

ENDPOINTS = Endpoints(Settings(data_dir=Path("unused")))
LOGGED_IN = (
    "<html><body><div class='ecp_header_login_area'><div class='ecp_header_personalName_loginbg'>"
    "<div class='ecp_header_personalName' title='bob'>bob</div></div></div></body></html>"
)


@dataclass
class Tab:
    url: str
    origin: float  # performance.timeOrigin
    html: str = LOGGED_IN

    def is_closed(self) -> bool:
        return False

    async def evaluate(self, script: str, *_args: Any) -> Any:
        return self.origin if "timeOrigin" in script else 2000.0  # performance.now(): 2 s old

    async def content(self) -> str:
        return self.html


@dataclass
class Host:
    pages: list[Tab] = field(default_factory=list)

    async def ensure(self) -> Host:
        return self

    def verify_exits(self, since: int = 0) -> list[Any]:
        return []


async def test_the_header_of_a_tab_loaded_after_the_login_page_is_the_identity_after_the_step() -> None:
    clock = FakeClock()
    login = Tab("https://login.cnki.net/login/?ReturnURL=x", origin=100.0)
    old = Tab(ENDPOINTS.adv_search, origin=50.0)  # loaded before the login page: proves nothing
    back = Tab("https://kns.cnki.net/kcms2/article/abstract?v=x", origin=150.0)
    human = PlaywrightHumanPage(Host([old, login]), login, ENDPOINTS, "login", shown_since=100.0)  # type: ignore[arg-type]
    assert await human.identity_since_shown(clock) is None

    human.host.pages.append(back)  # type: ignore[attr-defined]
    found = await human.identity_since_shown(clock)
    assert found is not None and found.personal is IdentityKind.AUTHENTICATED and found.personal_name == "bob"
    assert found.observed_at is not None and (clock.now() - found.observed_at).total_seconds() == 2.0
