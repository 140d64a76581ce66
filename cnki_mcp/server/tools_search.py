"""search, structured_search, search_results and get_metadata.

Inputs are validated (schema, then the pipeline's pydantic models) before any operation starts,
so bad arguments never reach the browser. Networked tools run as operations: they answer within
the inline wait, else return the running record with its operation_id."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, Resolve
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp.errors import SearchNotFound
from cnki_mcp.jobs import BudgetSpec, OperationKind, OperationStatus, Runner
from cnki_mcp.pipeline.models import (
    MetadataField,
    MetadataInput,
    MetadataResult,
    Mode,
    ResultsInput,
    ResultsPage,
    Scope,
    SearchInput,
    SearchOptions,
    SearchSummary,
    StructuredOptions,
    StructuredSearchInput,
    View,
)
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.query.plan import Plan
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import OperationView, more_results_step
from cnki_mcp.server.progress import ProgressBridge, start_operation, typed_view, wait_with_progress
from cnki_mcp.server.sampling import (
    Resolved,
    Sampled,
    sampled_text,
    sampling_resolver,
    unpack,
    with_sampling_warning,
)
from cnki_mcp.server.unfinished import or_unfinished
from cnki_mcp.services import Services
from cnki_mcp.site.backend import SortOrder

Year = Annotated[int | None, Field(ge=0, le=2200, description="年份（含边界）")]


class SearchOperation(OperationView):
    result: SearchSummary | None = Field(default=None, description="检索摘要（完成或部分完成时）")
    joined: bool = Field(
        default=False,
        description="true：参数相同的检索已在运行，本次调用没有另起检索，返回的是它（operation_id 相同，不重复请求知网）",
    )


class MetadataOperation(OperationView):
    result: MetadataResult | None = Field(default=None, description="题录（完成或部分完成时）")


SEARCH_DESCRIPTION = """研究检索（访问知网，通常 10–60 次请求，可能需一两分钟）：规划概念 → 主题/篇名/关键词检索 → 去重 → 摘要（批量导出）与期刊 → 关键词补充 → 按相关性×来源质量筛选。
concept_groups 未给出时由客户端模型（sampling）或服务器分词规划（时间短语转为年份）；规划太弱或无结果时 result.advice 给出建议的调用。
约 40 秒内未完成则 status 为 running，用 operation_status(operation_id, wait_seconds=50) 等待；完成后 search_results 分页、get_metadata 补题录。"""

STRUCTURED_DESCRIPTION = """知网高级检索（访问知网，默认约 1 页列表）：作者、来源、DOI、基金等精确限定。
expression 条件树：叶子 {"field": "title", "value": "违约金", "match": "phrase|exact"}，组合 {"op": "and|or|not", "items": [...]}。
field：subject title keywords abstract title_keywords_abstract fulltext authors first_author corresponding_author institutions source doi funds references classification subtitle。
保持知网排序；返回格式同 search，用 search_results 翻页。"""

RESULTS_DESCRIPTION = """分页读取已保存的检索结果（本地，不访问知网）。scope：selected 筛选结果 / eligible 全部相关 / candidates 全部候选；view：titles / compact / records（含评分明细）。
next_offset 为 null 表示没有下一页；一页超过约 2 万 token 时提前截止（少于 limit 条，message 说明），照 next_offset 续读。需要摘要或期刊信息时再调用 get_metadata。"""

METADATA_DESCRIPTION = """批量获取题录（访问知网：每篇最多一次详情页，30 天内读过的不再请求；fields 只含摘要、关键词、卷期页码等导出字段时改用批量导出，每 20 篇一次；quality=true 时每个期刊再读一次期刊页）。
来源可组合：record_refs、完整 titles（本地找不到时按篇名精确检索，每 10 个一次）、search_id（配合 scope/offset/limit）。一次最多 100 篇。
local_only=true 时只用本地数据，不访问知网。单篇失败写在 errors 中，不影响其他文献。
学位论文另有 supervisor，会议论文另有 conference、conference_place、conference_date，只在有值时出现。"""


def choose_plan(inp: SearchInput, sampled: Sampled, pipeline: ResearchPipeline) -> Plan:
    """concept_groups, else the sampled reply, else the segmented question (`pipeline.plan`),
    with a warning when the client's model was asked and did not plan (server/sampling.py)."""
    return with_sampling_warning(pipeline.plan(inp, sampled_text(sampled)), sampled)


