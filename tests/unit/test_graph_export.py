"""Citation graph exports (pipeline/graph_export.py) and pair counts (pipeline/graph_model.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

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


def test_pair_counts() -> None:
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


def test_json_round_trips() -> None:
    data = json.loads(to_json(graph()))
    assert [n["id"] for n in data["nodes"]] == ["n1", "n2", "n3", "n4"]
    assert data["edges"][0] == {"source": "n1", "target": "n2"} and data["co_citation"][0]["count"] == 2
