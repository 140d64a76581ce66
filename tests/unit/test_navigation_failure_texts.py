"""The text of a failed navigation as the product reports or logs it (site/endpoints.error_reason):
an error carrying no text (a Playwright error raised without a message) is handled as any other
failure of that navigation (it raised IndexError from the `str(exc).splitlines()[0]` that named it
in the log, an uncoded error for the caller), and the reason a detail tab's failure gives the client
carries no URL query (the first line of Playwright's message names the URL it was navigating to)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints, unsent_net_error
from cnki_mcp.site.login import LoginFlow
from cnki_mcp.site.reading import DetailTabs
from cnki_mcp.site.search_page import SearchPage


class _Limiter:
    @contextlib.asynccontextmanager
    async def slot(self, **_kwargs: Any) -> AsyncIterator[None]:
        yield


class _Host:
    def __init__(self, *, gone: bool = False) -> None:
        self.errors: list[BaseException] = []
        self.gone = gone

    def note_error(self, exc: BaseException) -> bool:
        self.errors.append(exc)
        return self.gone  # False: the browser is still there, only this navigation failed


class _Page:
    def __init__(self, text: str = "") -> None:
        self.visited: list[str] = []
        self.text = text

    async def goto(self, url: str, **_kwargs: Any) -> None:
        self.visited.append(url)
        raise PlaywrightError(self.text.format(url=url))


class _Site(SearchPage):
    def __init__(self) -> None:
        self.endpoints = Endpoints(Settings(data_dir=Path("unused")))
        self._host = _Host()  # type: ignore[assignment]
        self._limiter = _Limiter()  # type: ignore[assignment]


async def test_a_home_page_visit_failing_without_text_goes_on_to_the_search_page() -> None:
    site, page = _Site(), _Page()
    await site._first_visit(page, None, force=True)  # type: ignore[arg-type]
    assert page.visited == [site.endpoints.www_home] and len(site._host.errors) == 1  # type: ignore[attr-defined]


async def test_a_login_page_failing_to_load_without_text_is_used_as_it_is() -> None:
    host, page = _Host(), _Page()
    flow = LoginFlow(host, Endpoints(Settings(data_dir=Path("unused"))), _Limiter(), None, FakeClock())  # type: ignore[arg-type]
    assert await flow._open(page, "https://fsso.cnki.net/remote", None) is None  # type: ignore[arg-type]
    assert page.visited == ["https://fsso.cnki.net/remote"] and len(host.errors) == 1


async def test_a_slider_page_the_browser_lost_is_site_unavailable_without_the_urls_query() -> None:
    url = "https://kns.cnki.net/verify/home?captchaType=slide&token=SECRETTOKEN"
    page = _Page("Page.goto: net::ERR_CONNECTION_RESET at {url}\nCall log:\n  - navigating to {url}")
    tabs = DetailTabs(
        SimpleNamespace(endpoints=Endpoints(Settings(data_dir=Path("unused")))),  # type: ignore[arg-type]
        _Host(gone=True),  # type: ignore[arg-type]
        _Limiter(),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        FakeClock(),
    )
    with pytest.raises(CnkiError) as info:
        await tabs._show_named(page, url, None)  # type: ignore[arg-type]
    assert info.value.code == "SITE_UNAVAILABLE" and page.visited == [url]
    assert "SECRETTOKEN" not in repr(info.value.details)
    assert "net::ERR_CONNECTION_RESET" in info.value.details["reason"]  # what failed is still said


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Page.goto: net::ERR_CONNECTION_REFUSED at https://vpn.example.edu/\nCall log: ...", "net::ERR_CONNECTION_REFUSED"),
        ("Page.goto: net::ERR_NAME_NOT_RESOLVED at https://vpn.example.edu/", "net::ERR_NAME_NOT_RESOLVED"),
        ("Page.goto: net::ERR_CONNECTION_RESET at https://vpn.example.edu/", None),  # may have been taken
        ("Page.goto: Timeout 30000ms exceeded.", None),
        ("", None),
    ],
)
def test_only_a_failure_that_reached_no_server_is_named_unsent(text: str, name: str | None) -> None:
    assert unsent_net_error(PlaywrightError(text)) == name
