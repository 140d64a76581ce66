"""CnkiSite against the simulator in a real headless Chromium: template capture, grid replay with
cursors, detail/journal fetch without rendering and the render fallback, fault retries, token
expiry with relocation, a verification and a login solved by a "person", and header identity."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import title_key
from cnki_mcp.models import GridHead, GridPage, IdentityKind
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.backend import GridRequest, SortOrder
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from tests.site_stack import (
    STEP_TIMEOUT,
    FakeOp,
    fill_login,
    log_in,
    page_form_logged,
    page_forms,
    sim_settings,
    site_stack,
    solve_vericode,
    submit_login,
    tab_with,
)

pytestmark = pytest.mark.browser

GRID = "/kns8s/brief/grid"
DETAIL = "/kcms2/article/abstract"


@dataclass
class SimClock:
    """The simulator's clock: real monotonic time plus an offset tests can push forward."""

    offset: float = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


@dataclass
class Env:
    sim: SimServer
    sim_clock: SimClock
    site: CnkiSite
    host: BrowserHost
    limiter: Limiter
    gate: HumanGate
    corpus: Corpus


@pytest.fixture(scope="module")
def sim_env() -> Iterator[tuple[SimServer, SimClock]]:
    clock = SimClock()
    server = SimServer(clock=clock).start()
    yield server, clock
    server.stop()


@pytest.fixture(scope="module")
async def env_module(
    sim_env: tuple[SimServer, SimClock], tmp_path_factory: pytest.TempPathFactory, browser_executable: str
) -> AsyncIterator[Env]:
    sim, sim_clock = sim_env
    settings = sim_settings(tmp_path_factory.mktemp("site-data"), sim.origin, browser_executable)
    async with site_stack(settings, render_timeout=12.0) as stack:
        yield Env(sim, sim_clock, stack.site, stack.host, stack.limiter, stack.gate, sim.corpus)


@pytest.fixture
async def env(env_module: Env) -> AsyncIterator[Env]:
    env_module.sim.set_scenario(None)
    env_module.sim.reset()
    env_module.site.cursors.clear()  # the server forgot its cursors
    yield env_module
    env_module.sim.set_scenario(None)


def title_subject(term: str, operator: str = "FUZZY") -> dict[str, Any]:
    item = {
        "Key": "t",
        "Title": "篇名",
        "Logic": 0,
        "Field": "TI",
        "Operator": operator,
        "Value": term,
        "Value2": "",
    }
    branch = {"Key": "t", "Title": "", "Logic": 0, "Items": [item], "ChildItems": []}
    return {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [branch]}


def request(term: str = "研究", **kw: Any) -> GridRequest:
    return GridRequest(subject=title_subject(term), anchor=term, **kw)


def titles_containing(corpus: Corpus, term: str) -> list[Any]:
    return [r for r in corpus.records if term.casefold() in r.title.casefold()]


async def captured(env: Env) -> GridPage:
    """A first grid call whose template capture, if it made one, is over: the page's own POST
    logged too, so it neither lands in a later count nor takes a fault rule's first turn."""
    since = len(env.sim.requests)
    page = await env.site.grid(request())
    if any(e.path.startswith("/kns8s/AdvSearch") for e in env.sim.requests[since:]):
        await page_form_logged(env.sim, since)
    return page


async def expect_code(coro: Any, code: str) -> CnkiError:
    with pytest.raises(CnkiError) as info:
        await coro
    assert info.value.code == code, repr(info.value)
    return info.value


# --- template and grid ------------------------------------------------------------------


