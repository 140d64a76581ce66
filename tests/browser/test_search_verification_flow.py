"""A research search (three channels paging at once in the one search page) that meets a verification,
end to end through the in-process server and real headless Chromium against the simulator: the
person solves it once and the search goes on by itself, every channel done, no grid page asked twice,
the browser never relaunched (DESIGN.md "Challenges, blocks and sessions", "The shared search page").
Also what the person does in the shown window: the work tab closed or crashed mid-search or mid-load
is replaced, and a browser that died under three channels is relaunched once."""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.sim.reqlog import LogEntry
from cnki_mcp.sim.server import SimServer
from tests.e2e.support import DETAIL, GRID, InProcess, request_key, wait_op
from tests.site_stack import (
    STEP_TIMEOUT,
    in_memory_server,
    is_page_form,
    sim_settings,
    solve_vericode,
    wait_for_tab,
    wait_until,
)

pytestmark = pytest.mark.browser

VERIFY = "/verify/home"
ADV_SEARCH = "/kns8s/AdvSearch"
# Only the search page's own click names its boxes in QueryJson (`"Key":"input[data-tipid=…]"`).
PAGE_OWN = "data-tipid"
# subject, title and keywords channels of two concepts (the simulator's corpus lists 499, 86 and 10
# papers): the subject channel pages on while the other two ask their first page
SEARCH: dict[str, Any] = {
    "query": "研究与分析：中国数据模型的发展",
    "concept_groups": [["研究", "分析"], ["中国", "数据", "模型", "发展"]],
    "limit": 10,
    "options": {"max_pages": 3, "candidate_target": 300, "metadata": "basic", "freshness": "live"},
}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer() as server:
        yield server


@pytest.fixture
def serve(sim: SimServer, tmp_path: Path, browser_executable: str) -> Callable[..., Any]:
    """The in-process server on the simulator; `interval_ms`: the spacing between request starts."""
    sim.set_scenario(None)
    sim.reset()

    @asynccontextmanager
    async def running(interval_ms: int = 30) -> AsyncIterator[InProcess]:
        settings = sim_settings(
            tmp_path / "data", sim.origin, browser_executable,
            request_interval_ms=interval_ms, inline_wait_seconds=0.0,
        )  # fmt: skip
        async with in_memory_server(settings) as (client, services):
            yield InProcess(client, services, sim)

    return running


def awaiting(record: dict[str, Any]) -> bool:
    assert record["status"] in ("running", "awaiting_user"), record
    return record["status"] == "awaiting_user"


def asked_again(entries: list[LogEntry]) -> list[tuple[Any, ...]]:
    """Grid pages asked again after a clean (200, no fault) answer to them (the capture clicks,
    which search the anchor alone, left out)."""
    clean: Counter[tuple[Any, ...]] = Counter()
    again: list[tuple[Any, ...]] = []
    for entry in entries:
        key = request_key(entry)
        if key is None or key[0] != "grid" or is_page_form(entry):
            continue
        if clean[key]:
            again.append(key)
        if entry.status == 200 and not entry.fault:
            clean[key] += 1
    return again


def assert_every_channel_done(done: dict[str, Any]) -> None:
    assert done["status"] == "completed", (done["status"], done["errors"])
    coverage = done["result"]["coverage"]
    assert len(coverage) == 3 and all(c["pages"] >= 1 and not c["failed"] for c in coverage), coverage


async def test_a_research_search_goes_on_after_the_person_solves_the_grids_vericode_form(
    sim: SimServer, serve: Callable[..., Any]
) -> None:
    # The subject channel's second page asks for the code while the title and keywords channels
    # wait for their turn (a wide spacing); their first pages go once the person solved it and
    # answer slowly, so they are still in flight in the search page when it is loaded again.
    sim.set_scenario(
        {
            "faults": [{"path": GRID, "kind": "verification", "at": [2], "form_lacks": PAGE_OWN}],
            "latency": [{"path": GRID, "ms": 1500, "at": list(range(3, 40)), "form_lacks": PAGE_OWN}],
        }
    )
    async with serve(interval_ms=300) as app:
        waiting = await wait_op(app.call, await app.call("search", SEARCH), until=awaiting)
        await solve_vericode(await app.services.host.work_page())
        done = await wait_op(app.call, waiting)
        launches = app.services.host.launches

    assert_every_channel_done(done)
    assert asked_again(sim.requests) == []
    assert launches == 1  # no channel's trouble restarted the browser under the others


