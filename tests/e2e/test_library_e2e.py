"""search_library end to end over stdio: `cnki-mcp serve` as a subprocess (headless Chromium inside
it) fills its store with real searches against the simulator (a structured search, detail pages
through get_metadata, a body through read_online_html), then search_library finds titles,
abstracts and the full text from that store, with filters and paging, without a CNKI request."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import StdioServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]


async def every_page(server: StdioServer, args: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = await server.call("search_library", {**args, "offset": offset, "limit": 4})
        out += page["results"]
        offset = page["next_offset"]
        assert len(out) <= page["total"] <= 200 and page["total_exact"]
    assert len(out) == page["total"]
    return out


async def test_search_library_finds_what_real_searches_stored(served: StdioServer, sim: SimServer) -> None:
    term = "违约金"
    started = await served.call(
        "structured_search",
        {"expression": {"field": "title", "value": term}, "limit": 30, "options": {"freshness": "live"}},
    )
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    summary = record["result"]
    found = {r["record_ref"]: r["title"] for r in summary["results"]}
    assert len(found) >= 5

    # every stored row (the grid pages hold more rows than the result) comes back once
    hits = await every_page(served, {"query": term})
    assert set(found) <= {r["record_ref"] for r in hits}
    assert all(term in r["title"] and "title" in r["matched_fields"] and f"【{term}】" in r["snippet"] for r in hits)
    one = await every_page(served, {"query": term[-1]})  # one character: the prefix index
    assert {r["record_ref"] for r in hits} <= {r["record_ref"] for r in one}
    scoped = await every_page(served, {"query": term, "search_id": summary["search_id"]})
    assert set(found) <= {r["record_ref"] for r in scoped} <= {r["record_ref"] for r in hits}

    # detail pages bring abstracts and keywords into the index
    by_title = {r.title: r for r in sim.corpus.records}
    ref, title = next((ref, t) for ref, t in found.items() if by_title[t].abstract and by_title[t].fulltext)
    meta = await served.finish(await served.call("get_metadata", {"record_refs": [ref]}))
    assert meta["status"] == "completed", meta["errors"]
    abstract = by_title[title].abstract or ""
    words = max(re.findall(r"[\u4e00-\u9fff]{6,}", abstract), key=len)[:6]
    page = await served.call("search_library", {"query": words})
    assert ref in [r["record_ref"] for r in page["results"]]
    assert "abstract" in next(r for r in page["results"] if r["record_ref"] == ref)["matched_fields"]

    # the body read with read_online_html is kept and indexed
    read = await served.finish(await served.call("read_online_html", {"record_ref": ref}))
    assert read["status"] == "completed", read["errors"]
    body = read["result"]["text"]
    phrase = max(re.findall(r"[\u4e00-\u9fff]{8,}", body[len(body) // 2 :]), key=len)[:8]
    requests = len(sim.requests)
    page = await served.call("search_library", {"query": phrase})
    hit = next(r for r in page["results"] if r["record_ref"] == ref)
    assert "fulltext_html" in hit["matched_fields"] and hit["fulltext"] == ["html"]
    assert f"【{phrase}】" in hit["snippet"]
    years = sorted(r["year"] for r in hits if r["year"])
    pivot = years[len(years) // 2]
    newer = await every_page(served, {"query": term, "year_from": pivot})
    assert {r["record_ref"] for r in newer} == {r["record_ref"] for r in hits if r["year"] and r["year"] >= pivot}
    assert 0 < len(newer) < len(hits)
    assert len(sim.requests) == requests  # search_library never visits the site