def register(server: CnkiServer) -> None:
    @server.tool(
        name="search",
        title="研究检索",
        description=SEARCH_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def search(
        ctx: Context[Any, Any],
        query: Annotated[
            str, Field(min_length=1, max_length=1000, description="研究问题或检索词")
        ],
        sampled_plan: Annotated[Resolved, Resolve(sampling_resolver)],
        concept_groups: Annotated[
            list[
                Annotated[
                    list[Annotated[str, Field(min_length=1, max_length=80)]],
                    Field(min_length=1, max_length=6),
                ]
            ]
            | None,
            Field(max_length=8, description="概念组：组间 AND，组内同义词 OR"),
        ] = None,
        mode: Mode = "balanced",
        limit: Annotated[int, Field(ge=1, le=100, description="返回的结果条数")] = 50,
        year_from: Year = None,
        year_to: Year = None,
        options: SearchOptions | None = None,
    ) -> SearchOperation:
        inp = SearchInput(
            query=query,
            concept_groups=concept_groups,
            mode=mode,
            limit=limit,
            year_from=year_from,
            year_to=year_to,
            options=options or SearchOptions(),
        )
        services = services_of(ctx)
        pipeline = services.pipeline
        sampled, waited = unpack(sampled_plan)  # the seconds this call already waited for the client's model
        if inp.concept_groups or pipeline.segmenter_loaded:
            plan = choose_plan(inp, sampled, pipeline)
        else:  # planning may cut the question: never load the dictionary on the event loop
            plan = await anyio.to_thread.run_sync(choose_plan, inp, sampled, pipeline)
        if inp.options.freshness == "prefer_cache":
            cached = await pipeline.cached_async(inp, plan)
            if cached is not None:
                return _cached_search(cached)

        async def runner(op: Any) -> Any:
            return await pipeline.research(inp, plan, op)

        # a joined call gets the running one's answer, cut at that call's `limit`: the limit is part
        # of the key (the cache key leaves it out, the cache re-cuts a stored summary per call)
        key = f"research:{pipeline.research_key(inp, plan)}:limit={inp.limit}"
        return await _start_search(ctx, services, runner, inp.budget(), key, spent=waited)

    @server.tool(
        name="structured_search",
        title="高级检索",
        description=STRUCTURED_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def structured_search(
        ctx: Context[Any, Any],
        expression: dict[str, Any],
        sort: SortOrder | None = None,
        limit: Annotated[int, Field(ge=1, le=100, description="返回条数")] = 50,
        year_from: Year = None,
        year_to: Year = None,
        options: StructuredOptions | None = None,
    ) -> SearchOperation:
        inp = StructuredSearchInput(
            expression=expression,
            sort=sort,
            limit=limit,
            year_from=year_from,
            year_to=year_to,
            options=options or StructuredOptions(),
        )
        from cnki_mcp.query.expr import parse_expression

        parse_expression(inp.expression)  # coded INVALID_* errors before anything starts
        services = services_of(ctx)
        pipeline = services.pipeline
        if inp.options.freshness == "prefer_cache":
            cached = pipeline.cached_structured(inp)
            if cached is not None:
                return _cached_search(cached)

        async def runner(op: Any) -> Any:
            return await pipeline.structured(inp, op)

        key = f"structured:{pipeline.structured_key(inp)}:limit={inp.limit}"  # as research's join key
        return await _start_search(ctx, services, runner, inp.budget(), key)

    @server.tool(
        name="search_results",
        title="检索结果分页",
        description=RESULTS_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def search_results(
        ctx: Context[Any, Any],
        search_id: Annotated[
            str, Field(min_length=1, max_length=64, description="来自 search 或 structured_search")
        ],
        scope: Scope = "selected",
        view: View = "titles",
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=100)] = 50,
    ) -> ResultsPage:
        inp = ResultsInput(search_id=search_id, scope=scope, view=view, offset=offset, limit=limit)
        services = services_of(ctx)
        try:
            return services.pipeline.results(inp)
        except SearchNotFound as exc:
            raise or_unfinished(services.jobs, search_id, exc) from None

    @server.tool(
        name="get_metadata",
        title="获取题录",
        description=METADATA_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def get_metadata(
        ctx: Context[Any, Any],
        record_refs: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=64)]], Field(max_length=100)
        ] = [],  # noqa: B006
        titles: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=500)]], Field(max_length=100)
        ] = [],  # noqa: B006
        search_id: Annotated[str | None, Field(max_length=64)] = None,
        scope: Scope = "selected",
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        fields: list[MetadataField] | None = None,
        quality: bool = False,
        refresh: bool = False,
        local_only: bool = False,
    ) -> MetadataOperation:
        inp = MetadataInput(
            record_refs=list(record_refs),
            titles=list(titles),
            search_id=search_id,
            scope=scope,
            offset=offset,
            limit=limit,
            fields=fields,
            quality=quality,
            refresh=refresh,
            local_only=local_only,
        )
        services = services_of(ctx)
        if search_id and services.store.get_search(search_id) is None:
            # before an operation that could only fail with "no such search": a search still
            # running says so, and how to wait for it (server/unfinished.py)
            raise or_unfinished(services.jobs, search_id, SearchNotFound(search_id=search_id))
        pipeline = services.pipeline

        async def runner(op: Any) -> Any:
            return await pipeline.metadata(inp, op)

        record = await start_operation(
            ctx, services.jobs, OperationKind.METADATA, runner, stage="metadata", message="读取题录"
        )
        return typed_view(MetadataOperation, OperationView.of(record))


