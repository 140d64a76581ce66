"""Real headless Chromium against the simulator: AdvSearch through its own script, verification,
hosts mode under the real host names."""

from __future__ import annotations

import asyncio
import json

import pytest
from playwright.async_api import Page

from cnki_mcp.sim.server import SimServer
from tests.conftest import QUIET_FLAGS

pytestmark = pytest.mark.browser


async def _search(page, sim: SimServer, term: str) -> None:  # type: ignore[no-untyped-def]
    await page.goto(sim.links.www("/"))  # the first visit plants the guest session, as for a person
    await page.goto(sim.url("/kns8s/AdvSearch"))
    await page.wait_for_function("window.cnkiSearch && typeof cnkiSearch.getSearchJsonInfo === 'function'")
    box = page.locator("#gradetxt input[data-tipid]").first
    assert (await box.bounding_box())["width"] > 0  # type: ignore[index]
    await box.fill(term)
    en = page.locator('.gradeSearch input[data-id="EN"]')
    assert await en.is_checked()
    await en.uncheck()
    await page.locator(".search-middle input.btn-search").click()


async def test_advsearch_posts_the_grid_through_its_own_script(page: Page, sim_server: SimServer) -> None:
    await _search(page, sim_server, "知识图谱")
    await page.wait_for_selector("#briefBox table.result-table-list tbody tr")
    posts = sim_server.requests_for("/kns8s/brief/grid", "POST")
    assert len(posts) == 1
    assert posts[0].params["query"][0]["value"] == "知识图谱"
    assert posts[0].params["query"][0]["field"] == "SU"
    info = json.loads(await page.evaluate("cnkiSearch.getSearchJsonInfo()"))
    assert info["QNode"]["QGroup"][0]["Key"] == "Subject"
    total = await page.locator("#briefBox .pagerTitleCell em").inner_text()
    assert int(total.replace(",", "")) == posts[0].params["total"] > 0
    if posts[0].params["total"] > 20:  # the pager posts page 2 with the cursor
        await page.locator("#briefBox #PageNext").click()
        await page.wait_for_selector("#briefBox .countPageMark:has-text('2/')")
        second = sim_server.requests_for("/kns8s/brief/grid", "POST")[1]
        assert second.status == 200 and second.params["pageNum"] == "2" and second.params["turnpage"]


async def test_verification_is_solved_in_the_page_and_marks_the_cookie(
    page: Page, sim_server: SimServer
) -> None:
    sim_server.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": "verification", "at": [1]}]})
    await _search(page, sim_server, "知识图谱")
    await page.wait_for_selector('#briefBox form[name="vericodeForm"]')
    # A pending challenge also sends pages to the slider page; act as the person there.
    await page.goto(sim_server.url("/kns8s/AdvSearch"))
    assert await page.title() == "安全验证"
    handle = page.locator(".verify-move-block")
    bb = await handle.bounding_box()
    assert bb is not None
    await page.mouse.move(bb["x"] + bb["width"] / 2, bb["y"] + bb["height"] / 2)
    await page.mouse.down()
    for step in range(1, 11):
        await page.mouse.move(bb["x"] + bb["width"] / 2 + 25 * step, bb["y"] + bb["height"] / 2)
    await page.mouse.up()
    await page.wait_for_url("**/kns8s/AdvSearch")
    cookies = {c["name"] for c in await page.context.cookies()}
    assert "Ecp_VerifyPass" in cookies
    await _search(page, sim_server, "知识图谱")
    await page.wait_for_selector("#briefBox table.result-table-list tbody tr")
    faults = [e.fault for e in sim_server.requests_for("/kns8s/brief/grid")]
    assert faults == ["verification", None]


