"""`citation_graph` and `find_citation_path`: breadth-first walks over CNKI's citation lists
(DESIGN.md "Citation graph", docs/citation-api.md).

Both are operations with a request budget. Every list page goes through `CitationReader`, which
keeps each answered page in the store; the checkpoint is the input alone, so `continue` walks
again from the seeds and every page it already has costs nothing: no request is repeated. No
detail page is visited: lists are read with the detail link a list entry (or the store) gives."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.clock import Clock
from cnki_mcp.errors import BudgetExhausted, CnkiError
from cnki_mcp.jobs import OperationContext
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.parse.citations import CitationItem, CitationType
from cnki_mcp.pipeline.citations import CitationReader, PaperHandle, handle_of, resolve_paper
from cnki_mcp.pipeline.enrich import is_fatal
from cnki_mcp.pipeline.graph_export import ExportFormat, export
from cnki_mcp.pipeline.graph_model import CitationGraph, GraphNode, RefWhenStored, co_citation, coupling
from cnki_mcp.site.backend import CitationBackend
from cnki_mcp.store import Store

Direction = Literal["references", "citing", "both"]
MAX_NODES_DEFAULT = 100
MAX_NODES_LIMIT = 500
PATH_MAX_NODES = 5000
# contract: a result over 64 KB of UTF-8 (at most ~22,000 tokens, under a client's cap: Claude Code
# refuses over 25,000 by default) gives its graph only as a file; it was 512 KB (~170,000 tokens)
MAX_INLINE_BYTES = 64 * 1024
ListKind = Literal["references", "citations"]
_KINDS: dict[str, tuple[ListKind, ...]] = {
    "references": ("references",),
    "citing": ("citations",),
    "both": ("references", "citations"),
}


class GraphInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: list[str] = Field(min_length=1, max_length=10)
    direction: Direction = "references"
    depth: int = Field(default=1, ge=1, le=3)
    max_nodes: int = Field(default=MAX_NODES_DEFAULT, ge=2, le=MAX_NODES_LIMIT)
    types: list[CitationType] | None = None
    format: ExportFormat = "json"
    filename: str | None = Field(default=None, max_length=200)  # the export file (server: data/exports/)


class ShortList(BaseModel):
    """A list CNKI answered with fewer entries than the total it gave (an empty later page)."""

    model_config = ConfigDict(extra="forbid")

    title: str
    filename: str | None = None
    kind: ListKind
    read: int
    total: int


class GraphResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    graph: CitationGraph
    format: ExportFormat
    export: str | None = None  # GraphML or Mermaid text (format json: the graph itself)
    node_count: int = Field(0, description="节点总数（omitted 时 graph 只列起点与同被引、耦合对中的节点）")
    edge_count: int = Field(0, description="边总数")
    omitted: bool = Field(False, description="节点与边未全部内联：已写入 path 的文件，或结果超过 64 KB（给 filename）")
    path: str | None = Field(None, description="写出的文件（指定 filename 且遍历结束时）")
    complete: bool = Field(
        description="深度内没有遗漏：预算、错误、max_nodes 或知网少给的列表都会使其为 false"
    )
    expanded: int
    pending: int = Field(description="在节点内、深度内尚未展开的文献（预算用完或出错）")
    max_nodes_reached: bool = Field(False, description="节点数达到 max_nodes，深度内另有文献未纳入")
    left_out: int = Field(0, description="因 max_nodes 未纳入的深度内文献篇数（已读的列表中所见）")
    short_lists: list[ShortList] = Field(default_factory=list, description="知网给出的条目少于其总数的列表")
    warnings: list[str] = Field(default_factory=list, description="结果不完整的原因与补全办法")
    requests: int
    pages_from_store: int


class PathInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1, max_length=200)
    target: str = Field(min_length=1, max_length=200)
    direction: Direction = "both"
    max_depth: int = Field(default=2, ge=1, le=3)


class PathStep(RefWhenStored):
    model_config = ConfigDict(extra="forbid")

    title: str
    filename: str | None = None
    record_ref: str | None = None  # the stored paper's (absent when the paper is known only from the lists)
    year: int | None = None
    relation: Literal["cites", "cited_by"] | None = None  # how this paper relates to the previous one


class PathResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    found: bool
    path: list[PathStep] = Field(default_factory=list)
    explored: int
    complete: bool  # the whole space within max_depth was searched (False: budget, errors, short lists)
    short_lists: list[ShortList] = Field(default_factory=list, description="知网给出的条目少于其总数的列表")
    warnings: list[str] = Field(default_factory=list, description="未找到时结论不完整的原因")
    requests: int
    pages_from_store: int


class _Walk:
    """Breadth-first expansion from seeds; nodes keyed by file name (or title for free text)."""

    def __init__(self, reader: CitationReader, ctx: OperationContext, *, kinds: tuple[ListKind, ...],
                 depth: int, max_nodes: int, types: list[CitationType] | None, label: str) -> None:  # fmt: skip
        self.reader, self.ctx, self.kinds, self.label = reader, ctx, kinds, label
        self.depth, self.max_nodes, self.types = depth, max_nodes, types
        self.nodes: dict[str, GraphNode] = {}
        self.left_out: set[str] = set()  # papers within the depth max_nodes kept out
        self.short: list[ShortList] = []
        self.failed: set[str] = set()  # papers a list of which failed (recorded as item errors)
        self.handles: dict[str, PaperHandle] = {}
        self.parent: dict[str, tuple[str, str]] = {}  # key -> (previous key, relation)
        self.edges: dict[tuple[str, str], None] = {}
        self.queue: deque[str] = deque()
        self.expandable = 0  # nodes within the depth that have a link: the progress total
        self.done = 0  # nodes expanded

    def add(self, h: PaperHandle, depth: int, *, seed: bool = False) -> bool:
        if h.key in self.nodes:
            return False
        if len(self.nodes) >= self.max_nodes:
            self.left_out.add(h.key)
            return False
        item = h.item
        self.nodes[h.key] = GraphNode(
            id=f"n{len(self.nodes) + 1}", title=h.title, depth=depth, seed=seed,
            authors=item.authors[:3] if item else [], year=item.year if item else None,
            source=item.source if item else None, type=item.type if item else None,
            filename=item.filename if item else (h.key if not h.key.startswith(("T:", "R:")) else None),
        )  # fmt: skip
        self.handles[h.key] = h
        self.queue.append(h.key)
        if depth < self.depth and h.detail_url:
            self.expandable += 1
        return True

    async def run(self, stop_at: str | None = None) -> bool:
        """Expand until the queue is empty (True) or `stop_at` is reached (True)."""
        while self.queue:
            key = self.queue.popleft()
            node = self.nodes[key]
            h = self.handles[key]
            if node.depth >= self.depth or not h.detail_url:
                continue
            for kind in self.kinds:
                try:
                    got = await self.reader.collect(h, kind, self.types, None, self.ctx)
                except BudgetExhausted:
                    self.queue.appendleft(key)
                    raise
                except CnkiError as exc:
                    if is_fatal(exc):
                        raise
                    self.ctx.add_item_error(exc, stage="citations", title=h.title, kind=kind)
                    self.failed.add(key)
                    continue
                if not got.complete:
                    self.short.append(ShortList(title=h.title, filename=node.filename, kind=kind,
                                                read=len(got.items), total=got.total))  # fmt: skip
                for item in got.items:
                    if self._link(key, item, kind, node.depth) and item.key == stop_at:
                        node.expanded = True
                        return True
            node.expanded = True
            self.done += 1
            # done of total: the papers expanded of those the walk will expand (the nodes at the
            # depth limit are never expanded, so counting them the total would never be reached)
            self.ctx.progress(self.done, self.expandable, "篇")
            # the stage is stored: after a crash the interrupted record still has the requests
            # spent (so `continue` keeps to the budget) and how far the walk came
            self.ctx.set_stage("citations", f"{self.label}：已展开 {self.done}/{self.expandable} 篇")
        return True

    def _link(self, key: str, item: CitationItem, kind: str, depth: int) -> bool:
        """Record the edge to `item`; True when `item` became a new node."""
        new = self.add(handle_of(item), depth + 1)
        if item.key not in self.nodes:
            return False
        edge = (key, item.key) if kind == "references" else (item.key, key)
        self.edges.setdefault(edge, None)
        if new:
            self.parent[item.key] = (key, "cited_by" if kind == "references" else "cites")
        return new

    def warnings(self) -> list[str]:
        """What beside `max_nodes` left papers out: papers not expanded (the budget ran out, the
        operation was cancelled or stopped), short lists, failed lists."""
        out: list[str] = []
        if self.pending:
            out.append(f"{self.pending} 篇文献尚未展开（预算用完或任务被停止）：operation_control continue "
                       "继续，已取的列表页不再请求")  # fmt: skip
        if self.short:
            out.append(f"{len(self.short)} 个列表知网给出的条目少于其总数（见 short_lists），其余条目未纳入")
        if self.failed:
            out.append(f"{len(self.failed)} 篇文献的列表读取出错（见 errors），它们的引文未纳入")
        return out

    @property
    def expanded(self) -> int:
        return sum(1 for n in self.nodes.values() if n.expanded)

    @property
    def pending(self) -> int:
        return sum(
            1 for k, n in self.nodes.items()
            if not n.expanded and n.depth < self.depth and self.handles[k].detail_url
        )  # fmt: skip

    def name_stored(self, store: Store, keys: list[str] | None = None) -> None:
        """Give each node (of `keys`, else all) that is a stored paper its record_ref, in one read."""
        nodes = {k: self.nodes[k] for k in (self.nodes if keys is None else keys)}
        stored = store.refs_by_filenames(n.filename for n in nodes.values() if n.filename)
        for key, node in nodes.items():
            node.record_ref = self.handles[key].record_ref or stored.get("".join((node.filename or "").split()).upper())

    def graph(self) -> CitationGraph:
        ids = [(self.nodes[a].id, self.nodes[b].id) for a, b in self.edges]
        return CitationGraph(nodes=list(self.nodes.values()), edges=ids,
                             co_citation=co_citation(ids), coupling=coupling(ids))  # fmt: skip


# What the server does with a result before it is answered: `(result, finished)` -> result; it
# writes the export file (`filename`) once the walk has finished. Pure callers pass none.
Deliver = Callable[[GraphResult, bool], GraphResult]


def fit_inline(result: GraphResult, fmt: ExportFormat, files: bool = True) -> GraphResult:
    """The result as answered: the whole graph inline while it stays under 64 KB and no file
    holds it; else the counts, the pairs and the nodes they name (and the seeds), with a warning
    naming `filename` (the lists read stay stored: a new call costs nothing), or, where no file
    may be written (`files` false: read-only mode refuses `filename`), a smaller graph."""
    graph = result.graph
    counted = result.model_copy(update={"node_count": len(graph.nodes), "edge_count": len(graph.edges)})
    if result.path is None and len(counted.model_dump_json().encode("utf-8")) <= MAX_INLINE_BYTES:
        return counted
    named = {p.a for p in graph.co_citation + graph.coupling} | {p.b for p in graph.co_citation + graph.coupling}
    kept = [n for n in graph.nodes if n.seed or n.id in named]
    warnings = list(result.warnings)
    if result.path is None and files:
        warnings.append(f"结果超过 64 KB（客户端会截断），{len(graph.nodes)} 个节点与 {len(graph.edges)} 条边未内联：给 filename "
                        f"把 {fmt} 写到 data/exports/ 重新调用（已取的列表页不再请求）")  # fmt: skip
    elif result.path is None:
        warnings.append(f"结果超过 64 KB（客户端会截断），{len(graph.nodes)} 个节点与 {len(graph.edges)} 条边未内联；只读模式下不能写文件："
                        "减小 max_nodes 或 depth 重新调用（已取的列表页不再请求）")  # fmt: skip
    return counted.model_copy(update={
        "graph": CitationGraph(nodes=kept, edges=[], co_citation=graph.co_citation, coupling=graph.coupling),
        "export": None, "omitted": True, "warnings": warnings,
    })  # fmt: skip


def _input_of(ctx: OperationContext, inp: BaseModel | None, cls: type[Any], tool: str) -> Any:
    """The input of a fresh start, or the one the checkpoint kept (a `continue`)."""
    resumed = ctx.resume_from
    if isinstance(resumed, dict) and resumed.get("tool") == tool:
        # a checkpoint written before lists were read whole carries the old cap: every entry now
        kept = {k: v for k, v in resumed["input"].items() if k != "per_paper"}
        return cls.model_validate(kept)
    if inp is None:
        raise ValueError("no input and no checkpoint")
    return inp


async def citation_graph(
    store: Store, backend: CitationBackend, clock: Clock, inp: GraphInput | None, ctx: OperationContext,
    flights: KeyedLocks | None = None, deliver: Deliver | None = None, files: bool = True,
) -> GraphResult:
    """The walk and its result; `files` false where no export file may be written (read-only
    mode): an oversized result then advises a smaller graph instead of `filename`."""
    inp = _input_of(ctx, inp, GraphInput, "citation_graph")
    assert inp is not None
    ctx.checkpoint({"tool": "citation_graph", "input": inp.model_dump(mode="json")})
    seeds = [resolve_paper(store, s) for s in dict.fromkeys(inp.seeds)]
    reader = CitationReader(store, backend, clock, KeyedLocks() if flights is None else flights)
    walk = _Walk(reader, ctx, kinds=_KINDS[inp.direction], depth=inp.depth, max_nodes=inp.max_nodes,
                 types=inp.types, label="引文网络")  # fmt: skip
    for h in seeds:
        walk.add(h, 0, seed=True)
    ctx.set_stage("citations", f"引文网络：{len(seeds)} 篇起点，深度 {inp.depth}")

    def result(complete: bool) -> GraphResult:
        walk.name_stored(store)
        graph = walk.graph()
        warnings = walk.warnings()
        if walk.left_out:
            warnings.insert(0, f"节点数已达 max_nodes={inp.max_nodes}，深度内另有 {len(walk.left_out)} 篇未纳入；"
                               f"提高 max_nodes（最多 {MAX_NODES_LIMIT}）重新调用，已取的列表页不再请求")  # fmt: skip
        full = GraphResult(
            graph=graph, format=inp.format, complete=complete and walk.pending == 0 and not warnings,
            export=None if inp.format == "json" else export(graph, inp.format),
            expanded=walk.expanded, pending=walk.pending, max_nodes_reached=bool(walk.left_out),
            left_out=len(walk.left_out), short_lists=walk.short, warnings=warnings,
            requests=reader.requests, pages_from_store=reader.pages_from_store,
        )  # fmt: skip
        return fit_inline(full if deliver is None else deliver(full, complete), inp.format, files)

    try:
        await walk.run()
    except (CnkiError, asyncio.CancelledError):
        # a budget, an error, the active-time deadline or a cancel: the graph read so far
        ctx.set_result(result(False))
        raise
    return result(True)


async def find_citation_path(
    store: Store, backend: CitationBackend, clock: Clock, inp: PathInput | None, ctx: OperationContext,
    flights: KeyedLocks | None = None,
) -> PathResult:
    inp = _input_of(ctx, inp, PathInput, "find_citation_path")
    assert inp is not None
    ctx.checkpoint({"tool": "find_citation_path", "input": inp.model_dump(mode="json")})
    source = resolve_paper(store, inp.source)
    target = resolve_paper(store, inp.target)
    reader = CitationReader(store, backend, clock, KeyedLocks() if flights is None else flights)
    walk = _Walk(reader, ctx, kinds=_KINDS[inp.direction], depth=inp.max_depth, max_nodes=PATH_MAX_NODES,
                 types=None, label="寻找引文路径")  # fmt: skip
    walk.add(source, 0, seed=True)
    ctx.set_stage("citations", f"寻找引文路径（最多 {inp.max_depth} 步）")

    def result(complete: bool) -> PathResult:
        on_path: list[str] = []  # from the target back to the source
        key: str | None = target.key if target.key in walk.nodes else None
        while key is not None:
            on_path.append(key)
            key = walk.parent[key][0] if key in walk.parent else None
        walk.name_stored(store, on_path)
        steps: list[PathStep] = []
        for key in on_path:
            node, prev = walk.nodes[key], walk.parent.get(key)
            steps.append(PathStep(title=node.title, filename=node.filename, record_ref=node.record_ref,
                                  year=node.year, relation=prev[1] if prev else None))  # fmt: skip
        found = bool(steps)
        warnings = [] if found else walk.warnings()
        if walk.left_out and not found:
            warnings.insert(0, f"搜索范围超过 {PATH_MAX_NODES} 篇，其余 {len(walk.left_out)} 篇未查；"
                               "减小 max_depth 或改变 direction")  # fmt: skip
        return PathResult(found=found, path=list(reversed(steps)), explored=walk.expanded,
                          complete=found or (complete and not warnings), short_lists=walk.short,
                          warnings=warnings, requests=reader.requests,
                          pages_from_store=reader.pages_from_store)  # fmt: skip

    if source.key == target.key:
        return result(True)
    try:
        await walk.run(stop_at=target.key)
    except (CnkiError, asyncio.CancelledError):
        ctx.set_result(result(False))  # what was searched so far and why it is not complete
        raise
    return result(True)
