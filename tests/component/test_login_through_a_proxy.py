"""`login` when CNKI is reached through a library proxy (site-rules.md §2.6): WebVPN and EZproxy
serve CNKI's pages under the university's host, and every request of the product goes to cnki.net
itself, outside the proxy. A login tab showing CNKI under such a host ends the step with
REMOTE_ACCESS_UNSUPPORTED (saying what works instead); it waited 20 minutes for `resume`, then
read cnki.net directly, found nobody and advised logging in again. A remote-access URL that is
itself a proxied CNKI page is refused before anything is opened."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.login import LoginFlow
from tests.login_fakes import HostChores, NoLimit, TabChores

ENDPOINTS = Endpoints(Settings(data_dir=Path("unused")))
WEBVPN = "https://webvpn.example.edu.cn/https/77726476706e69737468656265737421fbf952d2243e635930068cb8/kns8s/AdvSearch"
EZPROXY = "https://kns-cnki-net-s.libproxy.example.edu.cn/kns8s/AdvSearch?classid=YSTT4HG0"
EZPROXY_SUFFIX = "https://kns.cnki.net.ezproxy.example.edu.cn/kcms2/article/abstract?v=x"


@pytest.mark.parametrize(
    ("url", "proxy"),
    [
        (WEBVPN, "webvpn.example.edu.cn"),
        (EZPROXY, "kns-cnki-net-s.libproxy.example.edu.cn"),
        (EZPROXY_SUFFIX, "kns.cnki.net.ezproxy.example.edu.cn"),
        ("https://kns.cnki.net/kns8s/AdvSearch", None),  # CNKI itself
        ("https://fsso.cnki.net/Shibboleth.sso/SAML2/POST", None),
        ("https://ds.carsi.edu.cn/?entityID=https%3A%2F%2Ffsso.cnki.net%2Fkns8s%2F", None),  # CARSI's WAYF
        ("https://idp.example.edu.cn/idp/profile/SAML2/Redirect/SSO", None),
        ("https://webvpn.example.edu.cn/login", None),  # the proxy's own login page
        ("about:blank", None),
    ],
)
def test_a_cnki_page_under_a_proxy_host_is_told_from_cnki_and_identity_providers(url: str, proxy: str | None) -> None:
    assert ENDPOINTS.proxied_host(url) == proxy


@dataclass
class Tab(TabChores):
    """A tab the person moves: at `moves_at` (fake monotonic time) it goes to `then`."""

    clock: FakeClock
    then: str | None = None
    moves_at: float = 0.0
    first: str = "about:blank"
    visited: list[str] = field(default_factory=list)
    closed: bool = False

    @property
    def url(self) -> str:
        if self.then is not None and self.clock.monotonic() >= self.moves_at:
            return self.then
        return self.visited[-1] if self.visited else self.first

    async def goto(self, url: str, **_kwargs: Any) -> None:
        self.visited.append(url)

    async def evaluate(self, _script: str, *_args: Any) -> Any:
        return None if "querySelectorAll" in _script else 1.0  # no login entry; the browser's clock

    async def content(self) -> str:
        return "<html><body><div class='ecp_header_login_area'>登录</div></body></html>"



@dataclass
class Host(HostChores):
    tab: Tab
    pages: list[Tab] = field(default_factory=list)

    async def new_page(self) -> Tab:
        self.pages.append(self.tab)
        return self.tab


def flow(clock: FakeClock, tab: Tab) -> tuple[LoginFlow, HumanGate]:
    gate = HumanGate(clock, Limiter(clock, 0.5, 6))
    return LoginFlow(Host(tab), ENDPOINTS, NoLimit(), gate, clock), gate  # type: ignore[arg-type]


@pytest.mark.parametrize("proxied", [WEBVPN, EZPROXY], ids=["webvpn", "ezproxy"])
async def test_a_login_tab_showing_cnki_under_a_proxy_ends_the_login_with_a_typed_error(proxied: str) -> None:
    clock = FakeClock()
    tab = Tab(clock, then=proxied, moves_at=clock.monotonic() + 30)
    login, gate = flow(clock, tab)
    with pytest.raises(CnkiError) as info:
        await clock.run_until_complete(login.run(None, None, remote_access_url="https://webvpn.example.edu.cn/"))
    assert info.value.code == "REMOTE_ACCESS_UNSUPPORTED" and not info.value.retryable
    assert info.value.details["proxy_host"] == proxied.split("/")[2]
    assert not gate.active and tab.closed


async def test_a_remote_access_url_that_is_a_proxied_cnki_page_is_refused_before_anything_opens() -> None:
    clock = FakeClock()
    tab = Tab(clock)
    login, gate = flow(clock, tab)
    with pytest.raises(CnkiError) as info:
        await clock.run_until_complete(login.run(None, None, remote_access_url=EZPROXY))
    assert info.value.code == "REMOTE_ACCESS_UNSUPPORTED"
    assert tab.visited == [] and gate.epoch == 0  # nothing navigated, nobody asked
