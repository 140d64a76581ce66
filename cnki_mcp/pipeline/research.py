"""`ResearchPipeline`: the entry points the MCP server calls for `search`, `structured_search`,
`search_results` and `get_metadata`.

The research search plans three channels over the same concept groups (q1 subject, q2 title,
q3 keywords; site-rules.md §3.3), then runs the phases of `engine.SearchEngine`. A completed search is
answered from the store for 10 minutes (`freshness=prefer_cache`) without any request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from cnki_mcp.clock import Clock
from cnki_mcp.jobs import OperationContext
from cnki_mcp.pipeline.engine import SearchEngine
from cnki_mcp.pipeline.enrich import DEFAULT_WORKERS, Enricher
from cnki_mcp.pipeline.metadata import fetch_metadata
from cnki_mcp.pipeline.models import (
    MetadataInput,
    MetadataResult,
    PlanAdvice,
    PlanLike,
    ResultsInput,
    ResultsPage,
    SearchInput,
    SearchSummary,
    StructuredSearchInput,
)
from cnki_mcp.pipeline.policy import DEFAULT_POLICY, SearchPolicy
from cnki_mcp.pipeline.results import read_results
from cnki_mcp.pipeline.state import Channel, SearchState, reopened_event
from cnki_mcp.pipeline.structured import structured_channel, structured_params, structured_plan
from cnki_mcp.pipeline.units import cache_key
from cnki_mcp.query.compiler import compile_expression, concept_expression
from cnki_mcp.query.expr import Field
from cnki_mcp.query.plan import (
    Plan,
    PlanMethod,
    advise,
    parse_sampling_reply,
    plan_explicit,
    plan_question,
    question_years,
    without_time_phrases,
)
from cnki_mcp.query.segment import Segmenter, default_segmenter, dictionary_pending, warm_quietly
from cnki_mcp.query.timephrase import extract_years
from cnki_mcp.rank import MAX_SELECTED, Ranker, RelevanceRescueRanker
from cnki_mcp.site.backend import PacingSource, SiteBackend
from cnki_mcp.store import Store
from cnki_mcp.stored import load_cached

PAGE_SIZE = 50  # CNKI's largest page: fewest requests per candidate

CHANNELS: tuple[tuple[str, Field, str], ...] = (
    ("q1", Field.SUBJECT, "subject：完整概念组合"),
    ("q2", Field.TITLE, "title：完整概念组合"),
    ("q3", Field.KEYWORDS, "keywords：完整概念组合"),
)

log = logging.getLogger(__name__)


def research_channels(groups: list[list[str]]) -> list[Channel]:
    out: list[Channel] = []
    for cid, fld, reason in CHANNELS:
        compiled = compile_expression(concept_expression(groups, fld))
        out.append(Channel.compiled(cid, fld.value, 1.0, reason, compiled))
    return out


def search_params(inp: SearchInput) -> dict[str, Any]:
    o = inp.options
    return {
        "query": inp.query,
        "mode": inp.mode,
        "limit": inp.limit,
        "year_from": inp.year_from or None,
        "year_to": inp.year_to or None,
        "candidate_target": o.candidate_target,
        "max_pages": o.max_pages,
        "metadata": o.metadata,
        "sort": o.sort.value,
    }


def plan_search(inp: SearchInput, sampled_text: str | None, *, now_year: int, cut: Segmenter) -> Plan:
    """The plan a `search` call runs: the caller's concept_groups; else the client model's reply
    to the sampling request when it parses; else the question segmented (`plan_question`).
    Sampled and segmented plans also carry the year range of the question's time phrases."""
    if inp.concept_groups:
        return plan_explicit(inp.concept_groups)
    if sampled_text is not None:
        plan = parse_sampling_reply(sampled_text)
        if plan is not None:
            year_from, year_to = question_years(inp.query, now_year)
            plan = without_time_phrases(plan, now_year)
            return plan.model_copy(update={"year_from": year_from, "year_to": year_to})
    return plan_question(inp.query, now_year=now_year, cut=cut)


def effective_input(inp: SearchInput, plan: PlanLike) -> SearchInput:
    """The input with the plan's years where the caller gave none (explicit years always win)."""
    if inp.year_from or inp.year_to or not (plan.year_from or plan.year_to):
        return inp
    return inp.model_copy(update={"year_from": plan.year_from, "year_to": plan.year_to})


