"""Login walls and a login the site dropped, THROUGH THE MCP CLIENT: the server built by Services
over the real CnkiSite and one headless Chromium (one per module) against the simulator with
downloads behind a login. The test plays the person on the login page the product opened.

Covered: a download skipped at a login wall settles its click (no SIDE_EFFECT_UNCERTAIN after the
person logs in) and tells the caller to log in; a login the site dropped is not taken from an old
page (login without force asks the site, a login wall updates the cached identity); a skipped
download after the drop ends `skipped` at once and leaves no login tab; a forced login after the
drop ends when the person logs in on the tab the product opened; a login tab the person closed
before a resume is replaced by a fresh read of the site on a tab of its own, not the work tab's
old page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from tests.browser.test_server_read_download_faults import App, awaiting, module_app, only_error
from tests.site_stack import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ORDER = "/bar/download/order"
ADV = "/kns8s/AdvSearch"
LOGIN_PAGE = "/login/"
SUBMIT = "/login/submit"
WALLED = {"require_login_for": ["download"], "accounts": {"reader01": "secret"}}


@pytest.fixture(scope="module")
async def app_module(
    _sim_server_session: SimServer, tmp_path_factory: pytest.TempPathFactory, browser_executable: str
) -> AsyncIterator[App]:
    data_dir = tmp_path_factory.mktemp("server-login") / "data"
    async with module_app(_sim_server_session, data_dir, browser_executable) as app:
        yield app


@pytest.fixture
async def app(app_module: App, sim_server: SimServer) -> AsyncIterator[App]:
    """The module's server; downloads need a login; the simulator is reset around each test (its
    login sessions too: a browser still holding a login cookie then meets a dropped login)."""
    sim_server.set_scenario(WALLED)
    yield app_module


async def login_tabs(app: App) -> list[str]:
    ctx = await app.services.host.ensure()
    return [p.url for p in ctx.pages if not p.is_closed() and LOGIN_PAGE in p.url]


async def order_requests(app: App) -> list[object]:
    """The order requests this server's browser sent. The simulator is the session's, shared with
    every module before this one: the extra order request CI saw here was the previous module's
    30 s order (test_server_read_download_faults.py, latency rule) answered and logged during this
    test; reset() now drops such a late entry, and this count keeps to this server's clicks."""
    ctx = await app.services.host.ensure()
    mine = {c.get("value") for c in await ctx.cookies() if c.get("name") == "Ecp_ClientId"}
    return [e for e in app.sim.requests_for(ORDER, "GET") if e.client in mine]


async def person_logs_in(app: App, started: dict[str, Any]) -> dict[str, Any]:
    """`login` waits for the person, who logs in on the tab it opened; the record at its end."""
    waiting = await app.follow(started, until=awaiting)
    assert app.services.gate.active_kind == "login", waiting
    tabs = await login_tabs(app)
    assert len(tabs) == 1, tabs  # only the login tool's own tab
    await log_in(await app.tab(LOGIN_PAGE), "reader01", "secret")
    return await app.follow(waiting)


async def logged_in(app: App) -> None:
    """The person logs in through `login`, and session_status reads the header while logged in."""
    done = await person_logs_in(app, await app.record("login", {}))
    assert done["status"] == "completed" and done["result"]["personal"] == "authenticated", done
    status = await app.call("session_status", {"refresh": True})
    if status["operation"] is not None:  # not over within the call (the inline wait is 0)
        status = (await app.follow(status["operation"]))["result"]
    assert status["personal"] == "authenticated", status


