"""End to end over stdio: `cnki-mcp serve` as a subprocess (headless Chromium inside it) against
the simulator started here. A research search, a structured search checked against the corpus
itself, get_metadata by exact titles, and coded errors for bad arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.identity import title_key
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.server import SimServer
from tests.e2e.support import ADV_SEARCH, DETAIL, GRID, JOURNAL, StdioServer, serve_env
from tests.site_stack import page_form_logged

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTIONS = Path(__file__).resolve().parents[2] / "cnki_mcp" / "sim" / "data" / "questions.jsonl"


@pytest.fixture(scope="module")
def corpus(sim: SimServer) -> Corpus:
    return Corpus.load()


def question(qid: str) -> dict[str, Any]:
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["id"] == qid:
            return item
    raise LookupError(qid)


async def all_pages(
    server: StdioServer, search_id: str, scope: str, view: str, size: int
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = await server.call(
            "search_results",
            {"search_id": search_id, "scope": scope, "view": view, "offset": offset, "limit": size},
        )
        assert page["offset"] == offset and len(page["results"]) <= size
        out.extend(page["results"])
        offset = page["next_offset"]
        pages += 1
        assert pages <= 200
    assert len(out) == page["total"]
    return out


async def test_research_search_covers_three_channels_and_feedback_and_pages_its_results(
    served: StdioServer, sim: SimServer
) -> None:
    q = question("q03")
    started = await served.call(
        "search",
        {
            "query": q["question"],
            "concept_groups": [group[:2] for group in q["concepts"]],
            "year_to": 2025,
            "limit": 5,
            "options": {"max_pages": 2, "candidate_target": 60},
        },
    )
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    result = record["result"]
    channels = {c["channel"]: c for c in result["coverage"]}
    assert {"q1", "q2", "q3"} <= set(channels)
    assert {c for c in channels if c.startswith("feedback")}, channels
    q1 = channels["q1"]
    assert q1["pages"] >= 1 and not q1["failed"]
    for c in channels.values():
        assert not c["failed"], c
        if c["stopped"] == "local":  # a subset of q1, which listed every result on its first page
            assert c["pages"] == 0 and q1["exhausted"] and q1["pages"] == 1, c
        else:
            assert c["pages"] >= 1, c
    sent = {
        e.params["query"][0]["field"]
        for e in sim.requests_for(GRID, "POST")
        if e.params.get("query") and not e.params.get("page_form")  # not the capture click
    }
    assert sent >= {"SU"}  # the subject channel was asked; local channels were not
    assert result["selected_count"] >= 1 and result["candidate_count"] >= result["eligible_count"]
    assert len(result["results"]) == min(5, result["selected_count"])

    search_id = result["search_id"]
    selected = await all_pages(served, search_id, "selected", "compact", 3)
    assert len(selected) == result["selected_count"]
    assert [r["record_ref"] for r in selected[:5]] == [r["record_ref"] for r in result["results"]]
    candidates = await all_pages(served, search_id, "candidates", "titles", 7)
    refs = [r["record_ref"] for r in candidates]
    assert len(refs) == len(set(refs)) == result["candidate_count"]
    assert {r["record_ref"] for r in selected} <= set(refs)
    assert all(r["year"] is None or r["year"] <= 2025 for r in selected)
    # every candidate came from the simulator's grid answers
    served_ids = {i for e in sim.requests_for(GRID, "POST") for i in e.params.get("ids") or ()}
    corpus_titles = {title_key(r.title) for r in sim.corpus.records if r.id in served_ids}
    assert {title_key(r["title"]) for r in candidates} <= corpus_titles
    assert len(sim.requests_for(ADV_SEARCH, "GET")) == 1  # the template was captured once


def _matches(record: SimRecord, term: str, years: tuple[int, int], not_author: str) -> bool:
    return (
        term in record.title
        and record.year is not None
        and years[0] <= record.year <= years[1]
        and not any(a.name == not_author for a in record.authors)  # a Han name without match: exact
    )


async def test_structured_search_returns_exactly_the_corpus_records_that_match(
    served: StdioServer, sim: SimServer, corpus: Corpus
) -> None:
    term, years = "违约金", (2018, 2025)
    with_term = [r for r in corpus.records if term in r.title and r.year and years[0] <= r.year <= years[1]]
    not_author = with_term[0].authors[0].name
    expected = [r for r in corpus.records if _matches(r, term, years, not_author)]
    assert 5 <= len(expected) < len(with_term) <= 100  # the NOT removes something, the rest fits one call

    started = await served.call(
        "structured_search",
        {
            "expression": {
                "op": "and",
                "items": [
                    {"field": "title", "value": term},
                    {"op": "not", "items": [{"field": "authors", "value": not_author}]},
                ],
            },
            "year_from": years[0],
            "year_to": years[1],
            "limit": 100,
        },
    )
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    rows = await all_pages(served, record["result"]["search_id"], "candidates", "records", 50)
    got = sorted((r["record"]["title"], r["record"]["filename"]) for r in rows)
    want = sorted((r.title, r.native_filename) for r in expected)
    assert got == want
    assert not sim.requests_for(DETAIL) and not sim.requests_for(JOURNAL)  # metadata=basic: list only


async def test_get_metadata_by_exact_titles_locates_ten_titles_per_grid_request(
    served: StdioServer, sim: SimServer, corpus: Corpus
) -> None:
    counts: dict[str, int] = {}
    for r in corpus.records:
        counts[title_key(r.title)] = counts.get(title_key(r.title), 0) + 1
    picked = [
        r
        for r in corpus.records
        if r.type == "期刊"
        and not r.online_first
        and r.extra.get("topic") == "carbon"
        and counts[title_key(r.title)] == 1
        and not any(title_key(r.title) in title_key(o.title) for o in corpus.records if o is not r)
    ][:12]
    assert len(picked) == 12

    started = await served.call("get_metadata", {"titles": [r.title for r in picked]})
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    by_title = {p["title"]: p for p in record["result"]["records"]}
    assert set(by_title) == {r.title for r in picked}
    for r in picked:
        got = by_title[r.title]
        assert got["authors"] == [a.name for a in r.authors], r.id
        assert got["source"] == r.source and got["year"] == r.year, r.id
        assert got["filename"] == r.native_filename, r.id
        assert got["abstract"] == r.abstract, r.id
        assert got["keywords"] == list(r.keywords), r.id
    await page_form_logged(sim)  # the capture click's own POST may land after the call ended
    grid = sim.requests_for(GRID, "POST")
    locate = [
        e for e in grid if all((c["field"], c["operator"]) == ("TI", "DEFAULT") for c in e.params["query"])
    ]
    assert len(locate) == 2  # 12 titles: one exact-title grid request per 10
    assert sorted(len(e.params["query"]) for e in locate) == [2, 10]
    assert len(grid) - len(locate) == 1  # plus the AdvSearch click that captured the template
    assert len(sim.requests_for(ADV_SEARCH, "GET")) == 1
    assert sorted(e.params.get("id") for e in sim.requests_for(DETAIL)) == sorted(r.id for r in picked)

    again = await served.call("get_metadata", {"titles": [r.title for r in picked], "local_only": True})
    assert again["status"] == "completed"
    assert len(sim.requests_for(GRID, "POST")) == len(grid)  # local_only: nothing more was asked
    assert len(sim.requests_for(DETAIL)) == len(picked)


# (tool, arguments, code). diagnostics takes no arguments (extra ones are ignored), so it has none.
BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": ""}, "INVALID_ARGUMENT"),
    ("search", {"query": "x", "year_from": 2024, "year_to": 2020}, "INVALID_ARGUMENT"),
    ("search", {"query": "x", "options": {"max_requests": 0}}, "INVALID_ARGUMENT"),
    (
        "structured_search",
        {"expression": {"op": "not", "items": [{"field": "title", "value": "a"}]}},
        "UNBOUNDED_QUERY",
    ),
    (
        "structured_search",
        {"expression": {"field": "subject", "value": "a", "match": "exact"}},
        "INVALID_MATCH",
    ),
    ("search_results", {"search_id": "s", "offset": -1}, "INVALID_ARGUMENT"),
    ("get_metadata", {"titles": ["x"] * 101}, "INVALID_ARGUMENT"),
    ("read_online_html", {"title": "x", "max_characters": 0}, "INVALID_ARGUMENT"),
    ("download_paper", {"title": "x", "format": "docx"}, "INVALID_ARGUMENT"),
    ("read_pdf_text", {"record_ref": "rec_x", "pages": "x" * 201}, "INVALID_ARGUMENT"),
    ("export_citations", {"record_refs": ["r"], "offset": -1}, "INVALID_ARGUMENT"),
    ("link_references", {}, "INVALID_ARGUMENT"),
    ("verify_references", {"text": "a", "references": ["b"]}, "INVALID_ARGUMENT"),
    ("search_library", {"query": "x", "limit": 0}, "INVALID_ARGUMENT"),
    ("get_references", {"paper": "r", "limit": 51}, "INVALID_ARGUMENT"),
    ("get_citing", {"paper": "r", "types": ["patent"]}, "INVALID_ARGUMENT"),
    ("citation_graph", {"seeds": ["r"], "depth": 4}, "INVALID_ARGUMENT"),
    ("find_citation_path", {"source": "a"}, "INVALID_ARGUMENT"),
    ("export_search_log", {"search_id": "s", "format": "docx"}, "INVALID_ARGUMENT"),
    ("watch_search", {"search_id": ""}, "INVALID_ARGUMENT"),
    ("list_watches", {"checks": 11}, "INVALID_ARGUMENT"),
    ("check_updates", {"pages": 0}, "INVALID_ARGUMENT"),
    ("login", {"remote_access_url": "http://vpn.example.edu/"}, "INVALID_ARGUMENT"),
    ("login", {"remote_access_url": "https://user:pw@vpn.example.edu/"}, "INVALID_ARGUMENT"),
    ("session_status", {"refresh": "maybe"}, "INVALID_ARGUMENT"),
    ("operation_status", {"operation_id": "op_nothex"}, "INVALID_ARGUMENT"),
    ("operation_control", {"action": "continue"}, "INVALID_ARGUMENT"),
]


async def test_bad_arguments_for_every_tool_are_coded_errors_without_requests_or_browser(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    sim.set_scenario(None)
    sim.reset()
    data_dir = tmp_path / "data"
    server = await StdioServer(serve_env(data_dir, sim.origin, browser_executable), tmp_path).start()
    try:
        tools = {t.name for t in (await server.session.list_tools()).tools}
        assert {name for name, _, _ in BAD_ARGUMENTS} == tools - {"diagnostics"}
        for name, args, code in BAD_ARGUMENTS:
            result = await server.raw(name, args)
            assert result.is_error, (name, args)
            data = result.structured_content
            assert data is not None and data["errors"][0]["code"] == data["code"], (name, data)
            assert data["code"] == code, (name, args, data)
        diag = await server.call("diagnostics", {})
        assert diag["browser"]["running"] is False
    finally:
        await server.stop()
    assert sim.requests == []
    assert not (data_dir / "browser").exists()