async def test_an_advsearch_403_shows_the_person_the_issued_slider_and_the_search_completes(
    sim: SimServer, serve: Callable[..., Any]
) -> None:
    # CNKI's WAF answers the search page itself with the -403 JSON naming its slider page; the
    # fault holds for this browser until the slider is solved (docs/simulator.md).
    sim.set_scenario({"faults": [{"path": ADV_SEARCH, "kind": "verification_403", "at": [1]}]})
    async with serve() as app:
        waiting = await wait_op(app.call, await app.call("search", SEARCH), until=awaiting)
        tab = await wait_for_tab(app.services.host, VERIFY, STEP_TIMEOUT)
        await tab.click(".verify-fallback")
        done = await wait_op(app.call, waiting)

    assert_every_channel_done(done)
    # one slider page, the one the site issued (its ident, captchaId and returnUrl), solved once
    assert [e.params["valid"] for e in sim.requests_for(VERIFY)] == [True]
    assert len(sim.requests_for("/verify/solve", "POST")) == 1
    assert sim.requests_for(ADV_SEARCH)[0].status == 403
    assert asked_again(sim.requests) == []


async def test_three_channels_meeting_one_grid_403_show_one_slider_for_one_step(
    sim: SimServer, serve: Callable[..., Any]
) -> None:
    # The subject channel's second page and the other channels' first pages (replays 2-4, sent once
    # the first page answered) are in flight together and all meet the slider: the person is shown
    # one slider page and solves it once. Their answers wait until all three arrived: with a fixed
    # latency, a loaded product sent the last ones after the first 403 was back, held them behind
    # the step (as it should) and fewer than three met it.
    sim.set_scenario(
        {
            "faults": [{"path": GRID, "kind": "verification_403", "at": [2, 3, 4], "form_lacks": PAGE_OWN}],
            "latency": [
                {"path": GRID, "ms": 10_000, "at": [2, 3], "until_arrived": 4, "form_lacks": PAGE_OWN}
            ],
        }
    )
    async with serve() as app:
        waiting = await wait_op(app.call, await app.call("search", SEARCH), until=awaiting)
        tab = await wait_for_tab(app.services.host, VERIFY, STEP_TIMEOUT)
        await tab.click(".verify-fallback")
        done = await wait_op(app.call, waiting)
        launches = app.services.host.launches

    assert_every_channel_done(done)
    assert len([e for e in sim.requests_for(GRID, "POST") if e.fault == "verification_403"]) == 3
    assert [e.params["valid"] for e in sim.requests_for(VERIFY)] == [True]
    assert asked_again(sim.requests) == []
    assert launches == 1


async def test_operations_started_while_a_step_holds_the_search_page_wait_for_it_or_skip_it(
    sim: SimServer, serve: Callable[..., Any]
) -> None:
    """Search A meets the grid's vericode form, drawn in the search page for the person, whose step
    holds that page. An operation started meanwhile needs the page (its grid template) and waited
    for it outside the gate: `running` with no request sent for as long as the person took (20
    minutes headless), on_verification skip or not. Now its wait is the step's: skip is
    VERIFICATION_SKIPPED at once, ask is awaiting_user with the step's message and goes on after."""
    sim.set_scenario({"faults": [{"path": GRID, "kind": "verification", "at": [2], "form_lacks": PAGE_OWN}]})
    async with serve() as app:
        first = await wait_op(app.call, await app.call("search", SEARCH), until=awaiting)
        assert app.services.gate.active
        skipping = await app.call(
            "structured_search",
            {"expression": {"field": "title", "value": "数据"}, "options": {"on_verification": "skip"}},
        )
        skipped = await wait_op(app.call, skipping, until=lambda r: r["status"] != "running")
        asking = await app.call("get_metadata", {"titles": ["研究与分析：中国数据模型的发展"]})
        waiting = await wait_op(app.call, asking, until=lambda r: r["status"] != "running")
        assert app.services.gate.active  # the person has not solved anything yet
        assert waiting["status"] == "awaiting_user" and waiting["message"] == first["message"]
        assert waiting["operation_id"] in app.services.gate.waiting_operations
        await solve_vericode(await app.services.host.work_page())
        done = await wait_op(app.call, first)
        after = await wait_op(app.call, waiting)

    # no page read: `skipped`, no result of 0 papers (DESIGN.md "A search that read nothing")
    assert skipped["status"] == "skipped" and skipped["requests"] == 0, skipped
    assert {e["code"] for e in skipped["errors"]} == {"VERIFICATION_SKIPPED"}, skipped["errors"]
    assert_every_channel_done(done)
    assert after["status"] not in ("running", "awaiting_user"), after


