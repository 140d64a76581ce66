"""read_online_html against the simulator in a real headless Chromium: the detail tab, the HTML阅读
click into a new tab, complete / trial / lazily loaded readers, the reader slider solved by a
"person" through the human gate, section paging and the 30-minute body cache."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import SystemClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import Paper
from cnki_mcp.reading_service import ReadingService
from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.reading import HtmlReader
from cnki_mcp.store import Store
from tests.site_stack import STEP_TIMEOUT, FakeOp, expect_code, sim_settings, site_stack, tab_with, wait_until

pytestmark = pytest.mark.browser

READER = "/reader/xml"


@dataclass
class Env:
    sim: SimServer
    host: BrowserHost
    site: CnkiSite
    gate: HumanGate
    reader: HtmlReader
    data_dir: Path


@pytest.fixture(scope="module")
async def env_module(
    _sim_server_session: SimServer, tmp_path_factory: pytest.TempPathFactory, browser_executable: str
) -> AsyncIterator[Env]:
    sim = _sim_server_session
    data_dir = tmp_path_factory.mktemp("read-data")
    async with site_stack(sim_settings(data_dir, sim.origin, browser_executable)) as stack:
        yield Env(sim, stack.host, stack.site, stack.gate, HtmlReader(stack.detail_tabs()), data_dir)


@pytest.fixture
async def env(env_module: Env, sim_server: SimServer) -> AsyncIterator[Env]:
    yield env_module


def paper_for(sim: SimServer, record_id: str) -> Paper:
    from cnki_mcp.models import Author

    rec = sim.corpus.by_id[record_id]
    return Paper(
        record_ref=f"rec_{record_id}aaaaaaaaaaaa",
        title=rec.title,
        authors=[Author(name=a.name) for a in rec.authors],
        locator=sim.links.detail(record_id),
    )


async def open_tabs(env: Env) -> int:
    ctx = await env.host.ensure()
    return len(ctx.pages)


async def test_complete_reader_opens_in_a_new_tab_and_every_heading_becomes_a_section(env: Env) -> None:
    rec = env.sim.corpus.by_id["r0001"]
    before = await open_tabs(env)
    async with asyncio.timeout(STEP_TIMEOUT):
        capture = await env.reader.read(paper_for(env.sim, "r0001"), FakeOp())
    page = capture.page
    assert not capture.same_tab
    assert page.title == rec.title and not page.trial
    assert [s.title for s in page.sections][: len(rec.fulltext)] == [s.heading for s in rec.fulltext]
    assert page.coverage.missing_catalog_headings == []
    assert page.coverage.container == "#paperRead" and page.coverage.non_text_elements > 0
    assert rec.fulltext[-1].text.split("\n")[0] in page.text
    assert len(env.sim.requests_for(READER, "GET")) == 1
    assert await open_tabs(env) == before  # the detail and reader tabs are closed again


@pytest.mark.parametrize("deaths", [1, 2])
async def test_a_read_whose_browser_dies_under_the_detail_page_opens_it_again_in_a_new_browser(
    env: Env, monkeypatch: pytest.MonkeyPatch, deaths: int
) -> None:
    """The browser killed (or crashed) while the detail tab loads: the page was never answered, so
    it is opened once more in the relaunched browser and the read goes on. It ended `partial` with
    SITE_UNAVAILABLE (知网暂时不可用) and no next step, blaming CNKI. A browser that dies under it
    again is the browser's failure: BROWSER_UNAVAILABLE, reason browser_died."""
    tabs = env.reader.tabs
    await env.host.ensure()
    generation = env.host.generation
    load = tabs._load
    killed: list[int] = []

    async def kill_then_load(page: Any, url: str, op: Any) -> Any:
        if len(killed) < deaths:
            pid = env.host.status()["process_id"]
            assert pid is not None
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
        return await load(page, url, op)

    monkeypatch.setattr(tabs, "_load", kill_then_load)
    async with asyncio.timeout(STEP_TIMEOUT):
        if deaths == 1:
            capture = await env.reader.read(paper_for(env.sim, "r0001"), FakeOp())
            assert capture.page.title == env.sim.corpus.by_id["r0001"].title
        else:
            with pytest.raises(CnkiError) as caught:
                await env.reader.read(paper_for(env.sim, "r0001"), FakeOp())
            assert (caught.value.code, caught.value.details["reason"]) == ("BROWSER_UNAVAILABLE", "browser_died")
    assert len(killed) == deaths
    assert env.host.generation == generation + 1  # relaunched once, never after the second death


