"""End to end over stdio (headless Chromium inside `cnki-mcp serve`) against the simulator: a plan of
3 concepts x 5 synonyms (which used to fail with QUERY_TOO_COMPLEX, 125 DNF branches) runs as one
row per concept with CNKI's in-field `+`, and a structured search whose rows exceed 120 characters
runs as two queries on one channel and returns exactly the corpus records it means."""

from __future__ import annotations

import pytest

from cnki_mcp.identity import title_key
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.server import SimServer
from tests.e2e.support import GRID, StdioServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLAN = [
    ["自动驾驶", "无人驾驶", "智能网联汽车", "自主驾驶", "智能驾驶"],
    ["产品责任", "归责原则", "侵权责任", "严格责任", "生产者责任"],
    ["责任", "汽车", "算法", "风险", "事故"],
]


async def test_three_by_five_concept_plan_search_completes_with_candidates(
    served: StdioServer, sim: SimServer
) -> None:
    started = await served.call(
        "search",
        {
            "query": "自动驾驶汽车产品责任的归责",
            "concept_groups": PLAN,
            "mode": "precise",
            "limit": 5,
            "options": {"max_pages": 1, "metadata": "basic"},
        },
    )
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    result = record["result"]
    assert result["plan"]["concepts"] == PLAN
    coverage = {c["channel"]: c for c in result["coverage"]}
    assert set(coverage) == {"q1", "q2", "q3"}
    assert all(c["queries"] == 1 and not c["failed"] for c in coverage.values())
    assert coverage["q1"]["pages"] == 1
    # title and keywords are subsets of the subject channel: asked only when its first page did not
    # list every result (DESIGN.md "Request policies")
    sent = [c for c in coverage.values() if c["stopped"] != "local"]
    assert all(c["pages"] == 1 for c in sent)
    assert all(c["pages"] == 0 and coverage["q1"]["exhausted"] for c in coverage.values() if c["stopped"] == "local")
    assert result["candidate_count"] > 0 and result["selected_count"] > 0
    searches = [e for e in sim.requests_for(GRID, "POST") if any(" + " in c["value"] for c in e.params["query"])]
    assert len(searches) == len(sent)  # one request per channel asked, three rows each
    for e in searches:
        assert [c["value"] for c in e.params["query"]] == [" + ".join(g) for g in PLAN]


async def test_structured_search_split_into_two_queries_returns_exactly_its_records(
    served: StdioServer, sim: SimServer
) -> None:
    corpus: Corpus = sim.corpus
    # Three title concepts whose ORs do not fit one 120-character row: 4 x 4 x 4 chunks = 64 branches,
    # sent as two queries. Padding terms (never in the corpus) make the rows long.
    real = [["自动驾驶", "无人驾驶"], ["责任", "归责"], ["研究", "问题", "分析"]]
    groups = [g + [f"{i}号占位检索词" + "甲" * 33 for i in range(8)] for g in real]
    expression = {
        "op": "and",
        "items": [{"op": "or", "items": [{"field": "title", "value": t} for t in g]} for g in groups],
    }
    expected = [r for r in corpus.records if all(any(t in r.title for t in g) for g in real)]
    assert 0 < len(expected) <= 100

    started = await served.call("structured_search", {"expression": expression, "limit": 100})
    record = await served.finish(started)
    assert record["status"] == "completed", record["errors"]
    (coverage,) = record["result"]["coverage"]
    assert coverage["queries"] == 2 and coverage["pages"] >= 2 and coverage["exhausted"]
    got = {title_key(r["title"]) for r in record["result"]["results"]}
    assert got == {title_key(r.title) for r in expected}
