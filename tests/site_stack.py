"""The production site stack the browser and end-to-end tests build against the simulator (Settings
on the simulator's origin, headless, a small interval, short settle and human-step polls ->
BrowserHost -> Limiter -> HumanGate -> CnkiSite), a SiteOp that records its transitions, the
server on an in-memory MCP Client, and the steps the test takes as the person (the vericode
form, the login form, the tab the gate shows)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.clock import Clock, SystemClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.reading import DetailTabs

GRID_PATH = "/kns8s/brief/grid"

SETTLE_QUIET = 0.3  # seconds a simulator's detail page is idle before a click (Settings.settle_quiet_seconds)
HUMAN_POLL = 0.05  # seconds between looks at a human step's page (Settings.human_poll_seconds)
STEP_TIMEOUT = 60.0  # bounds a test that would otherwise hang; never a timing assertion
LOGIN_SUBMIT = "form.ecp_loginAccountBox [type=submit], form.ecp_loginAccountBox button"


def sim_settings(
    data_dir: Path, origin: str, browser_executable: str, *, request_interval_ms: int = 20, **changes: Any
) -> Settings:
    """Settings of the production stack on the simulator: headless, a small request interval,
    detail pages clicked after 0.3 s of quiet, not the site's 1.5 s (the simulator's pages go
    idle at once; the settle logic runs the same), and a human step's page looked at every 0.05 s,
    not every second (the test plays a person who acts at once)."""
    return Settings(
        data_dir=data_dir, browser_path=browser_executable, headless=True, site_origin=origin,
        request_interval_ms=request_interval_ms,
        **{"settle_quiet_seconds": SETTLE_QUIET, "human_poll_seconds": HUMAN_POLL, **changes},
    )  # fmt: skip


@dataclass
class FakeOp:
    """A SiteOp that records its transitions and signals when it waits for the person."""

    operation_id: str = "op-test"
    on_verification: str = "wait"
    charges: int = 0
    transitions: list[str] = field(default_factory=list)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)

    def charge(self) -> None:
        self.charges += 1

    def awaiting_user(self, message: str) -> None:
        self.transitions.append("awaiting_user")
        self.waiting.set()

    def running(self) -> None:
        self.transitions.append("running")


@dataclass
class SiteStack:
    settings: Settings
    clock: SystemClock
    host: BrowserHost
    limiter: Limiter
    gate: HumanGate
    site: CnkiSite

    def detail_tabs(self) -> DetailTabs:
        return DetailTabs(
            self.site, self.host, self.limiter, self.gate, self.clock, settle_quiet=self.settings.settle_quiet_seconds
        )


@asynccontextmanager
async def site_stack(settings: Settings, **site_options: Any) -> AsyncIterator[SiteStack]:
    """The real CnkiSite over one BrowserHost (one Chromium), closed on exit."""
    clock = SystemClock()
    host = BrowserHost(settings, clock)
    limiter = Limiter(clock, settings.request_interval_ms / 1000, settings.max_inflight)
    gate = HumanGate(clock, limiter, poll_interval=settings.human_poll_seconds, timeout=STEP_TIMEOUT, headless=True)
    site = CnkiSite(settings, clock, host, limiter, gate, retry_waits=(0.01, 0.02), **site_options)
    yield SiteStack(settings, clock, host, limiter, gate, site)
    await site.close()
    await host.close()


def is_page_form(entry: Any) -> bool:
    """A logged grid POST the AdvSearch page itself sent when its search button was clicked (the
    simulator marks it `page_form`, docs/simulator.md "Request log")."""
    return bool(entry.path.startswith(GRID_PATH) and entry.params.get("page_form"))


def page_forms(sim: Any, since: int = 0) -> list[Any]:
    """The AdvSearch page's own search clicks logged after log index `since`."""
    return [e for e in sim.requests[since:] if is_page_form(e)]