async def test_trial_reader_is_marked_and_returned_at_once(env: Env) -> None:
    env.sim.set_scenario({"faults": [{"path": "/bar/htmlread", "kind": "trial_reader"}]})
    async with asyncio.timeout(STEP_TIMEOUT):
        capture = await env.reader.read(paper_for(env.sim, "r0002"), FakeOp())
    assert capture.page.trial
    assert capture.page.coverage.scope == "trial"
    assert capture.page.coverage.missing_catalog_headings  # only the first section is shown


async def test_lazily_loaded_sections_are_waited_for(env: Env) -> None:
    rec = env.sim.corpus.by_id["r0021"]
    env.sim.set_scenario({"faults": [{"path": READER, "kind": "lazy_reader"}]})
    async with asyncio.timeout(STEP_TIMEOUT):
        capture = await env.reader.read(paper_for(env.sim, "r0021"), FakeOp())
    assert [e.fault for e in env.sim.requests_for(READER, "GET")] == ["lazy_reader"]
    assert capture.page.coverage.missing_catalog_headings == []
    assert rec.fulltext[-1].heading in [s.title for s in capture.page.sections]


async def test_reader_slider_is_solved_by_the_person_through_the_gate(env: Env) -> None:
    env.sim.set_scenario({"faults": [{"path": READER, "kind": "reader_slider", "at": [1]}]})
    op = FakeOp()
    ctx = await env.host.ensure()

    async def person() -> None:
        await op.waiting.wait()
        assert env.gate.active_kind == "challenge"
        tab = tab_with(ctx, READER)
        await tab.click(".slider-fallback")

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        capture = await env.reader.read(paper_for(env.sim, "r0001"), op)
    await solver
    assert op.transitions == ["awaiting_user", "running"]
    assert env.sim.requests_for("/verify/solve", "POST")
    assert capture.page.coverage.missing_catalog_headings == [] and not capture.page.trial


async def read_solving_the_slider(env: Env) -> tuple[Any, FakeOp]:
    """Read r0001 while the person solves the slider page the detail tab is sent to."""
    op = FakeOp()
    ctx = await env.host.ensure()

    async def person() -> None:
        await op.waiting.wait()
        await tab_with(ctx, "/verify/home").click(".verify-fallback")

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        capture = await env.reader.read(paper_for(env.sim, "r0001"), op)
    await solver
    return capture, op


async def test_a_detail_tab_answered_with_the_403_json_shows_the_person_the_issued_slider(env: Env) -> None:
    # CNKI's WAF answers the detail page itself with {"code":-403,"message":<slider URL>}: the tab
    # is sent to that slider page (its ident, captchaId and returnUrl), where the person solves it.
    env.sim.set_scenario({"faults": [{"path": "/kcms2/article/abstract", "kind": "verification_403", "at": [1]}]})
    capture, op = await read_solving_the_slider(env)
    assert op.transitions == ["awaiting_user", "running"]
    assert [e.params["valid"] for e in env.sim.requests_for("/verify/home")] == [True]
    assert not capture.page.trial