async def test_template_is_captured_once_and_pages_replay_with_cursor(env: Env) -> None:
    env.site.drop_template()
    pages = [await env.site.grid(request(page=p)) for p in (1, 2, 3)]
    again = await env.site.grid(request(page=1))

    expected = titles_containing(env.corpus, "研究")
    assert len(expected) > 100  # three pages of 50 exist
    assert [p.total for p in pages] == [len(expected)] * 3
    assert [p.page for p in pages] == [1, 2, 3]
    assert [len(p.rows) for p in pages] == [50, 50, 50]
    ids = {r.title for p in pages for r in p.rows}
    assert ids <= {r.title for r in expected}
    assert [r.native for r in again.rows] == [r.native for r in pages[0].rows]

    assert len(env.sim.requests_for("/kns8s/AdvSearch", "GET")) == 1
    await page_form_logged(env.sim)  # the click's own POST may land after the replays
    posts = env.sim.requests_for(GRID, "POST")
    assert len(page_forms(env.sim)) == 1  # the page's own POST, taken as the template
    assert [e for e in posts if e.params.get("pageSize") != "50"] == page_forms(env.sim)
    replayed = [e for e in posts if e.params.get("pageSize") == "50"]
    assert [e.params["pageNum"] for e in replayed] == ["1", "2", "3", "1"]
    assert "turnpage" not in replayed[0].params
    assert replayed[1].params["turnpage"] == pages[0].turnpage
    assert replayed[2].params["turnpage"] == pages[1].turnpage
    assert all(e.status == 200 for e in replayed)


