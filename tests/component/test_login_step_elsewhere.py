"""A login step whose page leaves CNKI's hosts (site-rules.md §2.6): CARSI / 高校统一身份认证 sends
the tab from CNKI's login page to a WAYF page and the university's identity provider, which sends
it back to CNKI once the person logged in. The step waits for that; it ended as soon as the tab
left CNKI (the page read as clear), and the tab was closed under the person typing their password.
A page merely looked at for a login page (a download's order tab) is judged as before."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints
from cnki_mcp.site.human import HumanGate, PageKind, StepOutcome
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.pages import INSPECT_JS, PlaywrightHumanPage

LOGIN_PAGE = "https://login.cnki.net/login/?ReturnURL=https://kns.cnki.net/kcms2/article/abstract?v=x"
WAYF = "https://ds.carsi.edu.cn/?entityID=https%3A%2F%2Ffsso.cnki.net%2Fshibboleth"
IDP = "https://idp.example.edu.cn/idp/profile/SAML2/Redirect/SSO?execution=e1s1"
BACK = "https://kns.cnki.net/kcms2/article/abstract?v=x"


@dataclass
class FakeTab:
    """A tab whose location the test moves; `password`: the page shows a password box."""

    urls: list[tuple[str, bool]]
    inspected: int = 0
    closed: bool = False

    @property
    def url(self) -> str:
        return self.urls[min(self.inspected, len(self.urls) - 1)][0]

    def is_closed(self) -> bool:
        return self.closed

    async def evaluate(self, script: str, *_args: Any) -> Any:
        if script != INSPECT_JS:
            return 1.0  # performance.timeOrigin
        url, password = self.urls[min(self.inspected, len(self.urls) - 1)]
        self.inspected += 1
        return {"challenge": None, "password": password, "loginFrame": False, "readyState": "complete", "url": url}


@dataclass
class FakeHost:
    pages: list[Any] = field(default_factory=list)
    shown: int = 0

    def verify_exits(self, since: int = 0) -> list[Any]:
        return []

    async def ensure(self) -> Any:
        return self

    async def show(self, _page: Any) -> None:
        self.shown += 1

    async def minimise(self, _page: Any) -> None:
        return None


ENDPOINTS = Endpoints(Settings(data_dir=Path("unused")))


def human(tab: FakeTab, *, in_step: bool) -> PlaywrightHumanPage:
    host = FakeHost(pages=[tab])
    return PlaywrightHumanPage(host, tab, ENDPOINTS, "login", in_step=in_step)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "password", "in_step", "kind"),
    [
        (WAYF, False, True, PageKind.LOGIN),  # the CARSI institution list: no password box
        (IDP, True, True, PageKind.LOGIN),  # the university's own login page
        ("http://idp.example.edu.cn/cas/login", True, True, PageKind.LOGIN),
        (BACK, False, True, PageKind.CLEAR),  # back on CNKI: logged in
        ("about:blank", False, True, PageKind.CLEAR),
        ("chrome-error://chromewebdata/", False, True, PageKind.CLEAR),
        (IDP, True, False, PageKind.CLEAR),  # a tab looked at for a login page, not a step's
    ],
    ids=["wayf", "idp", "idp_http", "back_on_cnki", "blank", "browser_error", "not_a_step"],
)
async def test_a_login_steps_page_off_cnki_is_the_person_still_logging_in(
    url: str, password: bool, in_step: bool, kind: PageKind
) -> None:
    state = await human(FakeTab([(url, password)]), in_step=in_step).inspect()
    assert state.kind is kind


async def test_a_carsi_login_ends_the_step_only_when_the_tab_is_back_on_cnki() -> None:
    clock = FakeClock()
    gate = HumanGate(clock, Limiter(clock, 0.5, 6))
    tab = FakeTab([(LOGIN_PAGE, True), (WAYF, False), (WAYF, False), (IDP, True), (IDP, True), (BACK, False)])
    [outcome] = await clock.run_until_complete(gate.handle("login", human(tab, in_step=True), None, "wait"))
    assert outcome is StepOutcome.CLEARED
    assert tab.inspected == 7  # two clear looks in a row, both back on CNKI
    assert not tab.closed


WEBVPN = "https://webvpn.example.edu.cn/https/77726476706e69737468656265737421fbf952d2243e635930068cb8/kns8s/defaultresult/index"


async def test_a_login_step_whose_page_shows_cnki_through_a_library_proxy_ends_with_a_typed_error() -> None:
    # the person logged in through WebVPN: the tab never comes back to cnki.net, and the step held
    # every request for its 20 minutes, then said VERIFICATION_TIMEOUT
    clock = FakeClock()
    gate = HumanGate(clock, Limiter(clock, 0.5, 6))
    tab = FakeTab([(LOGIN_PAGE, True), (IDP, True), (WEBVPN, False)])
    with pytest.raises(CnkiError) as ended:
        await clock.run_until_complete(gate.handle("login", human(tab, in_step=True), None, "wait"))
    assert ended.value.code == "REMOTE_ACCESS_UNSUPPORTED"
    assert ended.value.details["proxy_host"] == "webvpn.example.edu.cn"
    assert clock.monotonic() - 1_000.0 < 60  # ended at the proxied page, not after the step's timeout


def test_cnkis_own_host_over_http_is_not_a_proxy() -> None:
    assert ENDPOINTS.proxied_host("http://kns.cnki.net/kcms2/article/abstract?v=x") is None
    assert ENDPOINTS.proxied_host(WEBVPN) == "webvpn.example.edu.cn"