def question_years_warning(inp: SearchInput, plan: PlanLike, now_year: int) -> str | None:
    """What the answer says about a time phrase of the question (近五年, 2020年以来): the years it
    narrowed the search to when the caller gave none (`effective_input`), or, with concept_groups
    (whose plans never read the question), that it was not applied. None otherwise."""
    if inp.year_from or inp.year_to:
        return None
    if plan.year_from or plan.year_to:
        span = f"{plan.year_from or ''}–{plan.year_to or ''}"
        return (
            f"发表年份按问题中的时间短语限定为 {span}（year_from={plan.year_from}, year_to={plan.year_to}）；"
            "不需要时去掉问题中的时间短语，或给出 concept_groups 重新检索"
        )
    if inp.concept_groups:
        year_from, year_to = question_years(inp.query, now_year)
        if year_from or year_to:
            return (
                f"问题中的时间短语（{year_from or ''}–{year_to or ''}）没有用于检索：给出 concept_groups 时"
                f"请用 year_from/year_to 限定年份（year_from={year_from}, year_to={year_to}）"
            )
    return None


def time_terms_warning(plan: PlanLike, now_year: int) -> str | None:
    """The caller's concept_groups are searched as given: a term that is a time phrase (近五年,
    2020年以来) is a word every paper found must hold, not a window. Named, with the way to ask
    for the years instead; None when there is none (or the plan is not the caller's)."""
    if str(plan.method) != PlanMethod.EXPLICIT:
        return None
    terms = [t for g in plan.groups for t in g if extract_years(t, now_year).text.strip() != t.strip()]
    if not terms:
        return None
    return (
        f"concept_groups 中的 {'、'.join(dict.fromkeys(terms))} 含时间短语：它作为检索词须出现在文献中，"
        "不会限定发表年份；请从 concept_groups 中去掉，用 year_from/year_to 限定年份"
    )


def advice_for(
    query: str,
    summary: SearchSummary,
    cut: Segmenter,
    params: dict[str, Any] | None = None,
    on_verification: str | None = None,
    *,
    now_year: int = 2000,
) -> PlanAdvice | None:
    """Advice for a weak plan or an empty research search, with the exact call to make (the
    search's years included: with concept_groups given, time phrases in the query are not read).
    An empty result is advice only when every channel was read: a channel that failed (a page
    skipped at a slider under on_verification skip, the site down, the budget spent before it ran)
    found nothing because it asked nothing, and "these concepts together find 0, drop one" sent the
    client to narrow a query that was never searched. The call keeps what the search was asked
    with besides its concepts (mode, limit, options that are not the defaults, on_verification
    skip): it dropped them, and following it ran a skip search as one that waits for the person.
    A suggestion that is the plan just run (one concept that cannot be cut further) comes without a
    call: made as written it returned the same answer with the same advice, a loop."""
    if summary.plan.method == PlanMethod.STRUCTURED or summary.status not in ("completed", "partial"):
        return None
    candidates = summary.candidate_count
    if candidates == 0 and (summary.status == "partial" or any(c.failed for c in summary.coverage)):
        return None
    got = advise(query, summary.plan.concepts, candidates, cut, now_year=now_year)
    if got is None:
        return None
    if got.groups == [list(g) for g in summary.plan.concepts]:
        return PlanAdvice(
            reason=got.reason,  # type: ignore[arg-type]
            message=got.message + SAME_PLAN,
            suggested_concept_groups=got.groups,
            suggested_call=None,
        )
    arguments: dict[str, Any] = {"query": query, "concept_groups": got.groups}
    arguments.update(_asked_with(params or {}, on_verification))
    message = got.message
    if got.reason == "no_candidates" and ("year_from" in arguments or "year_to" in arguments):
        # the years empty a search as surely as the concepts: the call keeps them, the message says so
        span = f"{arguments.get('year_from', '')}–{arguments.get('year_to', '')}"
        message += f"年份限定 {span} 也可能是没有结果的原因：必要时放宽或去掉 year_from/year_to。"
    return PlanAdvice(
        reason=got.reason,  # type: ignore[arg-type]
        message=message,
        suggested_concept_groups=got.groups,
        suggested_call={"tool": "search", "arguments": arguments},
    )


SAME_PLAN = (
    "这个概念无法再拆分，建议的概念组就是本次检索的（按原样再调用结果相同）：请先为它补充同义词、全称、"
    "英文或上位词，或加上第二个概念，再用 concept_groups 检索。"
)