async def test_answered_grid_pages_are_the_pacing_latency_and_other_requests_are_not(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    noted: list[float] = []
    monkeypatch.setattr(env.limiter, "note_latency", noted.append)
    first = await env.site.grid(request(page=1))
    await env.site.grid(request(page=2))
    assert len(noted) == 2 and all(0 < s < 30 for s in noted)  # one sample per answered page
    ids = [r.export_id for r in first.rows[:3] if r.export_id]
    assert ids and await env.site.export_records(ids)
    assert len(noted) == 2  # an export is no grid page
    monkeypatch.undo()
    await env.site.grid(request(page=1))
    assert env.limiter.pacing() is not None


async def test_a_page_asked_on_the_head_is_asked_before_the_answered_page_is_returned(env: Env) -> None:
    await captured(env)  # the template is captured
    heads: list[GridHead] = []
    second: list[asyncio.Task[GridPage]] = []

    def follow(head: GridHead) -> bool:
        heads.append(head)
        second.append(asyncio.ensure_future(env.site.grid(request(page=2))))
        return True

    asked = env.limiter.started + env.limiter.waiting
    first = await env.site.grid(request(page=1), follow=follow)
    assert env.limiter.started + env.limiter.waiting == asked + 2  # page 2 already took its turn
    assert heads == [GridHead.of(first)]  # the head says what the parsed page says
    page2 = await second[0]
    assert page2.page == 2 and len(page2.rows) == 50
    replayed = [e for e in env.sim.requests_for(GRID, "POST") if e.params.get("pageSize") == "50"]
    assert [e.params["pageNum"] for e in replayed][-2:] == ["1", "2"]
    assert replayed[-1].params["turnpage"] == first.turnpage  # the cursor the head put in the cache


async def test_a_page_without_rows_gives_no_head(env: Env) -> None:
    heads: list[GridHead] = []
    page = await env.site.grid(request("绝无此词的题名"), follow=lambda head: heads.append(head) is None)
    assert page.zero_results and heads == []


async def test_page_without_cached_cursor_fetches_earlier_pages_first(env: Env) -> None:
    page3 = await env.site.grid(request(page=3))
    assert page3.page == 3 and len(page3.rows) == 50
    replayed = [e for e in env.sim.requests_for(GRID, "POST") if e.params.get("pageSize") == "50"]
    assert [e.params["pageNum"] for e in replayed] == ["1", "2", "3"]


async def test_page_with_a_cursor_kept_by_the_caller_is_fetched_alone_in_a_fresh_site(env: Env) -> None:
    await captured(env)
    page2 = await env.site.grid(request(page=2))
    assert page2.turnpage
    env.site.cursors.clear()  # a new process: the site's own cursors are gone, CNKI's are not
    before = len(env.sim.requests_for(GRID, "POST"))
    page3 = await env.site.grid(request(page=3, cursor=page2.turnpage))
    assert page3.page == 3 and len(page3.rows) == 50
    replayed = env.sim.requests_for(GRID, "POST")[before:]
    assert [e.params["pageNum"] for e in replayed] == ["3"]
    assert replayed[0].params["turnpage"] == page2.turnpage and replayed[0].status == 200


async def test_cursor_rejected_by_cnki_falls_back_to_fetching_earlier_pages(env: Env) -> None:
    await captured(env)  # the template exists; the site then forgets its cursors
    env.site.cursors.clear()
    before = len(env.sim.requests_for(GRID, "POST"))
    page3 = await env.site.grid(request(page=3, cursor="stale-cursor!!"))
    assert page3.page == 3 and len(page3.rows) == 50
    replayed = env.sim.requests_for(GRID, "POST")[before:]
    assert [e.params["pageNum"] for e in replayed] == ["3", "1", "2", "3"]
    assert [e.status for e in replayed] == [400, 200, 200, 200]


async def test_year_range_and_sort_are_honoured(env: Env) -> None:
    before = len(env.sim.requests_for(GRID, "POST"))
    result = await env.site.grid(request(year_from=2020, year_to=2022, sort=SortOrder.DATE_DESC))
    expected = [r for r in titles_containing(env.corpus, "研究") if r.year and 2020 <= r.year <= 2022]
    assert result.total == len(expected) > 0
    assert result.rows and all(r.year is not None and 2020 <= r.year <= 2022 for r in result.rows)
    dates = [r.date for r in result.rows]
    assert dates == sorted(dates, reverse=True)
    # the replay, not the AdvSearch page's own click (the template capture when this test is the
    # first to search), which may arrive after it: the click's form has no date boxes filled
    [replay] = [e for e in env.sim.requests_for(GRID, "POST")[before:] if e.params.get("years")]
    assert replay.params["sortField"] == "PT" and replay.params["years"] == [2020, 2022]


# --- detail and journal ------------------------------------------------------------------


async def test_detail_and_journal_are_fetched_without_rendering(env: Env) -> None:
    row = (await env.site.grid(request("违约金"))).rows[0]
    ctx = await env.host.ensure()
    tabs_before = len(ctx.pages)
    detail = await env.site.detail(row.detail_url or "")
    assert detail.title == row.title
    assert detail.abstract and detail.authors and detail.source == row.source
    assert row.source_url is not None
    journal = await env.site.journal(row.source_url, expected_source=row.source)
    assert journal.name == row.source
    assert len(ctx.pages) == tabs_before
    assert len(env.sim.requests_for(DETAIL, "GET")) == 1
    assert len(env.sim.requests_for("/knavi/detail", "GET")) == 1


@pytest.mark.parametrize(
    ("deaths", "temp_full", "code", "reason"),
    [(1, False, None, None), (2, False, "BROWSER_UNAVAILABLE", "browser_died"),
     (2, True, "BROWSER_UNAVAILABLE", "temp_disk_full")],
    ids=["once", "twice", "twice_temp_disk_full"],
)  # fmt: skip
async def test_a_detail_whose_browser_dies_under_it_is_asked_again_in_a_new_browser(
    env: Env, monkeypatch: pytest.MonkeyPatch, deaths: int, temp_full: bool, code: str | None, reason: str | None
) -> None:
    """The browser killed (or crashed) while a detail page is on its way: the request was never
    answered, so it is asked once more in the relaunched browser. It ended SITE_UNAVAILABLE
    (知网暂时不可用), which stopped a search's whole enrichment stage and blamed CNKI. A browser
    that dies again under the same page is the browser's failure (BROWSER_UNAVAILABLE), and a
    full temp directory, which kills it that way, is named."""
    from cnki_mcp.site import launch_error

    row = (await env.site.grid(request("违约金"))).rows[0]
    await env.host.ensure()
    generation = env.host.generation
    if temp_full:
        temp = launch_error.browser_temp_dir()
        monkeypatch.setattr(launch_error, "free_space", lambda folder: 0 if folder == temp else 10 * 1024**3)
    load = env.site._load
    killed: list[int] = []

    async def kill_then_load(url: str, op: Any) -> Any:
        if len(killed) < deaths:
            pid = env.host.status()["process_id"]
            assert pid is not None
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
        return await load(url, op)

    monkeypatch.setattr(env.site, "_load", kill_then_load)
    if code is None:
        detail = await env.site.detail(row.detail_url or "")
        assert detail.title == row.title
    else:
        with pytest.raises(CnkiError) as caught:
            await env.site.detail(row.detail_url or "")
        assert (caught.value.code, caught.value.details["reason"]) == (code, reason)
    assert len(killed) == deaths
    assert env.host.generation == generation + 1  # relaunched once, never after the second death


async def test_script_rendered_detail_falls_back_to_a_rendered_tab(env: Env) -> None:
    row = (await env.site.grid(request("违约金"))).rows[1]
    env.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "script_rendered_detail", "count": 2}]})
    detail = await env.site.detail(row.detail_url or "")
    assert detail.title == row.title and detail.abstract
    gets = env.sim.requests_for(DETAIL, "GET")
    assert [e.fault for e in gets] == ["script_rendered_detail", "script_rendered_detail"]


