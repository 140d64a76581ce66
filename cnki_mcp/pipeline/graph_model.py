"""The citation graph as the tools return it, and the pair counts computed on it. Pure."""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from cnki_mcp.parse.citations import CitationType

MAX_PAIRS = 20


class RefWhenStored(BaseModel):
    """`record_ref` is written only when the paper is stored: a `"record_ref": null` on every
    list-only node of a 500-node graph was 9 KB of its 64 KB inline cap (DESIGN.md "Citation graph")."""

    @model_serializer(mode="wrap")
    def _drop_missing_ref(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("record_ref") is None:
            data.pop("record_ref", None)
        return data


class GraphNode(RefWhenStored):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    source: str | None = None
    type: CitationType | None = None
    filename: str | None = None
    record_ref: str | None = None  # the stored paper's, which the other paper tools take
    depth: int
    seed: bool = False
    expanded: bool = False


class PairCount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: str
    b: str
    count: int


class CitationGraph(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[tuple[str, str]] = Field(default_factory=list)  # (citing id, cited id)
    co_citation: list[PairCount] = Field(default_factory=list)
    coupling: list[PairCount] = Field(default_factory=list)


def _pairs(groups: dict[str, set[str]], limit: int) -> list[PairCount]:
    counts: Counter[tuple[str, str]] = Counter()
    for members in groups.values():
        for a, b in combinations(sorted(members), 2):
            counts[(a, b)] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [PairCount(a=a, b=b, count=n) for (a, b), n in ranked[:limit]]


def co_citation(edges: list[tuple[str, str]], limit: int = MAX_PAIRS) -> list[PairCount]:
    """Pairs of nodes cited together: how many nodes of the graph cite both."""
    cited_by: dict[str, set[str]] = {}
    for citing, cited in edges:
        cited_by.setdefault(citing, set()).add(cited)
    return _pairs(cited_by, limit)


def coupling(edges: list[tuple[str, str]], limit: int = MAX_PAIRS) -> list[PairCount]:
    """Bibliographic coupling: how many nodes of the graph both papers of a pair cite."""
    citers: dict[str, set[str]] = {}
    for citing, cited in edges:
        citers.setdefault(cited, set()).add(citing)
    return _pairs(citers, limit)