async def test_download_skipped_at_a_login_wall_is_settled_and_downloads_once_logged_in(app: App) -> None:
    ref = await app.ref("r0040")
    skipped = await app.run("download_paper", {"record_ref": ref, "on_verification": "skip", "wait_seconds": 5})
    assert skipped["status"] == "skipped", skipped
    assert only_error(skipped, "VERIFICATION_SKIPPED")["details"]["gate"] == "login"
    assert "login" in (skipped["next_step"] or "") and "download_paper" in skipped["next_step"], skipped
    assert app.sim.requests_for(LOGIN_PAGE, "GET") and len(await order_requests(app)) == 1
    # the click was answered by the login page: no file, no charge, nothing uncertain
    assert [c.outcome for c in app.services.store.clicks_for(ref)] == ["skipped"]
    assert app.services.store.uncertain_click(ref) is None
    assert await login_tabs(app) == []

    await logged_in(app)
    done = await app.completed("download_paper", {"record_ref": ref})
    assert done["result"]["source"] == "download" and done["result"]["format"] == "pdf", done
    assert len(await order_requests(app)) == 2  # clicked again, without retry=true


async def test_login_without_force_asks_the_site_after_it_dropped_the_login(app: App) -> None:
    await logged_in(app)
    before = await app.call("session_status", {})
    app.sim.forget_logins()
    since = len(app.sim.requests)

    # the work tab still shows the person: the live session is read before anything is claimed,
    # and the login waits for the person instead of answering from the old page
    waiting = await app.follow(await app.record("login", {}), until=awaiting)
    assert any(e.path.startswith(ADV) for e in app.sim.requests[since:]), app.sim.requests[since:]
    done = await person_logs_in(app, waiting)
    assert done["status"] == "completed" and done["result"]["personal"] == "authenticated", done
    assert [e.params.get("ok") for e in app.sim.requests_for(SUBMIT, "POST")] == [True, True]
    assert datetime.fromisoformat(done["result"]["observed_at"]) > datetime.fromisoformat(before["observed_at"])


async def test_skip_after_the_site_dropped_the_login_ends_skipped_and_marks_the_identity(app: App) -> None:
    ref = await app.ref("r0041")
    await logged_in(app)  # the work tab now shows the person as logged in
    app.sim.forget_logins()

    skipped = await app.run("download_paper", {"record_ref": ref, "on_verification": "skip", "wait_seconds": 5})
    assert skipped["status"] == "skipped", skipped
    assert only_error(skipped, "VERIFICATION_SKIPPED")["details"]["gate"] == "login"
    assert [c.outcome for c in app.services.store.clicks_for(ref)] == ["skipped"]
    assert await login_tabs(app) == []  # the login page the click opened was closed

    cached = await app.call("session_status", {})
    assert cached["cached"] is True and cached["personal"] == "not_observed", cached
    assert cached["evidence_source"] == "login_wall", cached


async def test_forced_login_after_the_site_dropped_the_login_ends_when_the_person_logs_in(app: App) -> None:
    await logged_in(app)
    app.sim.forget_logins()

    done = await person_logs_in(app, await app.record("login", {"force": True}))
    assert done["status"] == "completed", done
    assert done["result"]["personal"] == "authenticated", done
    assert [e.params.get("ok") for e in app.sim.requests_for(SUBMIT, "POST")] == [True, True]
    assert app.services.gate.active_kind is None



async def test_login_tab_closed_then_resumed_reads_the_site_now_on_a_tab_of_its_own(app: App) -> None:
    await logged_in(app)  # the work tab shows the person as logged in
    app.sim.forget_logins()
    work = await app.services.host.work_page()
    marker = await work.evaluate("() => (window.__work_tab_marker = Math.random())")

    waiting = await app.follow(await app.record("login", {"force": True}), until=awaiting)
    await (await app.tab(LOGIN_PAGE)).close()  # the person closes the login tab without logging in
    await app.call("operation_control", {"action": "resume", "operation_id": waiting["operation_id"]})
    done = await app.follow(waiting)

    # who the site says now, not the work tab's old page (the site dropped the login)
    assert done["status"] == "completed" and done["result"]["personal"] != "authenticated", done
    # read on a tab of the login's own, closed afterwards; the work tab (whose in-page requests
    # a search may have in flight) was not touched
    assert await work.evaluate("() => window.__work_tab_marker") == marker
    ctx = await app.services.host.ensure()
    assert [p for p in ctx.pages if not p.is_closed() and p is not work] == []