# --- faults and retries -------------------------------------------------------------------


async def test_rate_limit_and_server_error_bursts_are_retried_with_backoff(env: Env) -> None:
    await captured(env)  # template captured before the faults start counting
    env.sim.set_scenario(
        {"faults": [{"path": GRID, "kind": "429", "at": [1]}, {"path": GRID, "kind": "503", "at": [2]}]}
    )
    env.sim.log.clear()
    before = env.limiter.backoff
    result = await env.site.grid(request("数据"))
    assert result.rows
    assert env.limiter.backoff > max(1.0, before)
    posts = env.sim.requests_for(GRID, "POST")
    assert [(e.status, e.fault) for e in posts] == [(429, "429"), (503, "503"), (200, None)]


async def test_a_grid_answer_cut_short_is_asked_again_without_relaunching_the_browser(env: Env) -> None:
    # The answer's status arrived and its body broke off (docs/site-behaviour.md): the site failed,
    # not the browser, which kept every other operation's tabs; it was relaunched.
    await captured(env)
    generation = env.host.generation
    env.sim.set_scenario({"faults": [{"path": GRID, "kind": "truncated", "at": [1]}]})
    env.sim.log.clear()
    result = await env.site.grid(request("数据"))
    assert result.rows
    posts = env.sim.requests_for(GRID, "POST")
    assert [(e.status, e.fault) for e in posts] == [(200, "truncated"), (200, None)]
    assert env.host.generation == generation and not env.sim.requests_for("/kns8s/AdvSearch")


async def test_a_search_page_cut_short_is_opened_once_more_and_the_template_captured(env: Env) -> None:
    # Chromium never fires DOMContentLoaded for a cut document: AdvSearch waited out the 30 s
    # navigation timeout and the search ended QUERY_TEMPLATE_UNAVAILABLE.
    await captured(env)
    env.site.drop_template()
    env.sim.set_scenario({"faults": [{"path": "/kns8s/AdvSearch", "kind": "truncated", "at": [1]}]})
    env.sim.log.clear()
    result = await env.site.grid(request("数据"))
    assert result.rows
    assert [e.fault for e in env.sim.requests_for("/kns8s/AdvSearch", "GET")] == ["truncated", None]


async def test_a_search_page_cut_short_every_time_is_site_unavailable_not_a_template_failure(env: Env) -> None:
    await captured(env)
    env.site.drop_template()
    env.sim.set_scenario({"faults": [{"path": "/kns8s/AdvSearch", "kind": "truncated"}]})
    await expect_code(env.site.grid(request("数据")), "SITE_UNAVAILABLE")


async def test_a_detail_answer_cut_short_is_asked_again_not_read_as_an_empty_page(env: Env) -> None:
    # Network.loadNetworkResource names it net::ERR_CONTENT_LENGTH_MISMATCH with status 200 and no
    # body; it was taken for an HTTP error answer, parsed empty: PARSER_UNSUPPORTED, never retried.
    row = (await env.site.grid(request("违约金"))).rows[2]
    env.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "truncated", "at": [1]}]})
    detail = await env.site.detail(row.detail_url or "")
    assert detail.title == row.title and detail.abstract
    assert [e.fault for e in env.sim.requests_for(DETAIL, "GET")] == ["truncated", None]