async def test_skip_policy_does_not_wait_for_the_slider(env: Env) -> None:
    env.sim.set_scenario({"faults": [{"path": READER, "kind": "reader_slider"}]})
    await expect_code(env.reader.read(paper_for(env.sim, "r0001"), FakeOp(on_verification="skip")),
                      "VERIFICATION_SKIPPED")  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "code", "evidence"),
    [
        ("reader_paywall", "ACCESS_DENIED", "账户余额不足"),
        ("forbidden", "ACCESS_DENIED", "无权访问"),
        ("not_found", "SITE_UNAVAILABLE", "status 404"),
        ("503", "SITE_UNAVAILABLE", "status 503"),
        ("429", "RATE_LIMITED", "status 429"),
    ],
)
async def test_a_refused_or_error_reader_entry_is_its_error_without_waiting_out_the_reader_timeout(
    env: Env, kind: str, code: str, evidence: str
) -> None:
    # The htmlread entry answers the real paywall tip page (200, 账户余额不足; saved page
    # reader/pluginsx_bar_htmlread_paywall_2026.html), a 403 refusal, or an HTTP error page: no
    # reader follows any of them. An error page was polled for the whole reader timeout (20 s) and
    # ended READER_UNSUPPORTED 阅读页缺少正文容器, whose advice is to download the file instead.
    # With a reader timeout far past STEP_TIMEOUT, waiting it out fails the bound below.
    env.sim.set_scenario({"faults": [{"path": "/bar/htmlread", "kind": kind}]})
    patient = HtmlReader(env.reader.tabs, reader_timeout=STEP_TIMEOUT * 10)
    before = await open_tabs(env)
    err = await expect_code(patient.read(paper_for(env.sim, "r0001"), FakeOp()), code)
    assert err.details.get("evidence") == evidence
    assert err.retryable == (code != "ACCESS_DENIED")
    assert [e.fault for e in env.sim.requests_for("/bar/htmlread", "GET")] == [kind]
    assert not env.sim.requests_for(READER, "GET")
    assert await open_tabs(env) == before


async def test_detail_without_reader_entry_is_html_entry_not_found(env: Env) -> None:
    # r0031 is a yearbook article: CAJ only. The error names the files the page offers, so the
    # advice does not send the caller to read_pdf_text, which cannot read a CAJ
    err = await expect_code(env.reader.read(paper_for(env.sim, "r0031"), FakeOp()), "HTML_ENTRY_NOT_FOUND")
    assert err.details["available"] == ["caj"]
    assert not env.sim.requests_for("/bar/htmlread", "GET")
    # a master's thesis without a body offers both files
    thesis = next(r for r in env.sim.corpus.records if r.type == "硕士" and not r.fulltext)
    err = await expect_code(env.reader.read(paper_for(env.sim, thesis.id), FakeOp()), "HTML_ENTRY_NOT_FOUND")
    assert err.details["available"] == ["pdf", "caj"]


async def test_a_reader_of_an_abstract_alone_is_reader_unsupported_naming_the_files(env: Env) -> None:
    # r0032 is a book: read online only, and the corpus holds no body for it, so its reader shows
    # a title, an author and a 222-character abstract; that abstract was given as the full text
    book = env.sim.corpus.by_id["r0032"]
    assert book.type == "图书" and not book.fulltext and len(book.abstract or "") > 150
    quick = HtmlReader(env.reader.tabs, reader_timeout=1.0)
    err = await expect_code(quick.read(paper_for(env.sim, "r0032"), FakeOp()), "READER_UNSUPPORTED")
    assert err.details["available"] == []  # no file either: the advice does not send it to a download


async def test_a_same_tab_reader_without_a_body_names_the_files_of_the_detail_page(env: Env) -> None:
    # Some reader variants navigate the detail tab itself (site-rules.md §11.2). The files offered
    # were looked up after the reader had replaced the detail page: none found, so the advice said
    # the paper had no PDF either. Here the book r0032 (its reader shows an abstract alone) gets a
    # PDF entry on its detail page, whose HTML阅读 link loses its target=_blank.
    ctx = await env.host.ensure()

    def detail(url: str) -> bool:
        return "/kcms2/article/abstract?" in url

    async def same_tab_entry(route: Any) -> None:
        response = await route.fetch()
        body = (await response.text()).replace(
            '<li class="btn-html"><a target="_blank"',
            '<li class="btn-dlpdf"><a id="pdfDown" href="#pdf"><i></i>PDF下载</a></li><li class="btn-html"><a',
        )
        await route.fulfill(response=response, body=body)

    await ctx.route(detail, same_tab_entry)
    try:
        quick = HtmlReader(env.reader.tabs, reader_timeout=1.0)
        before = len(env.sim.requests_for(READER, "GET"))
        err = await expect_code(quick.read(paper_for(env.sim, "r0032"), FakeOp()), "READER_UNSUPPORTED")
    finally:
        await ctx.unroute(detail)
    assert err.details["available"] == ["pdf"], err.details
    assert len(env.sim.requests_for(READER, "GET")) == before + 1  # the reader came, in the same tab


