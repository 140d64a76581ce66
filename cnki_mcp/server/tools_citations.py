"""get_references, get_citing, citation_graph, find_citation_path: CNKI's citation lists as
operations (DESIGN.md "Citation graph", docs/citation-api.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp.errors import CnkiError, DocumentNotFound
from cnki_mcp.jobs import OperationKind
from cnki_mcp.parse.citations import CitationType
from cnki_mcp.pipeline.citations import (
    MAX_OFFSET,
    CitationListInput,
    CitationListResult,
    citation_list,
    resolve_paper,
)
from cnki_mcp.pipeline.citegraph import (
    Deliver,
    GraphInput,
    GraphResult,
    PathInput,
    PathResult,
    citation_graph,
    find_citation_path,
)
from cnki_mcp.pipeline.graph_export import ExportFormat, export
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import OperationView
from cnki_mcp.server.progress import start_operation, typed_view
from cnki_mcp.server.tools_cite import ensure_free, export_file_name, save_export
from cnki_mcp.server.tools_read import budget_of

LIST_DESCRIPTION = """{what}（知网引文接口，每页 10 条一次请求；读过的页存本地，再查不花请求）。paper：record_ref、filename、url 或题名。offset/limit 分页，next_offset 为下一页。"""
GRAPH_DESCRIPTION = """从 seeds（record_ref、filename、url 或题名）广度优先建引文网络，每个列表取全部条目。预算用完为 partial，可 operation_control continue（已取的页不再请求）。返回节点、边（引用方→被引方）、同被引与耦合计数；graphml/mermaid 见 export。
filename：遍历结束时把 format 格式的整张图写到 data/exports/（不覆盖：FILE_EXISTS），结果只列计数与同被引、耦合对（omitted）；结果超过 64 KB 且没给 filename 时同样 omitted 并提示。
complete=false 时 warnings 说明缺了什么：max_nodes_reached（left_out 篇未纳入，提高 max_nodes 重新调用）、pending（预算用完未展开）、short_lists、出错的列表。"""
GRAPH_EXTENSIONS: dict[str, str] = {"json": "json", "graphml": "graphml", "mermaid": "mmd"}
PATH_DESCRIPTION = """在预算内找两篇文献之间的引文路径（source、target 为 record_ref、filename、url 或题名），每个列表取全部条目。path 逐篇给出与前一篇的关系：cites 引用前一篇、cited_by 被前一篇引用。found=false 且 complete=false 为没查完（预算用完可 continue，原因见 warnings），不能断定无路径。"""

TypesArg = Annotated[list[CitationType] | None, Field(description="文献类型过滤")]
Verification = Annotated[Literal["ask", "skip"], Field(description="ask：遇到验证等待处理；skip：跳过")]


class CitationListOperation(OperationView):
    result: CitationListResult | None = Field(default=None, description="列表的一页")


class GraphOperation(OperationView):
    result: GraphResult | None = Field(default=None, description="引文网络（完成或部分完成时）")


class PathOperation(OperationView):
    result: PathResult | None = Field(default=None, description="路径（完成或部分完成时）")


def _origins(services: Any) -> tuple[str, ...]:
    origin = services.settings.site_origin
    return (origin,) if origin else ()


def graph_file(services: Any, filename: str | None, fmt: ExportFormat) -> Deliver | None:
    """With `filename`: the graph's export written to data/exports/ once the walk has finished
    (a partial walk writes nothing: `continue` finishes it and writes then). A file that
    appeared meanwhile is left alone and said in `warnings`."""
    if filename is None:
        return None
    data_dir = services.settings.data_dir

    def deliver(result: GraphResult, finished: bool) -> GraphResult:
        if not finished:
            note = f"遍历未结束，{filename} 尚未写出：operation_control continue 完成后写出"
            return result.model_copy(update={"warnings": [*result.warnings, note]})
        try:
            path = save_export(data_dir, filename, export(result.graph, fmt))
        except CnkiError as exc:
            return result.model_copy(update={"warnings": [*result.warnings, f"{filename} 未写出：{exc.message}"]})
        return result.model_copy(update={"path": str(path)})

    return deliver


def continue_runner(services: Any, checkpoint: dict[str, Any]) -> Any:
    """The runner that continues a citation walk; the input comes from `ctx.resume_from`."""
    flights = services.citation_flights
    if checkpoint.get("tool") == "find_citation_path":

        async def path_runner(op: Any) -> Any:
            return await find_citation_path(services.store, services.backend, services.clock, None, op, flights)

        return path_runner
    kept = checkpoint.get("input") or {}
    deliver = graph_file(services, kept.get("filename"), kept.get("format", "json"))

    async def runner(op: Any) -> Any:
        return await citation_graph(services.store, services.backend, services.clock, None, op, flights, deliver,
                                    files=not services.settings.read_only)  # fmt: skip

    return runner


def known_paper(store: Any, paper: str, call: Callable[[str], str]) -> None:
    """DOCUMENT_NOT_FOUND (or IDENTITY_AMBIGUOUS) before any operation starts for a paper the tools
    cannot read; a graph node id whose graph names its filename gets `next_step`, `call` of it."""
    try:
        resolve_paper(store, paper)
    except DocumentNotFound as exc:
        filename = exc.details.get("filename")
        if filename and "next_step" not in exc.details:
            exc.details["next_step"] = call(filename)
        raise


def _path_call(source: str, target: str, direction: str, max_depth: int) -> str:
    return f"find_citation_path(source={source!r}, target={target!r}, direction={direction!r}, max_depth={max_depth})"


def register(server: CnkiServer) -> None:
    for name, title, kind, what in (
        ("get_references", "参考文献列表", "references", "一篇文献的参考文献"),
        ("get_citing", "引证文献列表", "citations", "引用了这篇文献的文献"),
    ):
        _register_list(server, name, title, kind, LIST_DESCRIPTION.format(what=what))

    @server.tool(
        name="citation_graph",
        title="引文网络",
        description=GRAPH_DESCRIPTION,
        # `filename` writes the graph under exports/, as export_citations' does (not read-only)
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
    )
    async def citation_graph_tool(
        ctx: Context[Any, Any],
        seeds: Annotated[list[str], Field(min_length=1, max_length=10)],
        direction: Literal["references", "citing", "both"] = "references",
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
        max_nodes: Annotated[int, Field(ge=2, le=500)] = 100,
        format: Literal["json", "graphml", "mermaid"] = "json",
        max_requests: Annotated[int, Field(ge=1, le=2000)] = 200,
        on_verification: Verification = "ask",
        filename: Annotated[
            str | None,
            Field(min_length=1, max_length=200, description="文件名，不含路径"),
        ] = None,
    ) -> GraphOperation:
        services = services_of(ctx)
        for i, seed in enumerate(seeds):  # an unknown paper is refused before any operation starts
            known_paper(services.store, seed, lambda fn, i=i: f"citation_graph(seeds={[*seeds[:i], fn, *seeds[i + 1 :]]!r}, "
                        f"direction={direction!r}, depth={depth})")  # fmt: skip
        name = None
        if filename is not None:
            name = export_file_name(filename, GRAPH_EXTENSIONS[format])
            ensure_free(services.settings.data_dir, name)  # FILE_EXISTS before any request
        inp = GraphInput(seeds=seeds, direction=direction, depth=depth, max_nodes=max_nodes, format=format,
                         filename=name)  # fmt: skip
        deliver = graph_file(services, name, format)

        async def runner(op: Any) -> Any:
            return await citation_graph(services.store, services.backend, services.clock, inp, op,
                                        services.citation_flights, deliver,
                                        files=not services.settings.read_only)  # fmt: skip

        budget = budget_of(OperationKind.CITATIONS, on_verification).model_copy(update={"max_requests": max_requests})
        record = await start_operation(ctx, services.jobs, OperationKind.CITATIONS, runner, budget,
                                       stage="citations", message="建立引文网络")  # fmt: skip
        return typed_view(GraphOperation, OperationView.of(record))

    @server.tool(
        name="find_citation_path",
        title="引文路径",
        description=PATH_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def find_citation_path_tool(
        ctx: Context[Any, Any],
        source: Annotated[str, Field(min_length=1, max_length=200)],
        target: Annotated[str, Field(min_length=1, max_length=200)],
        direction: Literal["references", "citing", "both"] = "both",
        max_depth: Annotated[int, Field(ge=1, le=3)] = 2,
        max_requests: Annotated[int, Field(ge=1, le=2000)] = 200,
        on_verification: Verification = "ask",
    ) -> PathOperation:
        inp = PathInput(source=source, target=target, direction=direction, max_depth=max_depth)
        services = services_of(ctx)
        known_paper(services.store, source, lambda fn: _path_call(fn, target, direction, max_depth))
        known_paper(services.store, target, lambda fn: _path_call(source, fn, direction, max_depth))

        async def runner(op: Any) -> Any:
            return await find_citation_path(services.store, services.backend, services.clock, inp, op,
                                            services.citation_flights)

        budget = budget_of(OperationKind.CITATIONS, on_verification).model_copy(update={"max_requests": max_requests})
        record = await start_operation(ctx, services.jobs, OperationKind.CITATIONS, runner, budget,
                                       stage="citations", message="寻找引文路径")  # fmt: skip
        return typed_view(PathOperation, OperationView.of(record))


def _register_list(server: CnkiServer, name: str, title: str, kind: Any, description: str) -> None:
    @server.tool(
        name=name,
        title=title,
        description=description,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def list_tool(
        ctx: Context[Any, Any],
        paper: Annotated[str, Field(min_length=1, max_length=200)],
        types: TypesArg = None,
        offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
        on_verification: Verification = "ask",
    ) -> CitationListOperation:
        inp = CitationListInput(paper=paper, types=types, offset=offset, limit=limit)
        services = services_of(ctx)
        known_paper(services.store, paper, lambda fn: f"{name}(paper={fn!r})")  # before any operation starts

        async def runner(op: Any) -> Any:
            return await citation_list(
                services.store, services.backend, services.clock, inp, kind, op, _origins(services),
                services.citation_flights,
            )

        record = await start_operation(ctx, services.jobs, OperationKind.CITATIONS, runner,
                                       budget_of(OperationKind.CITATIONS, on_verification),
                                       stage="citations", message=title)  # fmt: skip
        return typed_view(CitationListOperation, OperationView.of(record))