async def test_a_detail_answer_cut_short_every_time_is_site_unavailable(env: Env) -> None:
    row = (await env.site.grid(request("违约金"))).rows[3]
    env.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "truncated"}]})
    await expect_code(env.site.detail(row.detail_url or ""), "SITE_UNAVAILABLE")
    assert len(env.sim.requests_for(DETAIL, "GET")) == 3  # the 5xx rule: two waits, the third is returned


async def test_a_detail_the_site_sends_to_its_overseas_host_is_site_unavailable_overseas_site(env: Env) -> None:
    # Network.loadNetworkResource follows the redirect without saying where it ended: the overseas
    # host's page was read as the detail page (here, where it does not resolve: `network_cause: dns`,
    # 无法解析知网的域名, asked once). The page is opened once in a tab, whose navigation tells.
    row = (await env.site.grid(request("违约金"))).rows[4]
    env.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "overseas"}]})
    error = await expect_code(env.site.detail(row.detail_url or ""), "SITE_UNAVAILABLE")
    assert (error.details["reason"], error.details["host"], error.retryable) == (
        "overseas_site", "chn.oversea.cnki.net", False
    )
    assert len(env.sim.requests_for(DETAIL, "GET")) == 2  # the load, and the tab that saw the redirect


async def test_third_rate_limited_answer_is_returned_as_the_error(env: Env) -> None:
    await captured(env)
    env.sim.set_scenario({"faults": [{"path": GRID, "kind": "429"}]})
    env.sim.log.clear()
    await expect_code(env.site.grid(request("数据")), "RATE_LIMITED")
    assert len(env.sim.requests_for(GRID, "POST")) == 3


async def test_pagination_mismatch_is_a_typed_error(env: Env) -> None:
    await captured(env)
    env.sim.set_scenario({"faults": [{"path": GRID, "kind": "pagination_mismatch", "at": [1]}]})
    await expect_code(env.site.grid(request("数据")), "PAGINATION_MISMATCH")


async def test_temporarily_empty_first_answer_is_retried_after_the_wait_it_asks_for(env: Env) -> None:
    await captured(env)
    env.sim.set_scenario({"faults": [{"path": GRID, "kind": "temporarily_empty", "at": [1]}]})
    real = env.site._clock
    slept: list[float] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        async def sleep(self, seconds: float) -> None:
            slept.append(seconds)
            await real.sleep(seconds)

    env.site._clock = Recording()  # type: ignore[assignment]
    try:
        result = await env.site.grid(request("数据"))
    finally:
        env.site._clock = real
    assert result.rows and not result.zero_results
    assert env.site._retry_waits[0] in slept  # 暂无数据，请稍后重试: the retry waits


async def test_expired_token_raises_or_relocates_by_exact_title(env: Env) -> None:
    env.sim.set_scenario({"token_ttl": 60})
    unique = next(
        r
        for r in (await env.site.grid(request("数据"))).rows
        if sum(title_key(x.title) == title_key(r.title) for x in env.corpus.records) == 1
    )
    env.sim_clock.offset += 120  # the server's clock moved past the token's life
    await expect_code(env.site.detail(unique.detail_url or ""), "LOCATOR_EXPIRED")

    detail = await env.site.detail(unique.detail_url or "", expected_title=unique.title)
    assert detail.title == unique.title
    exact = [
        e
        for e in env.sim.requests_for(GRID, "POST")
        if any(c["field"] == "TI" and c["operator"] == "DEFAULT" for c in e.params.get("query", []))
    ]
    assert len(exact) == 1
    assert exact[0].params["query"][0]["value"].strip("\"'") == unique.title