async def test_another_papers_detail_page_is_an_identity_conflict(env: Env) -> None:
    paper = paper_for(env.sim, "r0001").model_copy(update={"locator": env.sim.links.detail("r0002")})
    await expect_code(env.reader.read(paper, FakeOp()), "IDENTITY_CONFLICT")
    assert not env.sim.requests_for("/bar/htmlread", "GET")


async def test_service_pages_by_section_and_serves_repeats_from_the_cache(env: Env) -> None:
    clock = SystemClock()
    with Store.open(env.data_dir / "store-read", clock) as store:
        locator = env.sim.links.detail("r0001")
        detail = await env.site.detail(locator)
        paper = store.upsert_from_detail(detail, locator, clock.now())
        service = ReadingService(store, env.reader, clock)
        async with asyncio.timeout(STEP_TIMEOUT):
            first = await service.read(paper.record_ref, max_characters=500)
        assert first.source == "reader" and first.next_offset == 500 and len(first.text) == 500
        assert "invoice" not in first.model_dump_json() and "nonce" not in first.model_dump_json()
        parent = next(s for i, s in enumerate(first.sections) if i + 1 < len(first.sections)
                      and first.sections[i + 1].level > s.level)  # fmt: skip
        second = await service.read(paper.record_ref, section=parent.title.upper() + "  ")
        assert second.source == "cache" and second.section is not None
        assert second.total_characters == parent.length
        child = first.sections[first.sections.index(parent) + 1]
        assert child.title in second.text  # a section includes its subsections
        assert len(env.sim.requests_for(READER, "GET")) == 1


async def test_service_never_caches_a_trial_body(env: Env) -> None:
    env.sim.set_scenario({"faults": [{"path": "/bar/htmlread", "kind": "trial_reader"}]})
    clock = SystemClock()
    with Store.open(env.data_dir / "store-trial", clock) as store:
        locator = env.sim.links.detail("r0002")
        paper = store.upsert_from_detail(await env.site.detail(locator), locator, clock.now())
        service = ReadingService(store, env.reader, clock)
        async with asyncio.timeout(STEP_TIMEOUT):
            first = await service.read(paper.record_ref)
            second = await service.read(paper.record_ref)
        assert first.trial and first.complete_article is False
        assert second.source == "reader"
        assert len(env.sim.requests_for(READER, "GET")) == 2


async def test_a_detail_tab_keeps_the_page_script_from_calling_the_citation_api(env: Env) -> None:
    # The article page's own script asks the citation API (the four 核心文献推荐 lists at load; the
    # counts, reference lists and similar papers once 引文网络 is scrolled into view): requests no
    # limiter spaced, no budget paid for, sent even while a human step held everything else. The
    # tabs the product opens block them; the product asks that API itself, one limited request
    # per list page.
    ctx = await env.host.ensure()
    outcomes: list[tuple[str, str | None]] = []

    def note(request: Any, failed: bool) -> None:
        if "/restapi/" in request.url:
            outcomes.append((request.url, request.failure if failed else None))

    ctx.on("requestfinished", lambda request: note(request, False))
    ctx.on("requestfailed", lambda request: note(request, True))
    before = len(env.sim.requests_for("/restapi/"))
    op = FakeOp()
    async with asyncio.timeout(STEP_TIMEOUT):
        opened = await env.reader.tabs.open(paper_for(env.sim, "r0001"), op)
        try:
            await opened.page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            # the four keyword lists at load and the counts after the scroll have an outcome
            await wait_until(lambda: len(outcomes) >= 5, "the page script's citation-API requests")
        finally:
            await opened.page.close()
    assert op.charges == 1  # the detail page itself
    assert all(failure is not None for _, failure in outcomes), outcomes
    assert len(env.sim.requests_for("/restapi/")) == before