async def wait_until(predicate: Callable[[], object], what: str) -> None:
    """Wait on an observable condition (the simulator's log, a page's state); fails with `what`
    instead of hanging after STEP_TIMEOUT."""
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            while not predicate():
                await asyncio.sleep(0.02)  # polling the condition, not waiting for time to pass
    except TimeoutError:
        raise AssertionError(f"not within {STEP_TIMEOUT} s: {what}") from None


async def page_form_logged(sim: Any, since: int = 0) -> None:
    """Wait until a page's own search click is logged after `since`. The template capture returns
    once the click's POST has started, and the product replays at once, so that POST may be logged
    after the product's call returned: a test counting grid POSTs waits for it first."""
    await wait_until(lambda: page_forms(sim, since), "the AdvSearch page's own search POST")


async def logged(sim: Any, path: str, method: str | None = None, count: int = 1) -> None:
    """Wait until at least `count` requests under `path` are logged: for a request the product
    does not wait for (a download's order page in a tab left to finish on its own)."""
    await wait_until(lambda: len(sim.requests_for(path, method)) >= count, f"{count} x {method or ''} {path}")


async def expect_code(awaitable: object, code: str) -> CnkiError:
    """The awaitable fails with a CnkiError of `code` (bounded by STEP_TIMEOUT)."""
    with pytest.raises(CnkiError) as info:
        async with asyncio.timeout(STEP_TIMEOUT):
            await awaitable  # type: ignore[misc]
    assert info.value.code == code, info.value
    return info.value


@asynccontextmanager
async def in_memory_server(settings: Settings, clock: Clock | None = None) -> AsyncIterator[tuple[Client, Services]]:
    """The server with production Services (on `clock`, the system's by default), on the SDK's
    in-memory Client. One task owns the client for as long as the context lasts (anyio scopes must
    exit in the task that entered them)."""
    opened: list[Services] = []

    def open_services() -> Services:
        opened.append(Services.open(settings, clock=clock))
        return opened[-1]

    ready: asyncio.Queue[Client] = asyncio.Queue()
    stop = asyncio.Event()

    async def own() -> None:
        async with Client(build_server(open_services)) as client:
            ready.put_nowait(client)
            await stop.wait()

    owner = asyncio.create_task(own())
    async with asyncio.timeout(60):
        client = await ready.get()
    try:
        yield client, opened[0]
    finally:
        stop.set()
        async with asyncio.timeout(60):
            await owner


# --- the person ---------------------------------------------------------------------------------


def tab_with(ctx: Any, fragment: str) -> Any:
    """The open tab whose URL holds `fragment` (it must be open already)."""
    return next(p for p in ctx.pages if fragment in p.url)


async def wait_for_tab(host: BrowserHost, fragment: str, bound: float) -> Any:
    """The browser tab whose URL holds `fragment` (the page the gate shows), waited for, bounded."""
    ctx = await host.ensure()
    async with asyncio.timeout(bound):
        while True:
            for page in ctx.pages:
                if fragment in page.url:
                    return page
            await asyncio.sleep(0.05)  # polling the tab list, not waiting for time to pass


async def solve_vericode(page: Any) -> None:
    """The person solves the vericode form the search page shows in #briefBox. The operation can
    report awaiting_user a moment before the page has drawn the form, so wait for it to appear
    (an event, not a sleep; a form that never appears fails here)."""
    form = page.locator("#briefBox form[name=vericodeForm]")
    await form.wait_for(state="attached", timeout=30_000)
    assert await form.count() == 1
    await page.fill("#vericode", "abcd")
    await page.click(".btn-vericode")


async def fill_login(page: Any, username: str, password: str) -> None:
    await page.fill("input[name=username]", username)
    await page.fill("input[name=password]", password)


async def submit_login(page: Any) -> None:
    await page.locator(LOGIN_SUBMIT).first.click()


async def log_in(page: Any, username: str, password: str) -> None:
    """The person logs in on the login page shown."""
    await fill_login(page, username, password)
    await submit_login(page)