def _asked_with(params: dict[str, Any], on_verification: str | None) -> dict[str, Any]:
    """The search's own arguments besides query and concepts, as a `search` call takes them:
    years, mode and limit, and the options that differ from the defaults."""
    out: dict[str, Any] = {key: params[key] for key in ("year_from", "year_to") if params.get(key)}
    defaults = SearchInput(query="x")
    for key in ("mode", "limit"):
        if key in params and params[key] != getattr(defaults, key):
            out[key] = params[key]
    base = defaults.options.model_dump(mode="json")
    options = {
        key: params[key] for key in ("candidate_target", "max_pages", "metadata", "sort")
        if key in params and params[key] != base[key]
    }  # fmt: skip
    if on_verification == "skip":
        options["on_verification"] = "skip"
    if options:
        out["options"] = options
    return out


class ResearchPipeline:
    def __init__(
        self,
        backend: SiteBackend,
        store: Store,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
        now_year: Callable[[], int],
        ranker: Ranker | None = None,
        page_size: int = PAGE_SIZE,
        public_origins: tuple[str, ...] = (),
        segmenter: Segmenter | None = None,
        policy: SearchPolicy = DEFAULT_POLICY,
        pacing: PacingSource = lambda: None,
    ) -> None:
        self.backend = backend
        self.now_year = now_year
        self.segmenter: Segmenter = segmenter or default_segmenter()
        self.store = store
        self.clock = clock
        self.enricher = Enricher(backend, store, clock, workers=workers, public_origins=public_origins)
        self.engine = SearchEngine(
            backend,
            store,
            clock,
            self.enricher,
            ranker or RelevanceRescueRanker(),  # measured: docs/benchmarks.md, Ranking quality
            now_year,
            page_size=page_size,
            public_origins=public_origins,
            policy=policy,  # measured: docs/benchmarks.md, Request policies
            pacing=pacing,  # the limiter's (services.py): the snapshot's depth (OverlapDepth.PACED)
        )

    # --- research search ----------------------------------------------------------------

    async def close(self) -> None:
        """Stop the reads that outlived their operations (server exit)."""
        await self.enricher.close()

    def plan(self, inp: SearchInput, sampled_text: str | None = None) -> Plan:
        """The plan for `inp` (see `plan_search`); the segmenter loads on its first use."""
        return plan_search(inp, sampled_text, now_year=self.now_year(), cut=self.segmenter)

    def _advised(
        self, summary: SearchSummary, params: dict[str, Any], on_verification: str | None = None
    ) -> SearchSummary:
        query = str(params.get("query") or "")
        advice = advice_for(query, summary, self.segmenter, params, on_verification, now_year=self.now_year())
        return summary if advice is None else summary.model_copy(update={"advice": advice})

    def _state(
        self, search_id: str, params: dict[str, Any], plan: dict[str, Any], channels: list[Channel]
    ) -> SearchState:
        plan = {**plan, "channels": [c.to_dict() for c in channels]}
        st = SearchState(search_id=search_id, cache_key=cache_key(params, channels), input=params, plan=plan)
        st.ensure_coverage()  # in the first checkpoint, which the first pages' events extend
        return st

    def research_key(self, inp: SearchInput, plan: PlanLike) -> str:
        return cache_key(search_params(effective_input(inp, plan)), research_channels(plan.groups))

    def cached(self, inp: SearchInput, plan: PlanLike) -> SearchSummary | None:
        """A completed identical search from the last 10 minutes, with `source: cache` and
        `requests: 0`; None when freshness is `live` or nothing fits. Sends no request."""
        summary = self._cache_hit(inp, plan)
        return None if summary is None else self._advised(summary, search_params(effective_input(inp, plan)))

    async def cached_async(self, inp: SearchInput, plan: PlanLike) -> SearchSummary | None:
        """`cached` for the event loop: the advice of a one-concept plan cuts the query, so then
        the segmenter's dictionary is loaded in a worker thread first (`segmenter_ready`)."""
        summary = self._cache_hit(inp, plan)
        if summary is None:
            return None
        if len(plan.groups) <= 1:
            await self.segmenter_ready()
        return self._advised(summary, search_params(effective_input(inp, plan)))

    def _cache_hit(self, inp: SearchInput, plan: PlanLike) -> SearchSummary | None:
        if inp.options.freshness != "prefer_cache":
            return None
        return self._from_cache(self.research_key(inp, plan), inp.limit)

    def _from_cache(self, key: str, limit: int) -> SearchSummary | None:
        record = self.store.cached_search(key, self.clock.now())
        summary = load_cached(SearchSummary, record.summary) if record is not None and record.summary else None
        if record is None or summary is None:  # none, or a summary this release cannot read: searched again
            return None
        page = self.store.search_results(record.search_id, "selected", 0, MAX_SELECTED)
        papers = self.store.papers_by_refs([e.record_ref for e in page.items])
        results = [
            self.engine.result_item(papers[e.record_ref], e.score)
            for e in page.items[: limit or 50]
            if e.record_ref in papers
        ]
        # read now: details fetched since the search (get_metadata) count as read
        more = self.engine.enrich_more([papers[e.record_ref] for e in page.items if e.record_ref in papers])
        update = {"source": "cache", "requests": 0, "results": results, "enrich_more": more}
        return summary.model_copy(update=update)

    async def research(self, inp: SearchInput, plan: PlanLike, ctx: OperationContext) -> SearchSummary:
        """Run (or, when `ctx.resume_from` holds a checkpoint, continue) a research search."""
        if ctx.resume_from:
            return await self.continue_search(ctx)
        params = search_params(effective_input(inp, plan))
        groups = [list(g) for g in plan.groups]
        years = question_years_warning(inp, plan, self.now_year())
        terms = time_terms_warning(plan, self.now_year())
        warnings = list(plan.warnings) + [w for w in (years, terms) if w]
        view = {"method": str(plan.method), "concepts": groups, "warnings": warnings}
        st = self._state(ctx.operation_id, params, view, research_channels(groups))
        ctx.checkpoint(st.to_json())
        self._warm_segmenter(groups)
        return self._advised(await self.engine.run(st, ctx), params, getattr(ctx, "on_verification", None))

    def _warm_segmenter(self, groups: list[list[str]]) -> None:
        """The advice at the end of a search cuts the query when the plan has one concept group
        (`query.plan.advise`): then load the segmenter's dictionary in a worker thread while the
        search waits on CNKI, not on the event loop after the last request. With more groups
        nothing cuts, and the load's CPU would only slow the loop while the first pages come
        (DESIGN.md "Ranking cost"). Not awaited: a cut that comes first waits on the load's lock."""
        if len(groups) > 1 or not dictionary_pending(self.segmenter):
            return
        asyncio.get_running_loop().run_in_executor(None, warm_quietly, self.segmenter)

    @property
    def segmenter_loaded(self) -> bool:
        """A cut now costs no dictionary load (about 1.1 s of CPU on the first in a process)."""
        return not dictionary_pending(self.segmenter)

    async def segmenter_ready(self) -> None:
        """Wait, off the event loop, until the segmenter's dictionary is loaded (about 1.1 s of
        CPU on its first use in a process): the planning of a raw question and the advice cut the
        query synchronously, and a load on the event loop would stall every other call and
        progress notice meanwhile (DESIGN.md "Ranking cost"). At once when it is loaded; a load
        already under way (the warm-up) is waited for through its lock, never run twice."""
        if dictionary_pending(self.segmenter):
            await asyncio.to_thread(warm_quietly, self.segmenter)

    async def continue_search(self, ctx: OperationContext) -> SearchSummary:
        """Continue a search from the checkpoint in `ctx.resume_from` (research or structured)."""
        st = SearchState.from_json(ctx.resume_from)
        retry = st.failed_channels()
        if retry:  # the cause may be gone (a person solved the page, the site answers again)
            event = reopened_event(retry)
            st.apply(event)
            ctx.checkpoint_append(event)
            ctx.retract_item_errors(
                lambda e: e.details.get("stage") == "retrieval" and e.details.get("channel") in retry
            )
        if not st.structured:  # a structured search gets no advice (`advice_for`)
            self._warm_segmenter(st.groups)
        summary = await self.engine.run(st, ctx)
        return self._advised(summary, st.input, getattr(ctx, "on_verification", None))

    # --- structured search --------------------------------------------------------------

    def structured_key(self, inp: StructuredSearchInput) -> str:
        return cache_key(structured_params(inp), [structured_channel(inp)])

    def cached_structured(self, inp: StructuredSearchInput) -> SearchSummary | None:
        if inp.options.freshness != "prefer_cache":
            return None
        return self._from_cache(self.structured_key(inp), inp.limit)

    async def structured(self, inp: StructuredSearchInput, ctx: OperationContext) -> SearchSummary:
        """One `native` channel in CNKI's order, no feedback, first 100 selected."""
        if ctx.resume_from:
            return await self.continue_search(ctx)
        channel = structured_channel(inp)
        st = self._state(ctx.operation_id, structured_params(inp), structured_plan(), [channel])
        ctx.checkpoint(st.to_json())
        return await self.engine.run(st, ctx)

    # --- stored results and metadata ----------------------------------------------------

    def results(self, inp: ResultsInput) -> ResultsPage:
        return read_results(self.store, self.enricher, inp)

    async def metadata(self, inp: MetadataInput, ctx: OperationContext) -> MetadataResult:
        return await fetch_metadata(self.store, self.backend, self.enricher, self.clock, inp, ctx)