# --- the person's hands in the shown window ------------------------------------------------------

SLOW_GRID: dict[str, Any] = {"latency": [{"path": GRID, "ms": 800, "form_lacks": PAGE_OWN}]}


async def replays_in_flight(sim: SimServer, since: int = 0) -> None:
    """The product's grid replays are out (their answers held back by SLOW_GRID)."""
    await wait_until(
        lambda: len([e for e in sim.requests_for(GRID, "POST")[since:] if not is_page_form(e)]) >= 2,
        "two grid replays sent",
    )


@pytest.mark.parametrize("hand", ["closes the work tab", "the work tab's renderer crashes"])
async def test_a_work_tab_lost_mid_search_is_replaced_without_relaunching_the_browser(
    sim: SimServer, serve: Callable[..., Any], hand: str
) -> None:
    """The person closes the work tab in the shown window (or its renderer crashes) while the search
    page's requests are in flight. Each request in flight relaunched the browser in turn, closing
    every other tab, the person's own among them; now they are asked again in a new work tab."""
    sim.set_scenario(SLOW_GRID)
    async with serve() as app:
        ctx = await app.services.host.ensure()
        own = await ctx.new_page()  # a CNKI page the person opened themselves
        await own.goto(f"{sim.origin}/")
        started = await app.call("search", SEARCH)
        await replays_in_flight(sim)
        work = await app.services.host.work_page()
        if hand == "closes the work tab":
            await work.close()
        else:
            session = await ctx.new_cdp_session(work)
            with contextlib.suppress(PlaywrightError):  # the crashed tab answers nothing
                await session.send("Page.crash")
        done = await wait_op(app.call, started)
        launches = app.services.host.launches
        kept = not own.is_closed()

    assert_every_channel_done(done)
    assert launches == 1
    assert kept


async def test_a_browser_that_dies_under_three_channels_is_relaunched_once(
    sim: SimServer, serve: Callable[..., Any]
) -> None:
    """The person closes the last window (the browser exits) or the browser crashes while three
    channels' requests are in flight: each recovered the browser, the later ones closing the one the
    first had just launched (three launches, each a few seconds, every other tab closed twice)."""
    sim.set_scenario(SLOW_GRID)
    async with serve() as app:
        started = await app.call("search", SEARCH)
        await replays_in_flight(sim)
        os.kill(app.services.host.status()["process_id"], signal.SIGKILL)
        done = await wait_op(app.call, started)
        launches = app.services.host.launches

    assert_every_channel_done(done)
    assert launches == 2


async def test_details_loading_when_the_person_closes_the_work_tab_are_read_again(
    sim: SimServer, serve: Callable[..., Any]
) -> None:
    """Detail pages load through the work tab; the person closing it mid-load ended the call
    `partial` with SITE_UNAVAILABLE ("知网暂时不可用") though CNKI had answered every page."""
    async with serve() as app:
        ctx = await app.services.host.ensure()
        searched = await wait_op(app.call, await app.call("search", {**SEARCH, "options": {"max_pages": 1}}))
        sim.set_scenario({"latency": [{"path": DETAIL, "ms": 800}]})
        since = len(sim.requests)
        started = await app.call(
            "get_metadata",
            {"search_id": searched["operation_id"], "limit": 3, "fields": ["abstract"], "refresh": True},
        )
        await wait_until(lambda: any(e.path.startswith(DETAIL) for e in sim.requests[since:]), "a detail sent")
        await (await app.services.host.work_page()).close()
        done = await wait_op(app.call, started)
        pages = len(ctx.pages)

    assert done["status"] == "completed" and done["errors"] == [], done
    assert all(r["abstract"] for r in done["result"]["records"])
    assert pages == 1  # the new work tab alone