def _cached_search(cached: SearchSummary) -> SearchOperation:
    """A completed search of the last 10 minutes, answered without visiting CNKI."""
    return SearchOperation(
        kind="search",
        status="completed",
        message="10 分钟内相同检索的已完成结果（未访问知网）",
        result=cached,
        # the live answer's step: a placeholder here sent a client to read an empty or listed page
        next_step=more_results_step(cached.model_dump()),
    )


async def _start_search(
    ctx: Context[Any, Any], services: Services, runner: Runner, budget: BudgetSpec, key: str, spent: float = 0.0
) -> SearchOperation:
    """Start the search, or join the identical one already running (DESIGN.md "One search for
    identical calls"): a client retrying a call that outlived its timeout, or two clients
    asking the same, get one search and one set of CNKI requests. A joined search that is
    cancelled or interrupted meanwhile is not this call's answer: then it starts its own.
    `spent`: seconds the call already waited (for the client's model), taken off the inline wait,
    as is the time it waited on a joined search before starting its own."""
    jobs = services.jobs
    wait = max(0.0, jobs.inline_wait - spent)
    bridge = ProgressBridge(ctx)  # one scale for both waits: this request's values keep increasing
    joined = jobs.running_with(OperationKind.SEARCH, key)
    if joined is not None:
        started = services.clock.monotonic()
        record = await wait_with_progress(ctx, jobs, joined.operation_id, wait, bridge)
        if record.status not in (OperationStatus.CANCELLED, OperationStatus.INTERRUPTED):
            view = typed_view(SearchOperation, OperationView.of(record))
            view.joined = True
            return view
        # one inline wait for the whole call: a client's timeout is set against it, not two
        wait = max(0.0, wait - (services.clock.monotonic() - started))
    job = jobs.start(OperationKind.SEARCH, runner, budget, stage="starting", message="检索开始", key=key)
    record = await wait_with_progress(ctx, jobs, job.operation_id, wait, bridge)
    return typed_view(SearchOperation, OperationView.of(record))
