"""A failure to reach CNKI that only the person can end (DESIGN.md "The network path"): the browser's
proxy down or wanting a login, TLS under a captive portal, a wrong clock, a firewall. Asked again
from the same computer it fails the same, as the CDN's refusal does: it is raised at the first
failure (no browser relaunch, no slow-answer retries) and `retryable` is false, so a search whose
first pages all failed so ends `failed`, not `partial` with `continue` offered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.settings import Settings
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter, Priority
from cnki_mcp.site.navigation import MAX_ATTEMPTS
from cnki_mcp.site.search_page import navigation_failure
from cnki_mcp.site.transport import PageChanged, TransportError, transport_unavailable

# final at once: asked again, they answer the same
PERSON_ENDS = [
    ("net::ERR_PROXY_AUTH_REQUESTED", "proxy_auth"),
    ("net::ERR_NO_SUPPORTED_PROXIES", "proxy_invalid"),  # --proxy-server with user:password: no cause before
    ("net::ERR_CERT_AUTHORITY_INVALID", "tls"),
    ("net::ERR_CERT_DATE_INVALID", "clock"),
    ("net::ERR_NETWORK_ACCESS_DENIED", "blocked"),
    # TLS errors that never clear in 4 s: were asked once more, a request and 4 s spent
    ("net::ERR_SSL_VERSION_OR_CIPHER_MISMATCH", "tls"),
    ("net::ERR_SSL_CLIENT_AUTH_CERT_NEEDED", "tls"),
    ("net::ERR_SSL_PINNED_KEY_NOT_IN_CERT_CHAIN", "tls"),
    ("net::ERR_SSL_OBSOLETE_VERSION_OR_CIPHER", "tls"),
]
# final too, but they can clear within seconds (a proxy app restarting, a proxy node failing one
# CONNECT, a TLS handshake reset on a flaky link): asked once more a few seconds later first
MAY_CLEAR = [
    ("net::ERR_PROXY_CONNECTION_FAILED", "proxy_down"),
    ("net::ERR_TUNNEL_CONNECTION_FAILED", "proxy_upstream"),  # the proxy is up: was proxy_down, "启动代理"
    ("net::ERR_SOCKS_CONNECTION_FAILED", "proxy_upstream"),
    ("net::ERR_SSL_PROTOCOL_ERROR", "tls"),
    ("net::ERR_SSL_BAD_RECORD_MAC_ALERT", "tls"),
]
PASSES_BY_ITSELF = [
    ("net::ERR_NAME_NOT_RESOLVED", "dns"),
    ("net::ERR_INTERNET_DISCONNECTED", "offline"),
    ("net::ERR_CONNECTION_RESET", "connection"),
    ("net::ERR_NETWORK_CHANGED", "network_changed"),
]


@pytest.mark.parametrize(
    ("failure", "cause", "retryable"),
    [(f, c, False) for f, c in PERSON_ENDS + MAY_CLEAR] + [(f, c, True) for f, c in PASSES_BY_ITSELF],
)
def test_a_failure_only_the_person_can_end_is_not_retryable(failure: str, cause: str, retryable: bool) -> None:
    text = f"Page.goto: {failure} at https://kns.cnki.net/kns8s/AdvSearch"
    for error in (navigation_failure(PlaywrightError(text)), transport_unavailable(TransportError(text))):
        assert (error.code, error.details.get("network_cause"), error.retryable) == ("SITE_UNAVAILABLE", cause, retryable)


class Host:
    generation = 1
    started = True

    def note_error(self, exc: BaseException) -> bool:
        return False

    def tab_lost(self, page: object, exc: BaseException) -> bool:
        return False

    def __init__(self, profile_dir: Path) -> None:
        self.recovered = 0
        self.profile_dir = profile_dir

    async def recover(self, generation: int) -> None:
        self.recovered += 1
        self.generation += 1

    def lost_since(self, generation: int) -> bool:
        return False


def a_site(tmp_path: Path) -> tuple[CnkiSite, Host, FakeClock]:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    host = Host(tmp_path)
    site = CnkiSite(Settings(data_dir=tmp_path), clock, host, limiter, HumanGate(clock, limiter))  # type: ignore[arg-type]
    return site, host, clock


GRID_URL = "https://kns.cnki.net/kns8s/brief/grid"


class Failed:
    def __init__(self, url: str, failure: str, post_data: str | None = None) -> None:
        self.url, self.failure, self.post_data = url, failure, post_data


class WorkTab:
    """The work tab an in-page grid fetch runs in: what page_scripts.FETCH_JS returns when the
    browser's network refuses (real Chromium with a dead proxy: `{'error': 'TypeError: Failed to
    fetch', 'status': 0}`, no net error in it), after the page's `requestfailed` event for the request
    named the net error, as Chromium does. From the `answer_from`-th ask on it answers."""

    def __init__(self, failure: str, answer_from: int = 0) -> None:
        self.failure, self.answer_from = failure, answer_from
        self.listeners: list[Callable[[Any], None]] = []
        self.asked = 0
        self.others: list[str] = []

    def is_closed(self) -> bool:
        return False

    def on(self, event: str, listener: Callable[[Any], None]) -> None:
        assert event == "requestfailed"
        self.listeners.append(listener)

    def remove_listener(self, event: str, listener: Callable[[Any], None]) -> None:
        self.listeners.remove(listener)

    async def evaluate(self, script: str, args: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        if self.answer_from and self.asked >= self.answer_from:
            return {"status": 200, "url": args["url"], "text": "<html>grid</html>"}
        for listener in list(self.listeners):
            listener(Failed(args["url"], self.failure, args["body"]))
            for other in self.others:  # another request in the tab, to the same URL, fails after it
                listener(Failed(args["url"], other, "a=2"))
        return {"error": "TypeError: Failed to fetch", "status": 0}


async def grid_fetch(site: CnkiSite, clock: FakeClock, tab: WorkTab) -> Any:
    async def detach() -> None:
        return None

    site._detach_loader = detach  # type: ignore[method-assign]
    fetch = lambda: site._page_fetch(tab, GRID_URL, "a=1", None, Priority.CHAIN)  # type: ignore[arg-type]  # noqa: E731
    return (await clock.run_until_complete(site._with_retries(fetch, None, on_transport="recover")))[0]


@pytest.mark.parametrize("failure", [f for f, _ in PERSON_ENDS])
async def test_a_grid_request_the_proxy_refuses_is_asked_once_without_a_new_browser(
    failure: str, tmp_path: Path
) -> None:
    """The in-page fetch's own error names no net error: the cause comes from the page's
    `requestfailed` event (without it the grid relaunched the browser and asked again)."""
    site, host, clock = a_site(tmp_path)
    tab = WorkTab(failure)
    with pytest.raises(SiteUnavailable) as info:
        await grid_fetch(site, clock, tab)
    assert (info.value.retryable, tab.asked, host.recovered) == (False, 1, 0)  # was: True, 2, 1
    assert tab.listeners == []


async def test_a_search_page_the_proxy_refuses_is_visited_once(tmp_path: Path) -> None:
    """navigation_failure's SITE_UNAVAILABLE went through the slow-answer retries: AdvSearch was
    visited three times, 2 s and 4 s apart, before the same error. (A proxy down may be a proxy app
    restarting: it gets one more visit, test_a_refused_path_that_may_clear_….)"""
    site, _host, clock = a_site(tmp_path)
    asked: list[int] = []

    async def attempt() -> None:
        asked.append(1)
        raise navigation_failure(PlaywrightError("Page.goto: net::ERR_PROXY_AUTH_REQUESTED at https://kns.cnki.net/kns8s/AdvSearch"))

    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site._with_retries(attempt, None, on_transport="recover"))
    assert (info.value.retryable, len(asked)) == (False, 1)


@pytest.mark.parametrize(("failure", "cause"), MAY_CLEAR)
async def test_a_refused_path_that_may_clear_is_asked_once_more_a_few_seconds_later(
    failure: str, cause: str, tmp_path: Path
) -> None:
    """A proxy app restarting closes its port for about a second: the search ended at the first
    refusal (retryable false). Now one more request follows 4 s later, through the limiter, with
    no new browser; failing again, it is final with its cause."""
    site, host, clock = a_site(tmp_path)
    asked: list[float] = []

    async def attempt() -> None:
        asked.append(clock.monotonic())
        raise navigation_failure(PlaywrightError(f"Page.goto: {failure} at https://kns.cnki.net/kns8s/AdvSearch"))

    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site._with_retries(attempt, None, on_transport="recover"))
    error = info.value
    assert (error.retryable, error.details["network_cause"], host.recovered) == (False, cause, 0)
    assert [later - asked[0] for later in asked] == [0.0, 4.0]  # was [0.0]


async def test_a_grid_request_meeting_a_proxy_restart_is_answered_on_the_second_ask(tmp_path: Path) -> None:
    site, host, clock = a_site(tmp_path)
    tab = WorkTab("net::ERR_PROXY_CONNECTION_FAILED", answer_from=2)
    fetched = await grid_fetch(site, clock, tab)
    assert (fetched.status, tab.asked, host.recovered) == (200, 2, 0)  # was SITE_UNAVAILABLE, retryable false


@pytest.mark.parametrize("how", ["grid_fetch", "page_visit"])
async def test_a_refused_path_met_on_the_last_attempt_keeps_its_network_cause(how: str, tmp_path: Path) -> None:
    """Three attempts spent on a page that changed under the request, then a proxy restart: the
    one more ask had no attempt left, so it waited 4 s and the loop ended VERIFICATION_REPEATED,
    the proxy cause lost. Now it is final at once with its cause."""
    site, host, clock = a_site(tmp_path)
    asked: list[float] = []

    async def detach() -> None:
        return None

    site._detach_loader = detach  # type: ignore[method-assign]
    failure = "net::ERR_PROXY_CONNECTION_FAILED"

    async def attempt() -> None:
        asked.append(clock.monotonic())
        if len(asked) < MAX_ATTEMPTS:
            raise PageChanged("the search page was replaced")
        if how == "grid_fetch":
            raise TransportError(f"TypeError: Failed to fetch ({failure})")
        raise navigation_failure(PlaywrightError(f"Page.goto: {failure} at https://kns.cnki.net/kns8s/AdvSearch"))

    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site._with_retries(attempt, None, on_transport="recover"))
    error = info.value
    assert (error.code, error.retryable, error.details.get("network_cause")) == ("SITE_UNAVAILABLE", False, "proxy_down")
    assert (len(asked), host.recovered) == (MAX_ATTEMPTS, 0)


@pytest.mark.parametrize(
    ("own", "other", "cause", "retryable"),
    [
        ("net::ERR_CONNECTION_RESET", "net::ERR_PROXY_CONNECTION_FAILED", "connection", True),
        ("net::ERR_PROXY_AUTH_REQUESTED", "net::ERR_ABORTED", "proxy_auth", False),
    ],
)
async def test_a_grid_request_is_not_given_another_requests_failure_to_the_same_url(
    own: str, other: str, cause: str, retryable: bool, tmp_path: Path
) -> None:
    """Every channel's grid pages and the export batches POST the one URL from the one work tab:
    the failure named was the last one to that URL, another request's (a reset reported as the
    proxy down, final; a sibling aborted by its own timeout naming no cause)."""
    site, _host, clock = a_site(tmp_path)
    tab = WorkTab(own)
    tab.others = [other]
    with pytest.raises(TransportError) as info:
        await clock.run_until_complete(site._page_fetch(tab, GRID_URL, "a=1", None, Priority.CHAIN))  # type: ignore[arg-type]
    error = transport_unavailable(info.value)
    assert (error.details.get("network_cause"), error.retryable) == (cause, retryable)