async def test_relocation_of_a_shared_title_is_ambiguous_unless_first_author_given(env: Env) -> None:
    by_key: dict[str, list[Any]] = {}
    for r in env.corpus.records:
        by_key.setdefault(title_key(r.title), []).append(r)
    twins = next(v for v in by_key.values() if len(v) == 2 and v[0].authors[0].name != v[1].authors[0].name)
    error = await expect_code(env.site.detail_by_title(twins[0].title), "IDENTITY_AMBIGUOUS")
    # the error names both papers (not stored: no record_ref) by what tells them apart
    shown = error.details["candidates"]
    assert error.details["count"] == 2 and {c["record_ref"] for c in shown} == {None}
    assert sorted(c["filename"] for c in shown) == sorted(r.native_filename for r in twins)
    assert sorted(c["authors"][0] for c in shown) == sorted(r.authors[0].name for r in twins)
    detail = await env.site.detail_by_title(twins[1].title, first_author=twins[1].authors[0].name)
    assert detail.authors[0].name == twins[1].authors[0].name
    await expect_code(env.site.detail_by_title("完全不存在的题名甲乙丙"), "DOCUMENT_NOT_FOUND")


# --- human steps --------------------------------------------------------------------------


async def test_grid_verification_is_shown_in_the_search_page_and_solved_by_the_person(env: Env) -> None:
    await captured(env)
    env.sim.set_scenario({"faults": [{"path": GRID, "kind": "verification", "at": [1]}]})
    op = FakeOp()
    work = await env.host.work_page()

    async def person() -> None:
        await op.waiting.wait()
        await solve_vericode(work)  # the fragment sits in the search page's #briefBox

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        result = await env.site.grid(request("数据"), op)
    await solver
    assert result.rows
    assert op.transitions == ["awaiting_user", "running"]
    assert env.sim.requests_for("/verify/solve", "POST")
    assert len(env.sim.requests_for("/kns8s/AdvSearch", "GET")) >= 1  # template recaptured


@pytest.mark.parametrize("closes_first", [False, True], ids=["logs_in", "closes_the_login_tab_first"])
async def test_login_required_detail_waits_for_the_person_to_log_in(env: Env, closes_first: bool) -> None:
    # `closes_first`: the person closes the login page without logging in. The step went on
    # waiting 20 minutes for a page that no longer existed (`show` raised nothing); it ends now as
    # a closed slider's does: the retry meets the login wall again and shows a login page once more.
    row = (await env.site.grid(request("违约金"))).rows[2]
    walls = [1, 2] if closes_first else [1]
    env.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "login_required", "at": walls}]})
    op = FakeOp()
    ctx = await env.host.ensure()

    async def person() -> None:
        await op.waiting.wait()
        assert env.gate.active_kind == "login"
        if closes_first:
            op.waiting.clear()
            await tab_with(ctx, "/login").close()
            await op.waiting.wait()
        await log_in(tab_with(ctx, "/login"), "reader01", "secret")

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        detail = await env.site.detail(row.detail_url or "", op)
        await solver
    assert detail.title == row.title
    assert op.transitions == ["awaiting_user", "running"] * len(walls)
    assert [e.params.get("ok") for e in env.sim.requests_for("/login/submit", "POST")] == [True]


def _closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_login_at_a_remote_access_url_nothing_answers_fails_at_once_without_a_person(env: Env) -> None:
    op = FakeOp()
    url = f"https://127.0.0.1:{_closed_port()}/webvpn?ticket=secret"
    with pytest.raises(CnkiError) as info:
        async with asyncio.timeout(STEP_TIMEOUT):
            await env.site.login(op, remote_access_url=url, force=True)
    assert info.value.code == "SITE_UNAVAILABLE" and info.value.retryable
    assert info.value.details["net_error"] == "net::ERR_CONNECTION_REFUSED"
    assert "secret" not in str(info.value.details)
    assert op.transitions == [] and env.gate.active_kind is None  # nobody was asked to wait
    ctx = await env.host.ensure()
    assert not [p for p in ctx.pages if not p.is_closed() and "webvpn" in p.url]


