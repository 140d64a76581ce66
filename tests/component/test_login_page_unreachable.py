"""The `login` tool's page when CNKI cannot be reached for a cause the person must end (DESIGN.md "The
network path"): the proxy down, TLS under a captive portal. It is SITE_UNAVAILABLE with its
`network_cause` at once, not retryable, and no step opens. A TLS failure opened the login step on
Chromium's error page for its 20 minutes (every other operation's requests held), and a proxy down
was "无法打开登录页…请检查地址、网络或 VPN", retryable, with no cause."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.login import LoginFlow
from tests.login_fakes import HostChores, NoLimit, TabChores

ENDPOINTS = Endpoints(Settings(data_dir=Path("unused")))


@dataclass
class Tab(TabChores):
    failure: str
    closed: bool = False

    url: str = "about:blank"

    async def goto(self, url: str, **_kwargs: Any) -> None:
        raise PlaywrightError(f"Page.goto: {self.failure} at {url}")

    async def evaluate(self, _script: str, *_args: Any) -> Any:
        return None



@dataclass
class Host(HostChores):
    failure: str
    pages: list[Tab] = field(default_factory=list)

    def tabs(self) -> list[Tab]:
        return list(self.pages)

    async def new_page(self) -> Tab:
        self.pages.append(Tab(self.failure))
        return self.pages[-1]


@pytest.mark.parametrize(
    ("failure", "cause"),
    [("net::ERR_CERT_AUTHORITY_INVALID", "tls"), ("net::ERR_PROXY_CONNECTION_FAILED", "proxy_down")],
)
async def test_a_login_page_the_network_path_refuses_ends_at_once_naming_the_cause(failure: str, cause: str) -> None:
    clock = FakeClock()
    gate = HumanGate(clock, Limiter(clock, 0.5, 6), timeout=60)
    login = LoginFlow(Host(failure), ENDPOINTS, NoLimit(), gate, clock)  # type: ignore[arg-type]
    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(login.run(None, None))
    error = info.value
    assert (error.details.get("network_cause"), error.retryable) == (cause, False)
