"""End to end over stdio: export_citations by title against the simulator (grid locate + detail
page through headless Chromium), then the same papers exported locally in other styles.

Issue 10 items 11-13 in the full flow: the grid's 发表时间 survives the detail page (which shows
no publication date), a conference paper carries its meeting, a thesis its institution's city."""

from __future__ import annotations

import json

import pytest

from cnki_mcp.identity import title_key
from cnki_mcp.sim.corpus import Corpus, SimRecord
from tests.e2e.support import StdioServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MONTHS_MLA = ("Jan.", "Feb.", "Mar.", "Apr.", "May", "June", "July", "Aug.", "Sept.", "Oct.", "Nov.", "Dec.")


def _unique(corpus: Corpus, kind: str, extra: object = True) -> SimRecord:
    keys = [title_key(r.title) for r in corpus.records]
    for r in corpus.records:
        k = title_key(r.title)
        if (r.type == kind and extra(r) and keys.count(k) == 1  # type: ignore[operator]
                and not any(k in o for o in keys if o != k)):
            return r
    raise LookupError(kind)


async def test_export_by_title_keeps_grid_dates_meetings_and_thesis_places(served: StdioServer) -> None:
    corpus = Corpus.load()
    journal = _unique(corpus, "期刊", lambda r: bool(r.volume and r.issue and r.date and not r.online_first))
    meeting = _unique(corpus, "会议", lambda r: bool(r.place and r.date))
    thesis = _unique(corpus, "博士", lambda r: r.source == "武汉大学")
    titles = [journal.title, meeting.title, thesis.title]

    started = await served.call("export_citations", {"titles": titles, "format": "mla", "missing_fields": "omit"})
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    mla = record["result"]["text"]
    year, month, _ = (int(p) for p in (journal.date or "").split("-"))
    assert f"vol. {journal.volume}, no. {journal.issue}, {MONTHS_MLA[month - 1]} {year}" in mla

    local = await served.call("export_citations", {"titles": titles, "format": "csl_json"})
    assert local["status"] == "completed"
    items = {i["title"]: i for i in json.loads(local["result"]["text"])}
    assert items[journal.title]["issued"] == {"date-parts": [[int(p) for p in (journal.date or "").split("-")]]}
    m = items[meeting.title]
    assert (m["event-title"], m["event-place"]) == (meeting.conference, meeting.place)
    assert m["event-date"] == {"date-parts": [[int(p) for p in (meeting.date or "").split("-")]]}

    gbt = await served.call("export_citations", {"titles": [thesis.title], "format": "gbt7714"})
    assert f"[D]. 武汉: 武汉大学, {thesis.year}." in gbt["result"]["text"]


async def test_a_basic_search_exported_says_which_articles_lack_pages_and_the_advised_call_fills_them(
    served: StdioServer,
) -> None:
    """List rows carry no 卷期页码: the export reports them with the get_metadata call that reads
    them (CNKI's batch export), and after that call the same export is complete."""
    search = {"query": "联邦学习", "concept_groups": [["联邦学习"]],
              "options": {"metadata": "basic", "freshness": "live"}}
    found = await served.finish(await served.call("search", search))
    assert found["status"] == "completed", found["errors"]
    args = {"search_id": found["result"]["search_id"], "scope": "candidates", "format": "gbt7714"}
    before = await served.call("export_citations", args)
    lacking = before["result"]["missing_fields"]
    assert lacking and all(set(gaps) & {"issue", "pages"} for gaps in lacking.values())
    assert "get_metadata" in before["next_step"] and "fields=['volume','issue','pages']" in before["next_step"]

    refs = list(lacking)
    read = await served.finish(
        await served.call("get_metadata", {"record_refs": refs, "fields": ["volume", "issue", "pages"]})
    )
    assert read["status"] == "completed", read["errors"]
    corpus = {title_key(r.title): r for r in Corpus.load().records}
    for rec in read["result"]["records"]:  # what the corpus has, the export read
        assert rec.get("pages") == corpus[title_key(rec["title"])].pages, rec
    after = await served.call("export_citations", args)
    assert not set(after["result"]["missing_fields"]) & set(refs)
    assert "get_metadata" not in (after["next_step"] or "")
