"""Citation graph exports (pipeline/graph_export.py), pair counts (pipeline/graph_model.py) and the
result as answered inline (pipeline/citegraph.py `fit_inline`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from cnki_mcp.pipeline.citegraph import MAX_INLINE_BYTES, GraphResult, fit_inline
from cnki_mcp.pipeline.graph_export import to_graphml, to_json, to_mermaid
from cnki_mcp.pipeline.graph_model import CitationGraph, GraphNode, co_citation, coupling

NS = {"g": "http://graphml.graphdrawing.org/xmlns"}
EDGES = [("n1", "n2"), ("n1", "n3"), ("n4", "n2"), ("n4", "n3"), ("n2", "n3")]


def graph() -> CitationGraph:
    nodes = [
        GraphNode(id="n1", title='A "quoted" <title> & more', year=2020, depth=0, seed=True, expanded=True),
        GraphNode(id="n2", title="乙\n文", depth=1),
        GraphNode(id="n3", title="丙" * 60, year=2001, depth=1),
        GraphNode(id="n4", title="丁", depth=0, seed=True),
    ]
    return CitationGraph(nodes=nodes, edges=EDGES, co_citation=co_citation(EDGES), coupling=coupling(EDGES))


def test_co_citation_and_coupling_count_the_papers_each_pair_shares() -> None:
    assert [(p.a, p.b, p.count) for p in co_citation(EDGES)] == [("n2", "n3", 2)]
    assert [(p.a, p.b, p.count) for p in coupling(EDGES)] == [("n1", "n4", 2), ("n1", "n2", 1), ("n2", "n4", 1)]


def test_graphml_parses_back_with_every_node_and_edge() -> None:
    root = ET.fromstring(to_graphml(graph()).encode("utf-8"))
    g = root.find("g:graph", NS)
    assert g is not None and g.get("edgedefault") == "directed"
    nodes = {n.get("id"): {d.get("key"): d.text for d in n.findall("g:data", NS)} for n in g.findall("g:node", NS)}
    assert nodes["n1"]["title"] == 'A "quoted" <title> & more' and nodes["n1"]["seed"] == "true"
    assert nodes["n1"]["year"] == "2020" and "year" not in nodes["n2"]
    assert [(e.get("source"), e.get("target")) for e in g.findall("g:edge", NS)] == EDGES
    keys = {k.get("id"): k.get("attr.type") for k in root.findall("g:key", NS)}
    assert keys["year"] == "int" and keys["title"] == "string"


def test_mermaid_has_one_line_per_node_and_edge_and_safe_labels() -> None:
    lines = to_mermaid(graph()).splitlines()
    assert lines[0] == "graph LR" and len(lines) == 1 + 4 + len(EDGES)
    assert lines[1] == "  n1[\"A 'quoted' <title> & more (2020)\"]"
    assert lines[2] == '  n2["乙 文"]'
    assert '…' in lines[3] and lines[3].endswith(' (2001)"]') and len(lines[3]) < 70
    assert lines[5:] == [f"  {a} --> {b}" for a, b in EDGES]


def test_graph_json_lists_nodes_edges_and_pair_counts() -> None:
    data = json.loads(to_json(graph()))
    assert [n["id"] for n in data["nodes"]] == ["n1", "n2", "n3", "n4"]
    assert data["edges"][0] == {"source": "n1", "target": "n2"} and data["co_citation"][0]["count"] == 2


def big_result(nodes: int, per_node: int) -> GraphResult:
    """A walked graph: `nodes` papers with long titles, each citing the `per_node` before it."""
    listed = [GraphNode(id=f"n{i}", title="引文网络" * 30 + str(i), depth=0 if i == 1 else 1, seed=i == 1)
              for i in range(1, nodes + 1)]  # fmt: skip
    edges = [(f"n{i}", f"n{j}") for i in range(2, nodes + 1) for j in range(max(1, i - per_node), i)]
    g = CitationGraph(nodes=listed, edges=edges, co_citation=co_citation(edges), coupling=coupling(edges))
    return GraphResult(graph=g, format="graphml", export=to_graphml(g), complete=True, expanded=nodes,
                       pending=0, requests=0, pages_from_store=0)  # fmt: skip


def test_a_graph_result_over_the_inline_limit_is_answered_as_counts_and_pairs_with_the_way_to_the_file() -> None:
    big = big_result(500, 40)
    assert len(big.model_dump_json().encode("utf-8")) > MAX_INLINE_BYTES
    fitted = fit_inline(big, "graphml")
    assert len(fitted.model_dump_json().encode("utf-8")) < MAX_INLINE_BYTES
    assert fitted.omitted is True and fitted.export is None and fitted.graph.edges == []
    assert (fitted.node_count, fitted.edge_count) == (500, sum(min(40, i - 1) for i in range(2, 501)))
    named = {p.a for p in fitted.graph.co_citation} | {p.b for p in fitted.graph.co_citation}
    assert named <= {n.id for n in fitted.graph.nodes} and any(n.seed for n in fitted.graph.nodes)
    assert any("filename" in w for w in fitted.warnings) and fitted.complete is True


def test_a_small_graph_result_stays_whole_and_counted() -> None:
    small = big_result(20, 3)
    fitted = fit_inline(small, "graphml")
    assert fitted.omitted is False and fitted.graph == small.graph and fitted.export == small.export
    assert (fitted.node_count, fitted.edge_count) == (20, len(small.graph.edges))


def test_where_no_file_may_be_written_an_oversized_graph_advises_a_smaller_one() -> None:
    """Read-only mode refuses `filename` (server/readonly.py): the warning must not send the
    client there."""
    fitted = fit_inline(big_result(500, 40), "graphml", files=False)
    assert fitted.omitted is True and fitted.graph.edges == []
    assert fitted.warnings and not any("filename" in w for w in fitted.warnings)
    assert any("max_nodes" in w for w in fitted.warnings)


def test_a_graph_result_a_client_would_cut_is_not_answered_inline() -> None:
    # 100-odd papers with their edges: well under the old 512 KB, over ~22,000 tokens of text
    medium = big_result(120, 3)
    assert 64 * 1024 < len(medium.model_dump_json().encode("utf-8")) < 512 * 1024
    fitted = fit_inline(medium, "graphml")
    assert fitted.omitted is True and fitted.export is None and fitted.graph.edges == []
    assert len(fitted.model_dump_json().encode("utf-8")) < 64 * 1024
    assert any("filename" in w for w in fitted.warnings)