async def test_identity_reads_anonymous_institution_and_personal(env: Env) -> None:
    anonymous = await env.site.identity(refresh=True)
    assert anonymous.ready and anonymous.personal is IdentityKind.NOT_OBSERVED and not anonymous.institutions

    env.sim.set_scenario({"identity": {"institution": "某某大学"}})
    institution = await env.site.identity(refresh=True)
    assert institution.institutions == ["某某大学"]
    assert institution.personal is IdentityKind.NOT_OBSERVED

    env.sim.set_scenario(None)
    work = await env.host.work_page()
    await work.goto(env.sim.url("/login/?ReturnURL=" + env.sim.url("/kns8s/AdvSearch")))
    await fill_login(work, "reader02", "pw")
    async with work.expect_navigation():
        await submit_login(work)
    personal = await env.site.identity()
    assert personal.personal is IdentityKind.AUTHENTICATED
    assert personal.personal_name == "reader02"


async def test_template_is_recaptured_after_the_browser_was_recovered(env: Env) -> None:
    await captured(env)
    env.sim.log.clear()
    generation = env.host.generation
    await env.host.recover()
    result = await env.site.grid(request("数据"))
    assert result.rows
    await page_form_logged(env.sim)  # the recapture's own POST, before the next test's log
    assert env.host.generation == generation + 1
    assert len(env.sim.requests_for("/kns8s/AdvSearch", "GET")) == 1
    assert env.site.template is not None


async def test_skip_policy_turns_a_verification_into_a_typed_error(env: Env) -> None:
    await captured(env)
    env.sim.set_scenario({"faults": [{"path": GRID, "kind": "verification", "at": [1]}]})
    op = FakeOp(on_verification="skip")
    await expect_code(env.site.grid(request("数据"), op), "VERIFICATION_SKIPPED")
    assert op.transitions == [] and not env.gate.active and not env.limiter.held


async def test_detail_verification_is_shown_in_a_tab_and_solved_by_the_person(env: Env) -> None:
    row = (await env.site.grid(request("违约金"))).rows[3]
    env.sim.set_scenario({"faults": [{"path": DETAIL, "kind": "verification", "at": [1]}]})
    op = FakeOp()
    ctx = await env.host.ensure()

    async def person() -> None:
        await op.waiting.wait()
        assert env.gate.active_kind == "challenge"
        tab = tab_with(ctx, "/verify/home")
        assert await tab.title() == "安全验证"
        await tab.click(".verify-fallback")

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        detail = await env.site.detail(row.detail_url or "", op)
    await solver
    assert detail.title == row.title
    assert op.transitions == ["awaiting_user", "running"]
    assert not any("/verify/" in p.url for p in ctx.pages)  # the tab opened for the person is closed


async def test_concurrent_grid_calls_share_one_capture(env: Env) -> None:
    env.site.drop_template()
    results = await asyncio.gather(*(env.site.grid(request(term)) for term in ("数据", "乡村", "模型")))
    for term, result in zip(("数据", "乡村", "模型"), results, strict=True):
        assert result.total == len(titles_containing(env.corpus, term))
    assert len(env.sim.requests_for("/kns8s/AdvSearch", "GET")) == 1


async def test_cnki_out_of_reach_is_site_unavailable_not_a_search_template_failure(
    tmp_path: Any, browser_executable: str
) -> None:
    # Offline (DNS, refused): it was QUERY_TEMPLATE_UNAVAILABLE 未能从高级检索页捕获检索请求 with the
    # browser's net::ERR_ text, where the same failure of any other request is SITE_UNAVAILABLE
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    settings = sim_settings(tmp_path / "data", f"http://127.0.0.1:{port}", browser_executable)
    async with site_stack(settings) as stack:
        with pytest.raises(CnkiError) as info:
            async with asyncio.timeout(STEP_TIMEOUT):
                await stack.site.grid(GridRequest(subject=title_subject("违约金"), anchor="违约金"), FakeOp())
    assert info.value.code == "SITE_UNAVAILABLE" and info.value.retryable
    assert info.value.details["network"] is True
