"""Citation tools end to end over stdio: `cnki-mcp serve` (headless Chromium inside it) against
the simulator's citation API. A paper located by get_metadata; its long citing list paged with
get_citing (one request per list page, a repeated page from the store); a citation graph that runs
out of its request budget ends partial and `continue` completes it without asking any list page
twice; the graph exports GraphML; find_citation_path walks it. A paper cited by more than 30
papers: the graph and the path take every citing paper. A paper cited by 300 (sim/citation_hub.py):
its citing list paged to its end, its graph written to a file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from cnki_mcp.sim.citation_hub import HUB_TITLE, hub_records
from cnki_mcp.sim.server import SimServer
from tests.e2e.support import StdioServer
from tests.site_stack import page_form_logged

pytestmark = [pytest.mark.browser, pytest.mark.slow]

API = "/restapi/citation-api/v1/literature/"
LONG = "r0306"  # 19 journal papers cite it: two pages of the journal list


def api_calls(sim: SimServer) -> Counter[tuple[str, str, str, str]]:
    return Counter(
        (e.path.rsplit("/", 1)[-1], str(e.params.get("id")), str(e.params.get("type")), str(e.params.get("start")))
        for e in sim.requests
        if e.path.startswith(API)
    )


async def test_citing_list_pages_and_a_graph_continues_without_repeating_a_request(
    served: StdioServer, sim: SimServer
) -> None:
    corpus = sim.corpus
    paper = corpus.by_id[LONG]
    titles = Counter(r.title for r in corpus.records)
    # the longest reference list among papers whose title is unique (located by exact title)
    seed = max((r for r in corpus.records if titles[r.title] == 1), key=lambda r: (len(r.references), r.id))
    meta = await served.finish(await served.call("get_metadata", {"titles": [paper.title, seed.title]}))
    assert meta["status"] == "completed", meta["errors"]
    refs = {r["title"]: r["record_ref"] for r in meta["result"]["records"]}
    ref, seed_ref = refs[paper.title], refs[seed.title]

    await page_form_logged(sim)  # the capture click's own POST, not among the requests counted next
    # page 2 of the journal citing list: the counts, the journal list's pages 1 and 2
    before = len(sim.requests)
    second = await served.finish(
        await served.call("get_citing", {"paper": ref, "types": ["journal"], "offset": 10, "limit": 10})
    )
    assert second["status"] == "completed", second["errors"]
    page = second["result"]
    assert page["total"] == 19 and len(page["items"]) == 9 and page["next_offset"] is None
    assert page["requests"] == 3 == len(sim.requests) - before
    assert {(e.params["type"], e.params["start"]) for e in sim.requests[before:] if "type" in e.params} == {
        ("CJFDREF", "1"), ("CJFDREF", "11")
    }  # fmt: skip
    assert all(e.path.startswith(API) for e in sim.requests[before:])  # no detail page visited
    again = await served.finish(
        await served.call("get_citing", {"paper": ref, "types": ["journal"], "offset": 10, "limit": 10})
    )
    assert again["result"]["requests"] == 0 and again["result"]["items"] == page["items"]

    # a graph out of budget, then continued
    args = {"seeds": [seed_ref], "depth": 2, "max_nodes": 8, "format": "graphml", "max_requests": 15}
    first = await served.finish(await served.call("citation_graph", args))
    assert first["status"] == "partial"
    assert "BUDGET_EXHAUSTED" in {e["code"] for e in first["errors"]}
    assert first["result"]["complete"] is False and first["result"]["pending"] > 0
    cont = await served.call(
        "operation_control",
        {"action": "continue", "operation_id": first["operation_id"], "additional_requests": 500},
    )
    done = await served.finish(cont["operation"])
    assert done["status"] == "completed", done["errors"]
    graph = done["result"]
    assert len(graph["graph"]["nodes"]) == 8 and graph["pending"] == 0
    # every paper of the graph was expanded, but max_nodes kept papers within the depth out
    assert graph["complete"] is False and graph["max_nodes_reached"] is True and graph["left_out"] > 0
    assert "max_nodes" in graph["warnings"][0]
    assert {k: n for k, n in api_calls(sim).items() if n > 1} == {}  # no list page asked twice
    root = ET.fromstring(graph["export"].encode("utf-8"))
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall("g:graph/g:node", ns)) == 8
    assert len(root.findall("g:graph/g:edge", ns)) == len(graph["graph"]["edges"]) > 0

    # a path two steps down the references, from the lists the graph stored: no request
    n2 = next(n for n in graph["graph"]["nodes"] if n["id"] == "n2")
    middle = next(r for r in corpus.records if r.native_filename == n2["filename"])
    far = next(corpus.by_id[x] for x in middle.references if x in corpus.by_id and x not in seed.references)
    before = len(sim.requests)
    path = await served.finish(
        await served.call("find_citation_path", {"source": seed_ref, "target": far.native_filename,
                                                 "direction": "references"})
    )  # fmt: skip
    assert path["status"] == "completed", path["errors"]
    steps = path["result"]["path"]
    assert path["result"]["found"] is True and [s["relation"] for s in steps] == [None, "cited_by", "cited_by"]
    assert [s["title"] for s in steps] == [seed.title, middle.title, far.title]
    assert path["result"]["requests"] == 0 and len(sim.requests) == before


def citer(i: int) -> dict[str, object]:
    """A journal paper citing LONG (records.jsonl format), newer than the corpus: listed first."""
    return {
        "id": f"r97{i:02d}", "db": "CJFD", "filename": f"FXYJ2026{i + 1:02d}097", "type": "期刊",
        "title": f"引证追加研究第{i + 1}号", "authors": [{"name": f"追加{i}", "institution": "某大学"}],
        "source": "法学研究", "year": 2026, "date": f"2026-{i + 1:02d}-10", "abstract": "追加记录。",
        "keywords": ["追加"], "cited": 0, "downloads": 1, "references": [LONG],
    }  # fmt: skip


async def test_a_graph_and_a_path_take_every_citing_paper_past_the_thirtieth(
    served: StdioServer, sim: SimServer
) -> None:
    added = [sim.add_record(citer(i)) for i in range(8)]
    try:
        paper = sim.corpus.by_id[LONG]
        citing = len(sim.corpus.citing(LONG))
        assert citing > 30
        meta = await served.finish(await served.call("get_metadata", {"titles": [paper.title]}))
        assert meta["status"] == "completed", meta["errors"]
        ref = meta["result"]["records"][0]["record_ref"]
        listed = await served.finish(await served.call("get_citing", {"paper": ref, "limit": 50}))
        assert listed["result"]["total"] == citing == len(listed["result"]["items"])
        last = listed["result"]["items"][-1]

        args = {"seeds": [ref], "direction": "citing", "depth": 1}
        graph = (await served.finish(await served.call("citation_graph", args)))["result"]
        assert len(graph["graph"]["nodes"]) == 1 + citing and len(graph["graph"]["edges"]) == citing
        assert graph["complete"] is True and graph["max_nodes_reached"] is False
        assert graph["requests"] == 0  # every page was stored by get_citing

        path = await served.finish(await served.call(
            "find_citation_path", {"source": ref, "target": last["filename"], "direction": "citing", "max_depth": 1}
        ))  # fmt: skip
        assert path["result"]["found"] is True and path["result"]["complete"] is True
        assert [s["relation"] for s in path["result"]["path"]] == [None, "cites"]
        assert {k: n for k, n in api_calls(sim).items() if n > 1} == {}  # no list page asked twice
    finally:
        for record_id in added:
            sim.remove_record(record_id)


async def test_a_paper_cited_by_hundreds_is_paged_to_its_end_and_its_graph_written_to_a_file(
    served: StdioServer, sim: SimServer, tmp_path: Path
) -> None:
    records = hub_records(citers=300, refs_each=5)
    added = [sim.add_record(r) for r in records]
    try:
        meta = await served.finish(await served.call("get_metadata", {"titles": [HUB_TITLE]}))
        assert meta["status"] == "completed", meta["errors"]
        ref = meta["result"]["records"][0]["record_ref"]
        per_db = Counter(r["db"] for r in records[1:])  # CJFD, CMFD, CDFD: one list each
        pages_past_first = sum(-(-n // 10) - 1 for n in per_db.values())

        before = len(sim.requests)
        last = await served.finish(await served.call("get_citing", {"paper": ref, "offset": 290, "limit": 10}))
        assert last["status"] == "completed", last["errors"]
        page = last["result"]
        assert page["total"] == 300 and len(page["items"]) == 10 and page["next_offset"] is None
        # the counts, the 12 databases' first pages, then every later page of the three lists
        assert page["requests"] == 1 + 12 + pages_past_first == len(sim.requests) - before
        again = await served.finish(await served.call("get_citing", {"paper": ref, "offset": 290, "limit": 10}))
        assert again["result"]["requests"] == 0 and again["result"]["items"] == page["items"]

        args = {"seeds": [ref], "direction": "citing", "max_nodes": 500, "format": "graphml", "filename": "hub"}
        done = await served.finish(await served.call("citation_graph", args))
        assert done["status"] == "completed", done["errors"]
        graph = done["result"]
        assert graph["requests"] == 0 and graph["complete"] is True  # get_citing stored every page
        assert (graph["node_count"], graph["edge_count"]) == (301, 300) and graph["omitted"] is True
        path = Path(graph["path"])
        assert path == tmp_path / "data" / "exports" / "hub.graphml"
        root = ET.fromstring(path.read_bytes())
        ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
        assert len(root.findall("g:graph/g:node", ns)) == 301 and len(root.findall("g:graph/g:edge", ns)) == 300
        assert {k: n for k, n in api_calls(sim).items() if n > 1} == {}  # no list page asked twice
    finally:
        for record_id in added:
            sim.remove_record(record_id)
