"""Challenges, blocks and sessions through the production site stack (real headless Chromium against
the simulator, docs/simulator.md "Challenges, blocks and sessions"): the first visit of a fresh
profile, session cookies across a restart, the grid's and a detail page's 403 slider answer shown
at the URL the site issued, and cursors from another browser session."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urljoin

import pytest

from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.site.browser import COOKIES_FILE
from tests.site_stack import (
    STEP_TIMEOUT,
    FakeOp,
    SiteStack,
    expect_code,
    in_memory_server,
    page_form_logged,
    sim_settings,
    site_stack,
    tab_with,
)

pytestmark = pytest.mark.browser
T = TypeVar("T")

GRID = "/kns8s/brief/grid"
DETAIL = "/kcms2/article/abstract"
VERIFY = "/verify/home"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(sim: SimServer) -> Iterator[None]:
    sim.set_scenario(None)
    sim.reset()
    yield
    sim.set_scenario(None)


def title_request(term: str = "研究", **kw: Any) -> GridRequest:
    item = {
        "Key": "t",
        "Title": "篇名",
        "Logic": 0,
        "Field": "TI",
        "Operator": "FUZZY",
        "Value": term,
        "Value2": "",
    }
    branch = {"Key": "t", "Title": "", "Logic": 0, "Items": [item], "ChildItems": []}
    subject = {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [branch]}
    return GridRequest(subject=subject, anchor=term, **kw)


def visits(sim: SimServer, since: int = 0) -> list[tuple[str, str, int]]:
    """(method, path, status) of the pages and API calls, in order (icons left out)."""
    return [(e.method, e.path, e.status) for e in sim.requests[since:] if e.path != "/favicon.ico"]


async def solve_in_tab(ctx: Any, op: FakeOp) -> str:
    """The person: waits to be asked, then solves the slider page the gate shows; its URL."""
    await op.waiting.wait()
    tab = tab_with(ctx, VERIFY)
    url = tab.url
    await tab.click(".verify-fallback")
    return url


async def solve_in_own_tab(ctx: Any, op: FakeOp) -> str:
    """The person: waits to be asked, then opens a CNKI page in a tab of their own, where the site
    (which challenges the browser, not a tab) shows a slider of its own, and solves that one; the
    URL of the slider the gate shows, left unsolved."""
    await op.waiting.wait()
    shown = tab_with(ctx, VERIFY).url
    own = await ctx.new_page()
    await own.goto(urljoin(shown, "/kns8s/AdvSearch"))
    await own.click(".verify-fallback")
    return shown


async def solved_by_a_person(
    stack: SiteStack,
    call: Callable[[FakeOp], Awaitable[T]],
    person: Callable[[Any, FakeOp], Awaitable[str]] = solve_in_tab,
) -> tuple[T, FakeOp, str]:
    """`call(op)` while the person solves the slider it meets (`person`, by default in the gate's
    tab): (its answer, the operation, the slider URL the person was shown)."""
    op = FakeOp()
    ctx = await stack.host.ensure()
    solving = asyncio.create_task(person(ctx, op))
    async with asyncio.timeout(STEP_TIMEOUT):
        answer = await call(op)
    return answer, op, await solving


async def test_a_fresh_profile_comes_in_through_the_home_page_without_a_slider(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    settings = sim_settings(tmp_path, sim.origin, browser_executable)
    async with site_stack(settings) as stack:
        page = await stack.site.grid(title_request(), FakeOp(on_verification="skip"))
    assert page.rows
    assert visits(sim)[:3] == [("GET", "/", 200), ("GET", "/kns8s/AdvSearch", 200), ("POST", GRID, 200)]
    assert not sim.requests_for(VERIFY) and all(e.status == 200 for e in sim.requests_for(GRID))


async def test_a_restarted_profile_keeps_its_session_and_its_cursors(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    settings = sim_settings(tmp_path, sim.origin, browser_executable)
    async with site_stack(settings) as stack:
        await stack.site.grid(title_request(page=1))
        second = await stack.site.grid(title_request(page=2))
        await page_form_logged(sim)  # each session's capture click lands before its browser closes
    assert (tmp_path / COOKIES_FILE).exists()  # saved at close (site/browser.py)

    since = len(sim.requests)
    async with site_stack(settings) as stack:  # a restarted server on the same profile
        third = await stack.site.grid(
            title_request(page=3, cursor=second.turnpage), FakeOp(on_verification="skip")
        )
        await page_form_logged(sim, since)
    assert third.page == 3 and third.rows
    # No home page, no slider: the saved session cookie came back, and with it the cursor's session.
    assert visits(sim, since) == [("GET", "/kns8s/AdvSearch", 200), ("POST", GRID, 200), ("POST", GRID, 200)]
    [replayed] = [e for e in sim.requests_for(GRID)[-2:] if e.params.get("pageSize") == "50"]
    assert replayed.params["pageNum"] == "3" and replayed.params["turnpage"] == second.turnpage

    (tmp_path / COOKIES_FILE).unlink()  # without the saved session the relaunched profile must come in again
    since = len(sim.requests)
    async with site_stack(settings) as stack:
        await stack.site.grid(title_request(page=1), FakeOp(on_verification="skip"))
    assert [v[1] for v in visits(sim, since)][:2] == ["/", "/kns8s/AdvSearch"]


async def test_a_restored_session_the_site_no_longer_honours_is_renewed_at_the_home_page(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    settings = sim_settings(tmp_path, sim.origin, browser_executable)
    async with site_stack(settings) as stack:
        await stack.site.grid(title_request())
        await page_form_logged(sim)  # not later, among the restarted session's visits
    sim.forget_sessions()  # the saved KNS2COOKIE lapsed while the server was down
    since = len(sim.requests)
    async with site_stack(settings) as stack:
        page = await stack.site.grid(title_request(), FakeOp(on_verification="skip"))
    assert page.rows
    assert [v[1:] for v in visits(sim, since)][:4] == [
        ("/kns8s/AdvSearch", 302),
        (VERIFY, 200),
        ("/", 200),
        ("/kns8s/AdvSearch", 200),
    ]


async def test_a_cursor_from_another_browser_session_is_refused_and_the_page_sought_again(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with site_stack(sim_settings(tmp_path / "a", sim.origin, browser_executable)) as stack:
        await stack.site.grid(title_request(page=1))
        second = await stack.site.grid(title_request(page=2))
        expected = await stack.site.grid(title_request(page=3))
    since = len(sim.requests_for(GRID))
    async with site_stack(sim_settings(tmp_path / "b", sim.origin, browser_executable)) as stack:
        third = await stack.site.grid(title_request(page=3, cursor=second.turnpage))
    assert [r.title for r in third.rows] == [r.title for r in expected.rows]
    posts = [e for e in sim.requests_for(GRID)[since:] if e.params.get("pageSize") == "50"]
    assert [(e.params["pageNum"], e.status, e.params.get("error")) for e in posts] == [
        ("3", 400, "cursor of another session"),
        ("1", 200, None),
        ("2", 200, None),
        ("3", 200, None),
    ]


async def test_grid_403_slider_is_shown_at_the_sites_own_url_and_the_paging_resumes(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        await stack.site.grid(title_request(page=1))
        second = await stack.site.grid(title_request(page=2))
        sim.set_scenario({"faults": [{"path": GRID, "kind": "verification_403", "at": [1], "form_lacks": "data-tipid"}]})
        third, op, shown = await solved_by_a_person(stack, lambda op: stack.site.grid(title_request(page=3), op))
    assert third.page == 3 and third.rows
    assert op.transitions == ["awaiting_user", "running"]
    [opened] = sim.requests_for(VERIFY)
    assert opened.params["valid"] is True  # the URL the 403 answer named, ident and captchaId intact
    assert f"captchaId={opened.params['captchaId']}" in shown and f"ident={opened.params['ident']}" in shown
    posts = [e for e in sim.requests_for(GRID) if e.params.get("pageNum") == "3"]
    assert [(e.status, e.fault) for e in posts] == [(403, "verification_403"), (200, None)]
    assert posts[-1].params["turnpage"] == second.turnpage  # the same session: page 3's cursor still works


async def page_after_the_session_lapsed(
    sim: SimServer, tmp_path: Path, browser_executable: str, *, page: int
) -> tuple[Any, Any, list[Any]]:
    """Page 1 of a list read, the guest session lapsed, then `page` asked: the person solves the
    slider it meets. The page, the operation, and the 50-row grid posts sent after the lapse."""
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        await stack.site.grid(title_request(page=1))
        await page_form_logged(sim)
        sim.forget_sessions()
        since = len(sim.requests_for(GRID))
        got, op, _ = await solved_by_a_person(stack, lambda op: stack.site.grid(title_request(page=page), op))
    return got, op, [e for e in sim.requests_for(GRID)[since:] if e.params.get("pageSize") == "50"]


async def test_a_session_renewed_in_the_middle_of_a_list_seeks_the_next_page_again_from_page_one(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    # The guest session lapses after page 1; the next page meets the slider, whose solution plants a
    # new session, so the cursor page 1 gave belongs to the old one (docs/simulator.md "Cursors").
    second, op, posts = await page_after_the_session_lapsed(sim, tmp_path, browser_executable, page=2)
    assert [(e.params["pageNum"], e.status, e.params.get("error") or e.fault) for e in posts] == [
        ("2", 403, "no_session"),
        ("2", 400, "cursor of another session"),
        ("1", 200, None),
        ("2", 200, None),
    ]
    assert op.transitions == ["awaiting_user", "running"]
    served = {r.id: r.title for r in sim.corpus.records}
    assert posts[-1].params["served_page"] == 2 and second.page == 2
    assert [r.title for r in second.rows] == [served[i] for i in posts[-1].params["ids"]]


async def test_a_page_sought_past_a_refused_kept_cursor_is_walked_again_from_page_one(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    # Page 3 asked with only page 2's cursor kept: the walk meets the renewed session at page 2.
    third, _, posts = await page_after_the_session_lapsed(sim, tmp_path, browser_executable, page=3)
    assert [(e.params["pageNum"], e.status) for e in posts] == [
        ("2", 403),
        ("2", 400),
        ("1", 200),
        ("2", 200),
        ("3", 200),
    ]
    assert third.page == 3 and posts[-1].params["served_page"] == 3


async def detail_behind_a_slider(
    sim: SimServer, tmp_path: Path, browser_executable: str, kind: str, person: Callable[[Any, FakeOp], Awaitable[str]]
) -> tuple[FakeOp, str]:
    """A detail page whose first request meets a slider of `kind` that `person` solves: the
    operation and the slider URL the gate showed (the page read is checked here)."""
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        row = (await stack.site.grid(title_request("违约金"))).rows[0]
        sim.set_scenario({"faults": [{"path": DETAIL, "kind": kind, "at": [1]}]})
        detail, op, shown = await solved_by_a_person(stack, lambda op: stack.site.detail(row.detail_url or "", op), person)
    assert detail.title == row.title
    assert op.transitions == ["awaiting_user", "running"]
    return op, shown


async def test_detail_403_slider_is_read_in_a_tab_and_solved_at_the_sites_own_url(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    await detail_behind_a_slider(sim, tmp_path, browser_executable, "verification_403", solve_in_tab)
    assert [e.params["valid"] for e in sim.requests_for(VERIFY)] == [True]
    assert [e.status for e in sim.requests_for(DETAIL)][:2] == [403, 403]  # the loader's, then the tab's


async def test_a_slider_solved_in_another_tab_ends_the_step_the_shown_slider_waits_in(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    _, shown = await detail_behind_a_slider(sim, tmp_path, browser_executable, "verification", solve_in_own_tab)
    opened = sim.requests_for(VERIFY)
    # the loader's and the tab's (the one shown), then the person's own: only the person's was solved
    assert len(opened) == 3 and opened[1].params["captchaId"] in shown
    [solved] = sim.requests_for("/verify/solve")
    assert solved.params["captchaId"] == opened[2].params["captchaId"]
    assert [e.status for e in sim.requests_for(DETAIL)][-1] == 200


async def test_detail_403_that_refuses_outright_is_still_access_denied(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        row = (await stack.site.grid(title_request("违约金"))).rows[2]
        sim.set_scenario({"faults": [{"path": DETAIL, "kind": "forbidden", "count": 2}]})
        await expect_code(stack.site.detail(row.detail_url or "", FakeOp()), "ACCESS_DENIED")
    assert [e.status for e in sim.requests_for(DETAIL)] == [403, 403]  # the loader's, then the tab's
    assert not sim.requests_for(VERIFY)


async def test_detail_redirected_to_the_slider_shows_a_page_the_site_issued(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        row = (await stack.site.grid(title_request("违约金"))).rows[1]
        sim.set_scenario({"faults": [{"path": DETAIL, "kind": "verification", "at": [1]}]})
        detail, _, _ = await solved_by_a_person(stack, lambda op: stack.site.detail(row.detail_url or "", op))
    assert detail.title == row.title
    # The loader met one slider page silently; the person's tab opened the one the site redirected to.
    assert [e.params["valid"] for e in sim.requests_for(VERIFY)] == [True, True]


async def test_skip_policy_turns_the_grid_403_slider_into_a_typed_error_not_a_denial(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        await stack.site.grid(title_request())
        sim.set_scenario({"faults": [{"path": GRID, "kind": "verification_403", "at": [1], "form_lacks": "data-tipid"}]})
        await expect_code(
            stack.site.grid(title_request("数据"), FakeOp(on_verification="skip")), "VERIFICATION_SKIPPED"
        )


# --- soft blocks through the server (DESIGN.md "Soft blocks") ------------------------------------


async def _call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with asyncio.timeout(STEP_TIMEOUT):
        result = await client.call_tool(tool, args)
    assert not result.is_error, (tool, result.structured_content or result.content)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _finish(client: Any, record: dict[str, Any]) -> dict[str, Any]:
    async with asyncio.timeout(STEP_TIMEOUT * 3):
        while record["status"] in ("running", "awaiting_user"):
            record = await _call(
                client, "operation_status", {"operation_id": record["operation_id"], "wait_seconds": 20}
            )
    return record


STRUCTURED = {
    "expression": {"field": "title", "value": "研究"},
    "limit": 100,
    "options": {"max_pages": 3, "candidate_target": 150, "freshness": "live"},
}


def page_posts(sim: SimServer) -> list[tuple[str, int, str | None]]:
    """(pageNum, rows, fault) of the replayed grid POSTs (the capture click's own POST left out)."""
    return [
        (e.params["pageNum"], e.params.get("rows", -1), e.fault)
        for e in sim.requests_for(GRID, "POST")
        if e.params.get("pageSize") == "50"
    ]


async def test_a_soft_blocked_later_page_stops_the_search_instead_of_ending_it_and_continue_reads_it(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    # Replays 1 page 1, 2 page 2 and 3 its re-check: both answered "0 results". Counted apart from
    # the capture click (its QueryJson names the page's boxes), which races the replays.
    sim.set_scenario(
        {"faults": [{"path": GRID, "kind": "soft_block", "from": 2, "count": 2, "form_lacks": "data-tipid"}]}
    )
    settings = sim_settings(tmp_path, sim.origin, browser_executable, inline_wait_seconds=0.0)
    async with in_memory_server(settings) as (client, services):
        services.pipeline.engine.soft_block_pause = 0.05
        stopped = await _finish(client, await _call(client, "structured_search", STRUCTURED))
        assert [e["code"] for e in stopped["errors"]] == ["SITE_UNAVAILABLE"], stopped
        assert stopped["errors"][0]["details"]["reason"] == "soft_block"
        assert page_posts(sim) == [("1", 50, None), ("2", 0, "soft_block"), ("2", 0, "soft_block")]

        cont = await _call(
            client, "operation_control", {"action": "continue", "operation_id": stopped["operation_id"]}
        )
        done = await _finish(client, cont["operation"])
    assert done["status"] == "completed", done["errors"]
    assert [p for p, _, _ in page_posts(sim)] == ["1", "2", "2", "2", "3"]  # page 2 asked again, page 1 not
    assert done["result"]["candidate_count"] == 150


async def test_a_soft_block_that_lifts_on_the_recheck_costs_one_request(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    # the second replayed page, counted apart from the capture click (its QueryJson names the
    # page's boxes, `data-tipid`): the two race on different connections
    sim.set_scenario(
        {"faults": [{"path": GRID, "kind": "soft_block", "at": [2], "form_lacks": "data-tipid"}]}
    )
    settings = sim_settings(tmp_path, sim.origin, browser_executable, inline_wait_seconds=0.0)
    async with in_memory_server(settings) as (client, services):
        services.pipeline.engine.soft_block_pause = 0.05
        done = await _finish(client, await _call(client, "structured_search", STRUCTURED))
    assert done["status"] == "completed", done["errors"]
    assert [(p, f) for p, _, f in page_posts(sim)] == [
        ("1", None),
        ("2", "soft_block"),
        ("2", None),
        ("3", None),
    ]
    assert done["result"]["candidate_count"] == 150


async def test_citation_api_403_slider_from_a_fresh_profile_is_solved_and_the_list_read(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    # docs/citation-api.md: the citation API answers a verification like the grid (403 + -403 JSON).
    # A fresh profile's work tab stands on no CNKI page: it comes in through the home page first, or
    # the loader's request would carry no session cookie (a same-site cookie from about:blank).
    api = "/restapi/citation-api/v1/literature/citations"
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        sim.set_scenario({"faults": [{"path": api, "kind": "verification_403", "at": [1]}]})
        page, op, _ = await solved_by_a_person(
            stack, lambda op: stack.site.citation_list(sim.links.detail("r0306"), "citations", "CJFDREF", 11, op)
        )
        counts = await stack.site.citation_metrics(sim.links.detail("r0306"), op)
    assert page.total == 19 and page.start == 11 and len(page.items) == 9
    assert all(i.detail_url and i.filename for i in page.items)
    assert counts["citations"] == 25
    assert op.transitions == ["awaiting_user", "running"]
    assert [e.params["valid"] for e in sim.requests_for(VERIFY)] == [True]
    assert [e.status for e in sim.requests_for(api)][-1] == 200
    assert visits(sim)[0] == ("GET", "/", 200)


@pytest.mark.parametrize("what", ["citations", "detail"])
async def test_the_answer_a_solved_slider_returns_to_is_used_not_asked_again(
    sim: SimServer, tmp_path: Path, browser_executable: str, what: str
) -> None:
    # Solved, the slider sends the person's tab back to the URL the request asked for (returnUrl):
    # that answer is the request's, and it was asked again (the citation list page twice).
    api = "/restapi/citation-api/v1/literature/citations"
    path = api if what == "citations" else DETAIL
    async with site_stack(sim_settings(tmp_path, sim.origin, browser_executable)) as stack:
        row = (await stack.site.grid(title_request("违约金"))).rows[0]
        sim.set_scenario({"faults": [{"path": path, "kind": "verification_403", "at": [1]}]})
        if what == "citations":
            page, op, _ = await solved_by_a_person(
                stack, lambda op: stack.site.citation_list(sim.links.detail("r0306"), "citations", "CJFDREF", 11, op)
            )
            assert page.total == 19 and len(page.items) == 9
        else:
            detail, op, _ = await solved_by_a_person(stack, lambda op: stack.site.detail(row.detail_url or "", op))
            assert detail.title == row.title
    assert op.transitions == ["awaiting_user", "running"]
    # the loader's 403, the tab's 403, the site's return after the person solved it: nothing more
    assert [e.status for e in sim.requests_for(path)] == [403, 403, 200]