async def test_hosts_mode_serves_the_real_host_names(playwright_instance, browser_executable) -> None:  # type: ignore[no-untyped-def]
    from cnki_mcp.sim.corpus import Corpus, SimRecord

    corpus = Corpus([SimRecord(id="h1", title="主机模式测试", type="期刊", year=2024)], [])
    with SimServer(corpus, hosts_mode=True) as sim:
        b = await playwright_instance.chromium.launch(
            executable_path=browser_executable, headless=True, args=QUIET_FLAGS + sim.chromium_args()
        )
        try:
            page = await b.new_page()
            await page.goto("https://www.cnki.net/")  # plants the session for every *.cnki.net host
            await page.goto("https://kns.cnki.net/kns8s/AdvSearch")
            assert "高级检索" in await page.title()
            await page.locator("#gradetxt input[data-tipid]").first.fill("主机模式")
            await page.locator(".search-middle input.btn-search").click()
            link = page.locator("#briefBox a.fz14")
            await link.wait_for()
            assert (await link.get_attribute("href") or "").startswith(
                "https://kns.cnki.net/kcms2/article/abstract?v="
            )
            hosts = {e.host for e in sim.requests if e.path not in ("/", "/favicon.ico")}
            assert hosts == {"kns.cnki.net"}
            assert [e.host for e in sim.requests if e.path == "/"] == ["www.cnki.net"]
        finally:
            await b.close()


async def test_a_fresh_browser_opening_advsearch_gets_the_slider_first(
    page: Page, sim_server: SimServer
) -> None:
    await page.goto(sim_server.url("/kns8s/AdvSearch"))
    assert await page.title() == "安全验证"
    assert "&ident=" in page.url and "&captchaId=" in page.url
    await page.click(".verify-fallback")
    await page.wait_for_url(sim_server.url("/kns8s/AdvSearch"))
    assert {"KNS2COOKIE", "Ecp_VerifyPass"} <= {c["name"] for c in await page.context.cookies()}
    assert "高级检索" in await page.title()


async def test_article_page_loads_citation_lists_after_a_scroll_and_a_tab_click(
    page: Page, sim_server: SimServer
) -> None:
    # docs/citation-api.md "How the page loads the lists": nothing at load, metrics + the 12
    # reference lists once #refpartdiv is in view, the 12 citing lists after the tab click.
    await page.goto(sim_server.links.www("/"))
    await page.goto(sim_server.links.detail("r0306"))
    await page.wait_for_load_state("load")
    await page.wait_for_load_state("networkidle")  # a list asked at load would be in by now
    assert sim_server.requests_for("/restapi/citation-api/v1/literature/quotations") == []
    assert sim_server.requests_for("/restapi/citation-api/v1/literature/references") == []
    # the page makes its 12 list holders before it asks for their lists, and the similar papers
    # can answer before the last list request reaches the simulator: wait for the answers
    listed: list[str] = []
    lists_in = asyncio.Event()

    def on_list(resp) -> None:  # type: ignore[no-untyped-def]
        kind = resp.url.split("?")[0].rsplit("/", 1)[-1]
        if kind in ("references", "domains"):
            listed.append(kind)
            if listed.count("references") >= 12 and listed.count("domains") >= 4:
                lists_in.set()

    page.on("response", on_list)
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    await page.wait_for_selector("#quoted-references li span.number")
    await page.wait_for_function(
        "document.querySelectorAll('#quoted-references [id^=nxgp-kcms-data-ref-]').length == 12"
    )
    await page.wait_for_selector("#kcms-data-similar li")  # similar papers come last
    await asyncio.wait_for(lists_in.wait(), 30)
    page.remove_listener("response", on_list)
    paths = [e.path.rsplit("/", 1)[-1] for e in sim_server.requests_for("/restapi/")]
    assert paths.count("metrics") == 1 and "citations" not in paths
    assert paths.count("references") == 12 and paths.count("domains") == 4 and paths.count("articles") == 1
    answered: list[int] = []
    all_in = asyncio.Event()

    def on_response(resp) -> None:  # type: ignore[no-untyped-def]
        if "/literature/citations?" in resp.url:
            answered.append(resp.status)
            if len(answered) == 12:
                all_in.set()

    page.on("response", on_response)
    await page.click('li[data-id="citations"]')
    await asyncio.wait_for(all_in.wait(), 30)
    await page.wait_for_function(
        "document.querySelector('#quoted-citations').textContent.indexOf('共19条') >= 0"
    )
    cites = sim_server.requests_for("/restapi/citation-api/v1/literature/citations")
    assert len(cites) == 12 and answered == [200] * 12
