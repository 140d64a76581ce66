"""Citation graph exports: JSON, GraphML, Mermaid. Pure functions of the graph model."""

from __future__ import annotations

import json
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

from cnki_mcp.pipeline.graph_model import CitationGraph

ExportFormat = Literal["json", "graphml", "mermaid"]
_NODE_KEYS = ("title", "year", "type", "source", "filename", "depth", "seed", "expanded")


def to_json(graph: CitationGraph) -> str:
    """Nodes, edges (citing -> cited) and the pair counts, as one JSON document."""
    return json.dumps(
        {
            "nodes": [n.model_dump(mode="json") for n in graph.nodes],
            "edges": [{"source": a, "target": b} for a, b in graph.edges],
            "co_citation": [p.model_dump(mode="json") for p in graph.co_citation],
            "coupling": [p.model_dump(mode="json") for p in graph.coupling],
        },
        ensure_ascii=False,
    )


def to_graphml(graph: CitationGraph) -> str:
    """GraphML (directed, an edge from the citing paper to the cited one)."""
    types = {"year": "int", "depth": "int", "seed": "boolean", "expanded": "boolean"}
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']  # fmt: skip
    for key in _NODE_KEYS:
        out.append(f'<key id="{key}" for="node" attr.name="{key}" attr.type="{types.get(key, "string")}"/>')
    out.append('<graph id="citations" edgedefault="directed">')
    for n in graph.nodes:
        out.append(f"<node id={quoteattr(n.id)}>")
        for key in _NODE_KEYS:
            value = getattr(n, key)
            if value is None:
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f'<data key="{key}">{escape(text)}</data>')
        out.append("</node>")
    for i, (a, b) in enumerate(graph.edges):
        out.append(f"<edge id=\"e{i}\" source={quoteattr(a)} target={quoteattr(b)}/>")
    out.append("</graph></graphml>")
    return "\n".join(out)


def _mermaid_label(text: str) -> str:
    # Mermaid labels are quoted: double quotes and line breaks cannot appear inside them.
    clean = " ".join(text.split()).replace('"', "'").replace("`", "'")
    return clean if len(clean) <= 40 else clean[:39] + "…"


def to_mermaid(graph: CitationGraph) -> str:
    """A Mermaid flowchart: one node per paper (title and year), arrows citing -> cited."""
    lines = ["graph LR"]
    for n in graph.nodes:
        label = _mermaid_label(n.title) + (f" ({n.year})" if n.year else "")
        lines.append(f'  {n.id}["{label}"]')
    for a, b in graph.edges:
        lines.append(f"  {a} --> {b}")
    return "\n".join(lines)


def export(graph: CitationGraph, fmt: ExportFormat) -> str:
    return {"json": to_json, "graphml": to_graphml, "mermaid": to_mermaid}[fmt](graph)
