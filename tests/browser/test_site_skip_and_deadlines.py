"""CnkiSite under on_verification skip and with a browser that stops answering: a gated detail
page is recorded and skipped without opening anything (no tab, no request to the gate page), and
a tab that never closes does not hold the request (docs/reliability.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.backend import GridRequest
from tests.browser.test_site_cnki import title_subject
from tests.site_stack import FakeOp, SiteStack, expect_code, sim_settings, site_stack

pytestmark = pytest.mark.browser

DETAIL = "/kcms2/article/abstract"


@pytest.fixture
async def stack(sim_server: SimServer, tmp_path: Path, browser_executable: str) -> AsyncIterator[SiteStack]:
    async with site_stack(sim_settings(tmp_path, sim_server.origin, browser_executable)) as s:
        yield s


async def detail_urls(stack: SiteStack, n: int) -> list[str]:
    grid = await stack.site.grid(GridRequest(subject=title_subject("违约金"), anchor="违约金"))
    return [r.detail_url for r in grid.rows[:n] if r.detail_url]


@pytest.mark.parametrize("kind", ["verification", "login_required"])
async def test_a_gated_detail_page_is_skipped_without_opening_anything_under_skip(
    stack: SiteStack, sim_server: SimServer, kind: str
) -> None:
    urls = await detail_urls(stack, 3)
    ctx = await stack.host.ensure()
    tabs_before = len(ctx.pages)
    sim_server.set_scenario({"faults": [{"path": DETAIL, "kind": kind}]})
    sim_server.log.clear()
    op = FakeOp(on_verification="skip")
    for url in urls:
        error = await expect_code(stack.site.detail(url, op=op), "VERIFICATION_SKIPPED")
        assert error.details["gate"] == ("challenge" if kind == "verification" else "login")
    paths = [e.path for e in sim_server.requests]
    assert paths.count(DETAIL) == len(urls)  # one request per gated page, never retried
    # the redirect the loader follows is the only gate-page load: nothing opened it again
    assert len([p for p in paths if p.startswith(("/verify", "/login"))]) == len(urls)
    assert op.charges == len(urls) and op.transitions == []  # never awaiting the person
    assert len(ctx.pages) == tabs_before  # no tab opened
    assert not stack.gate.active


async def test_a_tab_that_never_closes_does_not_hold_a_request(
    stack: SiteStack, sim_server: SimServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hang of issue 11: a step tab whose close never returned held the detail request."""
    import asyncio

    from cnki_mcp.site import deadline

    [url] = await detail_urls(stack, 1)
    sim_server.set_scenario({"faults": [{"path": DETAIL, "kind": "login_required", "at": [1]}]})
    monkeypatch.setattr(deadline, "CLOSE_SECONDS", 0.5)
    monkeypatch.setattr("cnki_mcp.site.transport.CLOSE_SECONDS", 0.5)  # the loader's CDP detach
    closes: list[Any] = []
    ctx = await stack.host.ensure()

    def stall_close(page: Any) -> None:
        async def never(*_a: Any, **_k: Any) -> None:
            closes.append(page)
            await asyncio.Event().wait()

        page.close = never  # this tab's close never answers

    ctx.on("page", stall_close)
    stack.gate._timeout = 5.0  # the person never comes: the step times out
    try:
        await expect_code(stack.site.detail(url, op=FakeOp()), "VERIFICATION_TIMEOUT")
    finally:
        ctx.remove_listener("page", stall_close)
    assert closes  # the step tab was closed (and its close stalled) yet the request returned


async def test_script_rendered_details_fetched_concurrently_each_render_in_their_own_tab(
    stack: SiteStack, sim_server: SimServer
) -> None:
    """Detail workers render at the same time: a shared render tab aborted one navigation with
    the next (net::ERR_ABORTED), which ended the whole search SITE_UNAVAILABLE."""
    import asyncio

    urls = await detail_urls(stack, 4)
    ctx = await stack.host.ensure()
    tabs_before = len(ctx.pages)
    sim_server.set_scenario({"faults": [{"path": DETAIL, "kind": "script_rendered_detail"}]})
    pages = await asyncio.gather(*(stack.site.detail(url, op=FakeOp()) for url in urls))
    assert all(p.title and p.abstract for p in pages)
    assert len({p.title for p in pages}) == len(urls)
    assert len(ctx.pages) == tabs_before  # every render tab closed


async def test_a_browser_that_stops_answering_before_the_search_page_is_recovered(
    stack: SiteStack, sim_server: SimServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser wedged (frozen by the system, every process stopped) while the search page was
    being opened: the session-cookie check awaited `context.cookies()` with no deadline, and the
    search stayed `running` until its 900 s watchdog. It is a transport failure now, and the
    grid's retry recovers the browser."""
    import asyncio

    from cnki_mcp.site import cnki, search_page

    monkeypatch.setattr(cnki, "CALL_SECONDS", 0.5)
    monkeypatch.setattr(search_page, "CALL_SECONDS", 0.5)  # the session-cookie check's deadline
    ctx = await stack.host.ensure()
    generation = stack.host.generation
    asked: list[str] = []

    async def never(*_a: Any, **_k: Any) -> list[Any]:
        asked.append("cookies")
        await asyncio.Event().wait()
        return []

    ctx.cookies = never  # type: ignore[method-assign]  # this browser never answers again
    async with asyncio.timeout(90):
        grid = await stack.site.grid(GridRequest(subject=title_subject("违约金"), anchor="违约金"))
    assert asked and grid.rows
    assert stack.host.generation > generation  # a new browser answered the request