@pytest.mark.parametrize("kind", ["verification", "verification_403"])
async def test_the_detail_page_the_solved_slider_returns_to_is_read_not_asked_again(env: Env, kind: str) -> None:
    # The site sends the tab to its slider page; solved, it returns to the page asked for (the
    # slider's returnUrl). That page is read as it is: it was asked again before, one more detail
    # request for every slider a read or a download met.
    env.sim.set_scenario({"faults": [{"path": "/kcms2/article/abstract", "kind": kind, "at": [1]}]})
    capture, op = await read_solving_the_slider(env)
    details = env.sim.requests_for("/kcms2/article/abstract", "GET")
    # the one the slider answered, and the site's own return to it after the person solved it
    assert [e.fault for e in details] == [kind, None]
    assert op.transitions == ["awaiting_user", "running"]
    assert capture.detail.title == env.sim.corpus.by_id["r0001"].title and not capture.page.trial


async def test_a_returned_page_whose_token_expired_meanwhile_is_relocated_not_waited_for(
    tmp_path: Path, browser_executable: str
) -> None:
    # The person takes long enough at the slider for the detail page's v token to expire: the site
    # returns the tab to a 404 page. Taken as it stood, that page waited out the render timeout
    # (CONTENT_NOT_READY); asked again it is LOCATOR_EXPIRED, and the paper is found by its title.
    later = [0.0]
    sim = SimServer(clock=lambda: time.monotonic() + later[0], scenario={"token_ttl": 600}).start()
    try:
        async with site_stack(sim_settings(tmp_path / "data", sim.origin, browser_executable)) as stack:
            reader = HtmlReader(stack.detail_tabs())
            reader.tabs.render_timeout = STEP_TIMEOUT * 2  # waiting it out would fail the bound below
            sim.set_scenario({"token_ttl": 600, "faults": [{"path": "/kcms2/article/abstract", "kind": "verification", "at": [1]}]})
            op = FakeOp()
            ctx = await stack.host.ensure()

            async def person() -> None:
                await op.waiting.wait()
                later[0] += 3600  # an hour at the slider: every token issued so far has expired
                await tab_with(ctx, "/verify/home").click(".verify-fallback")

            solver = asyncio.create_task(person())
            async with asyncio.timeout(STEP_TIMEOUT):
                capture = await reader.read(paper_for(sim, "r0001"), op)
            await solver
    finally:
        sim.stop()
    assert capture.detail.title == sim.corpus.by_id["r0001"].title
    assert sim.requests_for("/kns8s/brief/grid", "POST")  # relocated by its exact title


async def test_another_tab_the_detail_page_opens_answering_an_error_is_not_the_reader(env: Env) -> None:
    # review 7a L9: every tab the detail page opened after the click was checked for an error status
    # (and a refusal), so a stray window answering 404 failed the read; only the tab the click
    # opened (the order page leading to the reader) or the detail tab itself is the reader's
    env.sim.set_scenario({"faults": [{"path": READER, "kind": "lazy_reader"}]})  # polled for its sections
    ctx = await env.host.ensure()
    strays: list[Any] = []

    async def stray(page: Any) -> None:
        opener = await page.opener()
        if opener is not None and not strays:  # the reader's tab: the detail page opens another
            strays.append(page)
            await opener.evaluate("() => { window.open('/kcms2/no-such-page', '_blank') }")

    pending: list[asyncio.Future[None]] = []
    handler = lambda page: pending.append(asyncio.ensure_future(stray(page)))  # noqa: E731
    ctx.on("page", handler)
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            capture = await env.reader.read(paper_for(env.sim, "r0001"), FakeOp())
    finally:
        ctx.remove_listener("page", handler)
        await asyncio.gather(*pending, return_exceptions=True)
    assert strays and capture.page.title == env.sim.corpus.by_id["r0001"].title
