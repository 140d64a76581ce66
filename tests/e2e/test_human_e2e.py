"""Human steps end to end. The server runs IN-PROCESS here (the SDK's in-memory Client over
`build_server` with real Services: CnkiSite on headless Chromium) because the test plays the person
on the same machine: it must reach the browser page the gate shows, which a headless browser
inside a subprocess would hide. Everything else is the production path: the simulator serves the
verification and login pages and checks what the "person" submits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import DETAIL, GRID, InProcess, wait_op
from tests.site_stack import in_memory_server, log_in, sim_settings, solve_vericode

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Only the search page's own click names its boxes in QueryJson (`"Key":"input[data-tipid=…]"`).
PAGE_OWN = "data-tipid"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    server = SimServer().start()
    yield server
    server.stop()


@pytest.fixture
async def app(sim: SimServer, tmp_path: Path, browser_executable: str) -> AsyncIterator[InProcess]:
    sim.set_scenario(None)
    sim.reset()
    settings = sim_settings(
        tmp_path / "data", sim.origin, browser_executable, request_interval_ms=30, inline_wait_seconds=0.0
    )
    async with in_memory_server(settings) as (client, services):
        yield InProcess(client, services, sim)


def awaiting(r: dict[str, Any]) -> bool:
    assert r["status"] in ("running", "awaiting_user"), r
    return r["status"] == "awaiting_user"


async def test_the_verification_form_stays_when_the_page_own_search_answers_after_it(app: InProcess) -> None:
    """The search page draws its own click's answer (the template capture) into #briefBox
    whenever it arrives; here it arrives 2 s after the first replayed page asked for
    verification. The form must still be there for the person once that answer was drawn.
    (Without the wait in `CnkiSite`, 4 runs of 5 failed.) The rules name the click and the replay
    by form, not by arrival: the two travel on different connections and either may come first."""
    app.sim.set_scenario(
        {
            "faults": [{"path": GRID, "kind": "verification", "at": [1], "form_lacks": PAGE_OWN}],
            "latency": [{"path": GRID, "ms": 2000, "form_contains": PAGE_OWN}],
        }
    )
    started = await app.call(
        "search",
        {
            "query": "违约金过高时法院如何酌减",
            "concept_groups": [["违约金"], ["酌减", "调整"]],
            "options": {"max_pages": 1, "candidate_target": 20, "metadata": "basic"},
        },
    )
    waiting = await app.call(
        "operation_status", {"operation_id": started["operation_id"], "wait_seconds": 55}
    )
    assert waiting["status"] == "awaiting_user", waiting
    page = await app.services.host.work_page()
    # the page drew its own answer: the simulator page marks #briefBox `data-loading` from its
    # click until it has drawn the answer
    await page.wait_for_function("!document.querySelector('#briefBox').hasAttribute('data-loading')")
    assert len(app.sim.requests_for(GRID, "POST")) >= 2
    assert await page.locator("#briefBox form[name=vericodeForm]").count() == 1
    await solve_vericode(page)
    done = await wait_op(app.call, waiting)
    assert done["status"] == "completed", done["errors"]


async def test_grid_verification_pauses_the_search_until_the_person_solves_it(app: InProcess) -> None:
    # the first replayed page (not the capture click, which may arrive first or second)
    app.sim.set_scenario(
        {"faults": [{"path": GRID, "kind": "verification", "at": [1], "form_lacks": PAGE_OWN}]}
    )
    started = await app.call(
        "search",
        {
            "query": "违约金过高时法院如何酌减",
            "concept_groups": [["违约金"], ["酌减", "调整"]],
            "year_to": 2025,
            "options": {"max_pages": 1, "candidate_target": 20, "metadata": "basic"},
        },
    )
    op_id = started["operation_id"]
    # the long-poll returns as soon as the operation enters awaiting_user
    waiting = await app.call("operation_status", {"operation_id": op_id, "wait_seconds": 55})
    assert waiting["status"] == "awaiting_user", waiting
    assert "验证" in waiting["message"]
    assert app.services.gate.active_kind == "challenge"

    # already awaiting: the long-poll keeps waiting; the person's time is not charged
    again = await app.call("operation_status", {"operation_id": op_id, "wait_seconds": 1})
    assert again["status"] == "awaiting_user"
    assert again["active_seconds"] == waiting["active_seconds"]
    assert again["requests"] == waiting["requests"]

    # the person solves the vericode form the search page shows in #briefBox
    await solve_vericode(await app.services.host.work_page())

    done = await wait_op(app.call, waiting)
    assert done["status"] == "completed", done["errors"]
    assert done["result"]["candidate_count"] > 0
    assert [e.status for e in app.sim.requests_for("/verify/solve", "POST")]
    assert done["active_seconds"] >= again["active_seconds"]


async def test_login_tool_waits_for_the_person_and_resume_ends_a_forced_login(app: InProcess) -> None:
    before = await app.call("session_status", {})
    assert before["evidence_source"] == "not_checked"

    started = await app.call("login", {})
    waiting = await wait_op(app.call, started, until=awaiting)
    assert app.services.gate.active_kind == "login"
    tab = await app.tab("/login")  # the tab the login flow opened on the AdvSearch login entry
    await log_in(tab, "reader01", "secret")
    done = await wait_op(app.call, waiting)
    assert done["status"] == "completed", done["errors"]
    assert done["result"]["personal"] == "authenticated"
    assert app.services.host.cookies_path.exists()  # the session cookies were saved
    cached = await app.call("session_status", {})
    assert cached["cached"] is True and cached["personal"] == "authenticated"
    assert [e.params.get("ok") for e in app.sim.requests_for("/login/submit", "POST")] == [True]

    # already logged in and not forced: the identity at once, no login page opened
    login_pages = len(app.sim.requests_for("/login", "GET"))
    quick = await wait_op(app.call, await app.call("login", {}))
    assert quick["status"] == "completed" and quick["result"]["personal"] == "authenticated"
    assert len(app.sim.requests_for("/login", "GET")) == login_pages

    # forced: the same identity does not end the step; operation_control resume does
    forced = await wait_op(app.call, await app.call("login", {"force": True}), until=awaiting)
    resumed = await app.call(
        "operation_control", {"action": "resume", "operation_id": forced["operation_id"]}
    )
    assert resumed["action"] == "resume"
    final = await wait_op(app.call, resumed["operation"])
    assert final["status"] == "completed", final["errors"]
    assert final["result"]["personal"] == "authenticated"


async def test_login_required_on_a_detail_is_solved_through_the_login_flow(app: InProcess) -> None:
    record = next(r for r in app.sim.corpus.records if r.type == "期刊" and not r.online_first)
    app.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "login_required", "at": [1]}]})
    started = await app.call("get_metadata", {"titles": [record.title]})
    waiting = await wait_op(app.call, started, until=awaiting)
    assert app.services.gate.active_kind == "login"
    assert "登录" in waiting["message"]

    # the agent calls login, as the message says; the person logs in on the page shown
    login = await app.call("login", {})
    tab = await app.tab("/login")
    await log_in(tab, "reader02", "pw")

    done = await wait_op(app.call, waiting)
    assert done["status"] == "completed", done["errors"]
    [paper] = done["result"]["records"]
    assert paper["title"] == record.title and paper["abstract"] == record.abstract
    who = await wait_op(app.call, login)
    assert who["status"] == "completed", who["errors"]
    assert who["result"]["personal"] == "authenticated"
    assert [e.params.get("ok") for e in app.sim.requests_for("/login/submit", "POST")] == [True]
    details = app.sim.requests_for(DETAIL)
    # refused once; then the login page's return to the detail (in the person's tab), which is the
    # read: the detail page is not asked a third time
    assert [e.params.get("id") for e in details] == [record.id] * 2
    assert [e.fault for e in details] == ["login_required", None]
