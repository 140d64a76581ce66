"""Real headless Chromium against the simulator's one-box (home → result page, facets) and expert
search pages, driven through their own scripts as a person would."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Page

from cnki_mcp.sim.server import SimServer

pytestmark = pytest.mark.browser


async def test_home_one_box_opens_the_result_page_with_grid_facets_and_pager(
    page: Page, sim_server: SimServer
) -> None:
    await page.goto(sim_server.links.www("/"))
    await page.locator("#DBFieldBox").click()
    await page.locator('#DBFieldList a[value="KY$=|"]').click()
    await page.locator("textarea#txt_SearchText").fill("人工智能")
    await page.locator(".search-form .search-btn").click()
    await page.wait_for_selector("#briefBox table.result-table-list tbody tr")
    assert "/kns8s/defaultresult/index?" in page.url and "korder=KY" in page.url
    assert await page.locator("input#txt_search.search-input").input_value() == "人工智能"
    grid = sim_server.requests_for("/kns8s/brief/grid", "POST")[0]
    assert grid.params["query"] == [
        {"field": "KY", "operator": "DEFAULT", "value": "人工智能", "logic": "AND"}
    ]
    # the left column's counts come from group/result, over the same hits
    await page.wait_for_selector('#divGroup dl[groupid="ZYZT|||CYZT"] dd li')
    groups = sim_server.requests_for("/kns8s/group/result", "POST")
    assert groups[0].params["total"] == grid.params["total"]
    first = page.locator('#divGroup dl[groupid="ZYZT|||CYZT"] dd li').first
    assert "人工智能" in await first.inner_text()  # every hit has the keyword
    await page.locator('#divGroup dl[groupid="YE"] dt.tit').click()  # folded: loads on click
    await page.wait_for_selector('#divGroup dl[groupid="YE"] dd li')
    years = await page.locator('#divGroup dl[groupid="YE"] dd li a').all_inner_texts()
    assert years == sorted(years, reverse=True)
    if grid.params["total"] > 20:
        await page.locator("#briefBox #PageNext").click()
        await page.wait_for_function("document.querySelector('#curPageHid').value === '2'")
        assert sim_server.requests_for("/kns8s/brief/grid", "POST")[1].params["turnpage"]


async def test_expert_page_sends_one_expert_item_and_reads_the_date_boxes(
    page: Page, sim_server: SimServer
) -> None:
    await page.goto(sim_server.links.www("/"))
    await page.goto(sim_server.url("/kns8s/AdvSearch?type=expert"))
    assert not await page.locator(".search-middle input.btn-search").is_visible()
    await page.locator("textarea.textarea-major.majorSearch").fill("SU %= '人工智能' AND YE >= 2020")
    await page.locator("#datebox0").fill("2021")
    await page.locator("#datebox1").fill("2024")
    await page.locator(".search-buttons .btn-search").click()
    await page.wait_for_selector("#briefBox table.result-table-list tbody tr")
    post = sim_server.requests_for("/kns8s/brief/grid", "POST")[0]
    assert post.params["years"] == [2021, 2024]
    assert {"field": "YE", "operator": "GE", "value": "2020", "logic": "AND"} in post.params["query"]
    info = json.loads(await page.evaluate("cnkiSearch.getSearchJsonInfo()"))
    item = info["QNode"]["QGroup"][0]["Items"][0]
    assert (item["Field"], item["Operator"], info["SearchType"]) == ("EXPERT", 0, 4)
    # a malformed expression gets the grid's refusal, not rows
    await page.locator("textarea.textarea-major.majorSearch").fill("SU='人工智能' AND")
    await page.locator(".search-buttons .btn-search").click()
    await page.wait_for_selector("#briefBox .errorPage")
    assert await page.locator("#briefBox table.result-table-list").count() == 0


async def test_one_box_page_without_the_guest_session_goes_to_the_slider(
    page: Page, sim_server: SimServer
) -> None:
    await page.goto(sim_server.url("/kns8s/defaultresult/index?korder=SU&kw=x"))
    assert "/verify/home" in page.url
