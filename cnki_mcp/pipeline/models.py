"""Inputs and outputs of the search tools (they become the MCP tool schemas): `search`,
`structured_search`, `search_results`, `get_metadata` (contract seeds/002, site-rules.md §3.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cnki_mcp.errors import InvalidInput
from cnki_mcp.identity import asked_title
from cnki_mcp.operations import BudgetSpec
from cnki_mcp.site.backend import SortOrder
from cnki_mcp.tool_args import control_characters

# The largest page offset of the local paged reads (search_results, get_metadata and
# export_citations by search_id, search_library): far beyond any search (3,000 candidates) or
# library, within SQLite's 64-bit integers. An offset of 2**63 was an INTERNAL OverflowError from
# SQLite; now INVALID_ARGUMENT naming offset. Kept off the tool schemas (tools/list stays small).
MAX_OFFSET = 100_000
SEARCH_ID_CHARS = 64  # ids are short (`sch_` + hex); a longer one is never stored, only echoed

Mode = Literal["precise", "balanced", "broad"]
MetadataMode = Literal["ranked", "all", "basic"]
Freshness = Literal["prefer_cache", "live"]
OnVerificationChoice = Literal["ask", "skip"]
Scope = Literal["selected", "eligible", "candidates"]
View = Literal["titles", "compact", "records"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanLike(Protocol):
    """What the pipeline reads of a `query.plan.Plan`."""

    @property
    def method(self) -> str: ...

    @property
    def groups(self) -> list[list[str]]: ...

    @property
    def warnings(self) -> list[str]: ...

    @property
    def year_from(self) -> int | None: ...

    @property
    def year_to(self) -> int | None: ...


def _check_text(field: str, *texts: str) -> None:
    """Text sent to CNKI holds no NUL or other control character (tab/newline are spaces)."""
    if any(control_characters(t) for t in texts):
        raise InvalidInput(f"{field} 含有控制字符（如 NUL）", field=field)


def _check_years(year_from: int | None, year_to: int | None) -> None:
    if year_from and year_to and year_from > year_to:
        raise InvalidInput("year_from 不能大于 year_to", year_from=year_from, year_to=year_to)


class SearchOptions(_Model):
    candidate_target: int = Field(300, ge=1, le=3000, description="候选文献数量目标")
    max_pages: int = Field(5, ge=1, le=100, description="每个检索字段最多翻页数")
    max_requests: int = Field(600, ge=1, le=5000, description="请求数上限")
    timeout_seconds: int = Field(
        900, ge=1, le=7200, description="运行时间上限（秒），等待人工操作的时间不计入"
    )
    metadata: MetadataMode = Field(
        "ranked", description="ranked：按初步排序选取部分文献读取详情；all：全部读取；basic：只用列表信息"
    )
    freshness: Freshness = Field(
        "prefer_cache", description="prefer_cache：10 分钟内相同且已完成的检索直接返回"
    )
    sort: SortOrder = Field(SortOrder.RELEVANCE, description="知网列表排序")
    on_verification: OnVerificationChoice = Field("ask", description="ask：弹出窗口等待处理；skip：跳过")


class SearchInput(_Model):
    query: str = Field(min_length=1, max_length=1000, description="研究问题或检索词，1–1000 字")
    concept_groups: list[list[str]] | None = Field(
        None,
        max_length=8,
        description="检索概念组：组间 AND，组内同义词 OR；最多 8 组，每组 1–6 个词，每个词不超过 80 字",
    )
    mode: Mode = Field("balanced", description="precise 不做补充检索；balanced 与 broad 目前相同")
    limit: int = Field(50, ge=0, le=100, description="返回的结果条数，只影响返回列表")
    year_from: int | None = Field(None, ge=0, le=2200, description="起始年份（含）")
    year_to: int | None = Field(None, ge=0, le=2200, description="截止年份（含）")
    options: SearchOptions = Field(default_factory=SearchOptions)

    @model_validator(mode="after")
    def _years(self) -> SearchInput:
        _check_years(self.year_from, self.year_to)
        _check_text("query", self.query)
        _check_text("concept_groups", *(t for g in self.concept_groups or () for t in g))
        return self

    def budget(self) -> BudgetSpec:
        """The operation budget these options ask for."""
        return _budget(self.options)


def _budget(options: SearchOptions | StructuredOptions) -> BudgetSpec:
    return BudgetSpec(
        max_requests=options.max_requests,
        timeout_seconds=options.timeout_seconds,
        on_verification="skip" if options.on_verification == "skip" else "wait",
    )


class StructuredOptions(_Model):
    candidate_target: int | None = Field(None, ge=1, le=3000, description="抓取条数目标；默认等于 limit")
    max_pages: int = Field(5, ge=1, le=100, description="最多翻页数")
    max_requests: int = Field(600, ge=1, le=5000, description="请求数上限")
    timeout_seconds: int = Field(900, ge=1, le=7200, description="运行时间上限（秒）")
    metadata: MetadataMode = Field("basic", description="默认 basic 只用列表信息；ranked/all 读取详情")
    freshness: Freshness = Field("prefer_cache", description="同 search")
    sort: SortOrder | None = Field(None, description="同顶层 sort")
    on_verification: OnVerificationChoice = Field("ask", description="同 search")


class StructuredSearchInput(_Model):
    expression: dict[str, Any] = Field(description="检索条件树：叶子 {field,value,match}，组合 {op,items}")
    sort: SortOrder | None = Field(None, description="知网列表排序，默认 relevance")
    limit: int = Field(50, ge=1, le=100, description="返回条数；未设置 candidate_target 时也决定抓取的条数")
    year_from: int | None = Field(None, ge=0, le=2200, description="起始年份（含）")
    year_to: int | None = Field(None, ge=0, le=2200, description="截止年份（含）")
    options: StructuredOptions = Field(default_factory=StructuredOptions)

    @model_validator(mode="after")
    def _years(self) -> StructuredSearchInput:
        _check_years(self.year_from, self.year_to)
        # two different orders: the top-level one silently won, the caller's other one unsaid
        if self.sort and self.options.sort and self.sort != self.options.sort:
            raise InvalidInput(
                "sort 与 options.sort 不一致：只给出其中一个", sort=self.sort.value, options_sort=self.options.sort.value
            )
        return self

    def budget(self) -> BudgetSpec:
        return _budget(self.options)

    @property
    def effective_sort(self) -> SortOrder:
        return self.sort or self.options.sort or SortOrder.RELEVANCE


class CoverageEntry(_Model):
    channel: str
    field: str = ""
    reason: str = ""
    pages: int = 0
    rows: int = 0
    total: int | None = None
    exhausted: bool = False
    failed: bool = False
    error: str | None = None
    queries: int = Field(
        default=1,
        description="知网检索式条数：检索行超过 120 字时拆成多条检索式（结果为其并集），作为本通道的追加页运行",
    )
    stopped: Literal["local"] | None = Field(
        default=None,
        description="local＝主题通道已列全结果，本通道检索的是其子集，不再请求知网，命中在已知候选上本地计算",
    )


class PlanChannel(_Model):
    id: str
    field: str
    weight: float = 1.0
    reason: str = ""


class PlanView(_Model):
    method: str
    concepts: list[list[str]] = Field(default_factory=list)
    channels: list[PlanChannel] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class PlanAdvice(_Model):
    """Set when the plan is weak (one concept) or the search found nothing: what to call instead."""

    reason: Literal["one_concept", "no_candidates"] = Field(
        description="one_concept：只有一个概念；no_candidates：没有找到候选文献"
    )
    message: str = Field(description="说明与建议")
    suggested_concept_groups: list[list[str]] = Field(
        description="建议的概念组（组间 AND，组内同义词 OR）；请为每组补充同义词后再检索"
    )
    suggested_call: dict[str, Any] | None = Field(
        description='建议的调用：{"tool": "search", "arguments": {...}}；null：建议的概念组与本次检索相同'
        "（概念无法再拆分），按原样再调用结果相同，须先补充同义词"
    )


class ResultItem(_Model):
    record_ref: str
    title: str
    authors: list[str] = Field(default_factory=list, description="前 10 位作者（全部作者用 get_metadata）")
    source: str | None = None
    year: int | None = None
    doc_type: str | None = None
    tiers: list[str] = Field(default_factory=list)
    score: float | None = None
    url: str | None = None
    abstract_read: bool = Field(False, description="已读取摘要与关键词（详情页或知网批量导出）")
    detail_read: bool = Field(False, description="已读取详情页（摘要、关键词、机构、基金）")
    quality_known: bool = Field(False, description="期刊收录与影响因子已知")


class EnrichMore(_Model):
    """The selected papers the search did not read in full, and the exact call that reads them."""

    count: int = Field(description="入选文献中未读取摘要、关键词或期刊信息的篇数")
    message: str
    suggested_call: dict[str, Any] = Field(
        description='{"tool": "get_metadata", "arguments": {"record_refs": [...], "fields": ["abstract", "keywords", "quality"], "quality": true}}'
    )


class SearchSummary(_Model):
    search_id: str
    status: str
    candidate_count: int = 0
    eligible_count: int = 0
    selected_count: int = 0
    enhanced_count: int = Field(0, description="已读取摘要与关键词的候选篇数（详情页或知网批量导出）")
    quality_source_count: int = 0
    selection_exclusions: dict[str, int] = Field(default_factory=dict)
    coverage: list[CoverageEntry] = Field(default_factory=list)
    plan: PlanView
    results: list[ResultItem] = Field(default_factory=list)
    source: Literal["live", "cache"] = "live"
    requests: int = 0
    warnings: list[str] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list)
    advice: PlanAdvice | None = Field(
        None, description="规划较弱（只有一个概念）或没有候选时给出的建议概念组与调用"
    )
    enrich_more: EnrichMore | None = Field(
        None, description="入选但未读取详情/期刊的文献，及补全它们的 get_metadata 调用"
    )
    ranking: int = Field(1, description="第几次排序：每次 continue 重新排序加 1；search_results 与 get_metadata 的页带同一编号")


class ResultsInput(_Model):
    search_id: str = Field(
        min_length=1, max_length=SEARCH_ID_CHARS, description="来自 search 或 structured_search"
    )
    scope: Scope = Field(
        "selected", description="selected 筛选结果；eligible 全部相关文献；candidates 全部候选"
    )
    view: View = Field("titles", description="titles / compact / records")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="分页起点")
    limit: int = Field(50, ge=1, le=100, description="每页条数")


class ResultsPage(_Model):
    search_id: str
    status: str
    scope: Scope
    total: int
    offset: int
    next_offset: int | None
    results: list[dict[str, Any]] = Field(default_factory=list)
    ranking: int = Field(1, description="本页取自第几次排序；与上一页不同则排序已变，从 offset=0 重读")
    message: str | None = Field(
        None, description="本页少于 limit 条的原因（结果过长，按大小截止）与续读的 offset；检索未完成时：continue 后排序会变，从 offset=0 重读"
    )


MetadataField = Literal[
    "record_ref",
    "title",
    "authors",
    "institutions",
    "source",
    "year",
    "publication_date",
    "volume",
    "issue",
    "pages",
    "document_type",
    "doi",
    "dbcode",
    "dbname",
    "filename",
    "abstract",
    "excerpt",
    "keywords",
    "funds",
    "cited",
    "downloaded",
    "url",
    "source_url",
    "quality",
    "detail_observed_at",
    "supervisor",
    "conference",
    "conference_place",
    "conference_date",
]


def check_targets(record_refs: Sequence[str], titles: Sequence[str], search_id: str | None) -> None:
    """The papers of get_metadata / export_citations: at least one source, and no title that is
    blank once one pair of 《》 around it is taken off (`identity.asked_title`)."""
    if not record_refs and not titles and not search_id:
        raise InvalidInput("需要 record_refs、titles 或 search_id 之一", field="record_refs")
    if any(not asked_title(t) for t in titles):
        raise InvalidInput("题名不能为空（空白或空的《》）", field="titles")


class MetadataInput(_Model):
    record_refs: list[str] = Field(default_factory=list, max_length=100, description="记录编号")
    titles: list[str] = Field(default_factory=list, max_length=100, description="完整题名")
    search_id: str | None = Field(None, max_length=SEARCH_ID_CHARS, description="取某次检索的结果")
    scope: Scope = Field("selected", description="配合 search_id 使用")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="配合 search_id 使用")
    limit: int = Field(20, ge=1, le=100, description="配合 search_id 使用")
    fields: list[MetadataField] | None = Field(
        None, description="只返回这些字段；record_ref 和 title 总会返回"
    )
    quality: bool = Field(False, description="读取期刊页面获取收录和影响因子")
    refresh: bool = Field(False, description="忽略 30 天内的已有详情，重新读取")
    local_only: bool = Field(False, description="只返回本地已有数据，不访问知网")

    @model_validator(mode="after")
    def _some(self) -> MetadataInput:
        check_targets(self.record_refs, self.titles, self.search_id)
        _check_text("titles", *self.titles)
        if len(self.record_refs) + len(self.titles) > 100:
            raise InvalidInput("一次最多 100 篇", count=len(self.record_refs) + len(self.titles))
        return self

    @property
    def wants_quality(self) -> bool:
        return self.quality or bool(self.fields and "quality" in self.fields)


class MetadataResult(_Model):
    records: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list)
    requests: int = 0
    total: int | None = Field(None, description="给了 search_id 时：该 scope 的文献总数")
    next_offset: int | None = Field(
        None, description="给了 search_id 时：下一页的 offset（相同参数再调用）；null 表示没有下一页"
    )
    ranking: int | None = Field(None, description="给了 search_id 时：本页取自该检索的第几次排序（同 search_results）")
    warnings: list[str] = Field(default_factory=list, description="本页少于 limit 篇的原因（结果过长，按大小截止）；检索未完成时：continue 后排序会变，从 offset=0 重读")
