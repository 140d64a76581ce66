"""export_search_log, watch_search and check_updates: the reproducible log of a stored search and
saved searches checked again later (DESIGN.md "Search log", "Saved searches")."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from cnki_mcp.errors import OperationBusy, SearchNotFound
from cnki_mcp.jobs import BudgetSpec, OperationKind
from cnki_mcp.pipeline.searchlog import build_search_log
from cnki_mcp.pipeline.searchlog_format import LogFormat, PrismaFlow, format_log
from cnki_mcp.pipeline.watch import CheckReport, WatchInfo, WatchList, WatchService
from cnki_mcp.rank import RelevanceRescueRanker
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import OperationView
from cnki_mcp.server.progress import start_operation, typed_view
from cnki_mcp.server.unfinished import or_unfinished
from cnki_mcp.services import Services

LOG_DESCRIPTION = """导出已保存检索的可复现检索记录（本地，不访问知网），供论文方法部分使用：问题、概念规划及来源、每个通道的字段与实际发送的检索式、每页时间/条数/知网总数、去重与排除计数、筛选规则、PRISMA 式流程（识别→去重→筛选→纳入，数字可相加核对）。"""

WATCH_DESCRIPTION = """订阅已保存的检索（本地，不访问知网）：保存其检索式与已找到的记录，返回 watch_id；同一检索只订阅一次（再次调用返回已有订阅）。之后用 check_updates 检查更新。remove=true：取消该检索的订阅（连同其检查记录），之后 check_updates(all) 不再检查它。"""

CHECK_DESCRIPTION = """重新运行订阅的检索（访问知网：每个检索式按发表时间倒序读 pages 页，通常每个订阅 1–3 次请求），报告上次检查以来的新文献、网络首发后已有卷期页的文献、被引次数变化；结果保存，下次与本次比较。已有订阅检查在运行时返回 OPERATION_BUSY（用 operation_status 等它）。某个订阅 complete=false：新记录多于 pages 页，更早的新记录下次检查接着读（可加大 pages）。每类记录最多列 20 条，其余用 list_watches(watch_id, offset=next_offset)。"""

LIST_DESCRIPTION = """列出订阅（本地，不访问知网）：watch_id、search_id、检索式、已见记录数、上次检查时间，及最近 checks 次检查的结果（含 cnki-mcp watch check）。报告过的新文献此后算作已见，只能在此回看（每类最多 20 条，从 offset 起）。"""


class SearchLogExport(BaseModel):
    search_id: str
    format: LogFormat
    text: str = Field(description="检索记录全文")
    prisma: PrismaFlow


class CheckOperation(OperationView):
    result: CheckReport | None = Field(default=None, description="各订阅的更新（完成或部分完成时）")


def _service(services: Services) -> WatchService:
    origin = services.settings.site_origin
    return WatchService(services.store, services.backend, services.clock, (origin,) if origin else ())


def _ranker_name(services: Services) -> str:
    ranker = getattr(getattr(services.pipeline, "engine", None), "ranker", None)
    return str(getattr(ranker, "name", RelevanceRescueRanker.name))


def register(server: CnkiServer) -> None:
    @server.tool(
        name="export_search_log",
        title="导出检索记录",
        description=LOG_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def export_search_log(
        ctx: Context[Any, Any],
        search_id: Annotated[str, Field(min_length=1, max_length=64, description="来自 search 或 structured_search")],
        format: LogFormat = "markdown",
    ) -> SearchLogExport:
        services = services_of(ctx)
        try:
            log = build_search_log(services.store, search_id, _ranker_name(services))
        except SearchNotFound as exc:  # a search's log exists once it ended: say how to get there
            raise or_unfinished(services.jobs, search_id, exc) from None
        return SearchLogExport(search_id=search_id, format=format, text=format_log(log, format), prisma=log.prisma)

    @server.tool(
        name="watch_search",
        title="订阅检索",
        description=WATCH_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def watch_search(
        ctx: Context[Any, Any],
        search_id: Annotated[str, Field(min_length=1, max_length=64, description="来自 search 或 structured_search")],
        remove: bool = False,
    ) -> WatchInfo:
        services = services_of(ctx)
        if remove:
            return _service(services).remove(search_id=search_id)
        try:
            return _service(services).create(search_id)
        except SearchNotFound as exc:  # a search still running or stopped: say how to finish it
            raise or_unfinished(services.jobs, search_id, exc) from None

    @server.tool(
        name="list_watches",
        title="订阅列表",
        description=LIST_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def list_watches(
        ctx: Context[Any, Any],
        watch_id: Annotated[str, Field(min_length=1, max_length=64, description="watch_id 或 all")] = "all",
        checks: Annotated[int, Field(ge=0, le=10)] = 1,
        offset: Annotated[
            int, Field(ge=0, le=100_000, description="每次检查的记录从第几条起列出（见各检查的 next_offset）")
        ] = 0,
    ) -> WatchList:
        return _service(services_of(ctx)).listing(watch_id, checks, offset)

    @server.tool(
        name="check_updates",
        title="检查订阅更新",
        description=CHECK_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def check_updates(
        ctx: Context[Any, Any],
        watch_id: Annotated[str, Field(min_length=1, max_length=64, description="watch_id 或 all")] = "all",
        pages: Annotated[int, Field(ge=1, le=5, description="每个检索式最多读几页（每页 50 条）")] = 1,
        max_requests: Annotated[int, Field(ge=1, le=500, description="请求数上限")] = 30,
    ) -> CheckOperation:
        services = services_of(ctx)
        service = _service(services)
        service.watches(watch_id)  # an unknown id is INVALID_ARGUMENT before anything starts
        for running in services.jobs.active_operations():
            # two batches at once would read the same pages twice and report the same records twice
            if running.kind is OperationKind.WATCH:
                op = running.operation_id
                raise OperationBusy(
                    "已有一个订阅检查在运行，等它结束后再检查",
                    operation_id=op,
                    next_step=f"operation_status(operation_id='{op}', wait_seconds=50)",
                )

        async def runner(op: Any) -> Any:
            return await service.check(watch_id, op, pages)

        record = await start_operation(
            ctx,
            services.jobs,
            OperationKind.WATCH,
            runner,
            BudgetSpec(max_requests=max_requests, timeout_seconds=600),
            stage="watch",
            message="检查订阅更新",
        )
        return typed_view(CheckOperation, OperationView.of(record))
