"""The search phases (site-rules.md §3.4): retrieval rounds, detail pool, enrichment, feedback, feedback
enrichment, finish. Shared by the research search and the structured search; both start from a
`SearchState` and checkpoint it after every round and phase, so `continue` repeats no request."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cnki_mcp.clock import Clock
from cnki_mcp.errors import CnkiError, SiteUnavailable
from cnki_mcp.identity import Paper, source_key
from cnki_mcp.jobs import OperationContext
from cnki_mcp.models import GridPage
from cnki_mcp.operations import OperationErrorInfo
from cnki_mcp.pipeline.enrich import (
    DETAIL_TTL,
    PARSER_VERSION,
    Enricher,
    is_fatal,
    is_journal,
    record_item_error,
)
from cnki_mcp.pipeline.models import CoverageEntry, PlanView, ResultItem, SearchSummary
from cnki_mcp.pipeline.policy import (
    DEFAULT_POLICY,
    ChannelStop,
    Enrichment,
    LocalChannel,
    RefState,
    SearchPolicy,
    SubsetChannels,
    next_enrichment,
    with_local_hits,
)
from cnki_mcp.pipeline.state import Channel, SearchState
from cnki_mcp.query.compiler import compile_expression, feedback_expression
from cnki_mcp.rank import (
    MAX_SELECTED,
    Candidate,
    Evidence,
    Hit,
    Ranked,
    Ranker,
    enhancement_size,
    exclusions,
    feedback_keywords,
    selection_floor,
)
from cnki_mcp.site.backend import GridRequest, SiteBackend, SortOrder
from cnki_mcp.store import PRESENT, SearchEvidence, Store

FEEDBACK_WEIGHT = 0.8
FEEDBACK_REASON = "保留所有必要概念，补充相关论文共同关键词："
DEFAULT_LIMIT = 50
# Soft blocks (DESIGN.md "Soft blocks"): a zero the search itself contradicts is asked once more
# after this pause; still zero, the search stops with SITE_UNAVAILABLE instead of storing it.
SOFT_BLOCK_PAUSE = 20.0
# A subject (主题) search covers titles and keywords: when either of those siblings found rows,
# the subject channel of the same concepts cannot have none.
_CONTAINS: dict[str, frozenset[str]] = {"subject": frozenset({"title", "keywords"})}


def fingerprint(parts: Sequence[Any]) -> str:
    text = json.dumps(list(parts), ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def cache_key(params: dict[str, Any], channels: Sequence[Channel]) -> str:
    """site-rules.md §3.8: [query, mode, year_from, year_to, candidate_target, max_pages, metadata, sort,
    plan channels, parser version]."""
    return fingerprint(
        [
            params["query"],
            params["mode"],
            params.get("year_from"),
            params.get("year_to"),
            params["candidate_target"],
            params["max_pages"],
            params["metadata"],
            params["sort"],
            [[c.id, c.weight, c.fingerprint] for c in channels],
            PARSER_VERSION,
        ]
    )


@dataclass(frozen=True, slots=True)
class Unit:
    """One query of a channel: the channel itself, or one lane of a split channel."""

    channel: Channel
    lane: int = 0


def _units(channels: Sequence[Channel]) -> list[Unit]:
    return [Unit(c, j) for c in channels for j in range(c.queries)]


def _coverage(channel: Channel) -> CoverageEntry:
    return CoverageEntry(channel=channel.id, field=channel.field, reason=channel.reason, queries=channel.queries)


def plan_view(plan: dict[str, Any], channels: Sequence[Channel]) -> PlanView:
    return PlanView(
        method=plan["method"],
        concepts=plan.get("concepts", []),
        channels=[c.view() for c in channels],  # type: ignore[misc]
        warnings=plan.get("warnings", []),
    )


class SearchEngine:
    def __init__(
        self,
        backend: SiteBackend,
        store: Store,
        clock: Clock,
        enricher: Enricher,
        ranker: Ranker,
        now_year: Callable[[], int],
        *,
        page_size: int,
        public_origins: tuple[str, ...],
        soft_block_pause: float = SOFT_BLOCK_PAUSE,
        policy: SearchPolicy = DEFAULT_POLICY,
    ) -> None:
        self.soft_block_pause = soft_block_pause
        self.policy = policy
        self.backend = backend
        self.store = store
        self.clock = clock
        self.enricher = enricher
        self.ranker = ranker
        self.now_year = now_year
        self.page_size = page_size
        self.public_origins = public_origins

    # --- the run ------------------------------------------------------------------------

    async def run(self, st: SearchState, ctx: OperationContext) -> SearchSummary:
        if not st.coverage:
            st.coverage = [_coverage(c) for c in st.channels]
        failure: CnkiError | None = None
        try:
            await self._phases(st, ctx)
        except CnkiError as exc:
            if not is_fatal(exc):
                raise
            failure = exc
        except asyncio.CancelledError:
            # The operation's watchdog ended its active time (jobs.py): finish with what we have.
            failure = ctx.deadline_error
            if failure is None:
                raise
        ctx.checkpoint(st.to_json())
        summary = self.finish(st, ctx, failure)
        if failure is not None:
            ctx.set_result(summary)
            raise failure
        return summary

    async def _phases(self, st: SearchState, ctx: OperationContext) -> None:
        params = st.input
        if not st.retrieved:
            await self._retrieve(st, ctx)
            st.retrieved = True
            st.pool = self._pool(st, st.refs)
            ctx.checkpoint(st.to_json())
        if not st.enriched:
            await self._enrich(st, ctx, st.pool, stage="enrichment", label="读取详情与期刊")
            st.enriched = True
            ctx.checkpoint(st.to_json())
        if not st.feedback_done:
            if params["mode"] != "precise" and params["metadata"] != "basic" and not st.structured:
                if st.feedback is None:
                    st.feedback = self._feedback_channels(st)
                    st.coverage.extend(_coverage(c) for c in st.feedback)
                    self._localize(st, st.feedback)
                    ctx.checkpoint(st.to_json())
                words = "、".join(c.reason.removeprefix(FEEDBACK_REASON) for c in st.feedback)
                ctx.set_stage(
                    "feedback", f"补充检索 {len(st.feedback)} 个关键词" + (f"：{words}" if words else "")
                )
                want = [
                    u
                    for u in _units(st.feedback)
                    if self._pages(st, u) == 0
                    and not st.coverage_of(u.channel.id).failed
                    and not st.coverage_of(u.channel.id).stopped
                ]
                await self._round(st, ctx, want, feedback=True)
            st.feedback_done = True
            st.feedback_pool = self._pool(st, st.feedback_refs)
            ctx.checkpoint(st.to_json())
        if not st.finished:
            await self._enrich(
                st, ctx, st.feedback_pool, stage="feedback_enrichment", label="读取补充检索结果的详情与期刊"
            )
            st.finished = True

    # --- retrieval ----------------------------------------------------------------------

    async def _retrieve(self, st: SearchState, ctx: OperationContext) -> None:
        params = st.input
        units = _units(st.channels)  # a split channel pages each of its queries like a channel
        while True:
            self._localize(st, st.channels)
            live = [
                u
                for u in units
                if not self._exhausted(st, u)
                and not st.coverage_of(u.channel.id).failed
                and not st.coverage_of(u.channel.id).stopped
            ]
            if not live:
                return
            lo = min(self._pages(st, u) for u in live)
            hi = max(self._pages(st, u) for u in live)
            if lo >= params["max_pages"] or (
                lo > 0 and lo == hi and len(st.refs) >= params["candidate_target"]
            ):
                return
            ctx.set_stage("retrieval", f"第 {lo + 1} 轮检索中，已有候选 {len(st.refs)} 篇")
            ctx.progress(len(st.refs), params["candidate_target"], "candidates")
            want = [u for u in live if self._pages(st, u) == lo]
            first = self._subject_first(st)
            if first is not None:
                want = [u for u in want if u.channel.id == first]
            try:
                await self._round(st, ctx, want, feedback=False)
            finally:
                if first is not None:
                    self._empty_subject_alone(st, first)
                ctx.checkpoint(st.to_json())
            # The round's rows are counted now, not before it ran.
            ctx.set_stage("retrieval", f"第 {lo + 1} 轮检索，已有候选 {len(st.refs)} 篇")
            ctx.progress(len(st.refs), params["candidate_target"], "candidates")

    # --- request policies (pipeline/policy.py) ---------------------------------------------

    def _subject(self, st: SearchState) -> Channel | None:
        """The research search's subject channel (q1), whose result set holds every other
        channel's (SubsetChannels.LOCAL); None for a structured search or another policy."""
        if self.policy.subset_channels != SubsetChannels.LOCAL or st.structured:
            return None
        channels = st.channels
        first = next((c for c in channels if c.field == "subject"), None)
        return first if first is not None and len(channels) > 1 else None

    def _subject_first(self, st: SearchState) -> str | None:
        """Under SubsetChannels.LOCAL the subject channel's first page comes alone: when it lists
        the whole result set, the other channels are not requested at all."""
        subject = self._subject(st)
        if subject is None:
            return None
        entry = st.coverage_of(subject.id)
        alone = entry.pages == 0 and not entry.failed and not st.subject_retried and subject.queries == 1
        return subject.id if alone else None

    @staticmethod
    def _empty_subject_alone(st: SearchState, subject: str) -> None:
        """An empty first page of the subject channel asked alone proves nothing (a throttled
        client gets exactly that; DESIGN.md "Soft blocks"): it is forgotten and asked again beside
        the title and keyword channels, whose rows make a false zero suspect."""
        entry = st.coverage_of(subject)
        if entry.pages != 1 or entry.rows or entry.failed:
            return
        entry.pages, entry.total, entry.exhausted, entry.stopped = 0, None, False, None
        st.cursors.pop(subject, None)
        st.subject_retried = True

    def _localize(self, st: SearchState, channels: Sequence[Channel]) -> None:
        """Mark `channels` not yet asked as answered locally once the subject channel listed its
        whole (non-empty) result set. An empty subject result is not trusted alone: the other
        channels are asked, so a throttled zero stays detectable (soft-block rule)."""
        subject = self._subject(st)
        if subject is None:
            return
        entry = st.coverage_of(subject.id)
        if not entry.exhausted or entry.failed or entry.rows == 0:
            return
        known = {x["id"] for x in st.local}
        for channel in channels:
            other = st.coverage_of(channel.id)
            if (
                channel.id == subject.id
                or channel.id in known
                or other.pages
                or other.failed
                or other.stopped
            ):
                continue
            if channel.field not in ("title", "keywords", "subject"):
                continue
            other.stopped = "local"
            phrase = channel.reason.removeprefix(FEEDBACK_REASON) if channel.field == "subject" else ""
            st.local.append(
                {"id": channel.id, "field": channel.field, "weight": channel.weight, "phrase": phrase}
            )

    def _local_channels(self, st: SearchState) -> list[LocalChannel]:
        return [LocalChannel(x["id"], x["field"], float(x["weight"]), x.get("phrase", "")) for x in st.local]

    async def _enrich(
        self, st: SearchState, ctx: OperationContext, pool: list[str], *, stage: str, label: str
    ) -> None:
        """Enrich `pool` (a resumed phase asks again only what is still missing: fresh details and
        cached journals send nothing), then, under Enrichment.BOUNDARY, batch after batch until
        the policy proposes nothing; each batch joins `pool` before it runs (checkpointed)."""
        await self.enricher.run(pool, ctx, stage=stage, label=label)
        if self.policy.enrichment != Enrichment.BOUNDARY or st.input["metadata"] != "ranked" or st.structured:
            return
        while True:
            batch = self._next_batch(st)
            if not batch:
                return
            pool.extend(batch)
            ctx.checkpoint(st.to_json())
            await self.enricher.run(batch, ctx, stage=stage, label=label)

    def _next_batch(self, st: SearchState) -> list[str]:
        cands, papers = self.candidates(st, st.refs)
        ranked = self.ranker.rank(cands, st.groups, self.now_year())
        selected = self.ranker.select(ranked, MAX_SELECTED)
        states: dict[str, RefState] = {}
        for r in ranked:
            p = papers[r.ref]
            journal = is_journal(p)
            cached = self.enricher.journal_cached(p) if journal else None
            states[r.ref] = RefState(
                detailed=self._detailed(p),
                journal_open=journal and cached is None,
                journal_known=self.enricher.source_quality(p) is not None,
            )
        return next_enrichment(
            ranked,
            states,
            set(st.pool) | set(st.feedback_pool),
            self.policy,
            selected=len(selected),
            floor=selection_floor(ranked),
            local=self._local_channels(st),
        )

    def _detailed(self, paper: Paper) -> bool:
        seen = paper.detail_observed_at
        return seen is not None and self.clock.now() - seen < DETAIL_TTL

    @staticmethod
    def _pages(st: SearchState, unit: Unit) -> int:
        if unit.channel.queries == 1:
            return st.coverage_of(unit.channel.id).pages
        return st.lanes_of(unit.channel)[unit.lane].pages

    @staticmethod
    def _exhausted(st: SearchState, unit: Unit) -> bool:
        if unit.channel.queries == 1:
            return st.coverage_of(unit.channel.id).exhausted
        return st.lanes_of(unit.channel)[unit.lane].exhausted

    def _request(self, st: SearchState, unit: Unit, page: int) -> GridRequest:
        params = st.input
        channel = unit.channel
        if channel.queries == 1:
            cursor = st.cursors.get(channel.id)
        else:
            cursor = st.lanes_of(channel)[unit.lane].cursor or None
        return GridRequest(
            subject=channel.subject_at(unit.lane),
            anchor=channel.anchor,
            sort=SortOrder(params["sort"]),
            year_from=params.get("year_from") or None,
            year_to=params.get("year_to") or None,
            page=page,
            page_size=self.page_size,
            cursor=cursor if page > 1 else None,
        )

    async def _round(
        self, st: SearchState, ctx: OperationContext, units: Sequence[Unit], *, feedback: bool
    ) -> None:
        """Next page of each unit concurrently; merged in unit order (deterministic)."""
        if not units:
            return
        requests = [self._request(st, u, self._pages(st, u) + 1) for u in units]
        outcomes: list[Any] = list(
            await asyncio.gather(
                *(self._page(st, ctx, u, r) for u, r in zip(units, requests, strict=True)),
                return_exceptions=True,
            )
        )
        st.landed.clear()
        await self._recheck_suspect_zeros(st, ctx, units, requests, outcomes, feedback=feedback)
        stop: BaseException | None = None
        for unit, outcome in zip(units, outcomes, strict=True):
            channel = unit.channel
            entry = st.coverage_of(channel.id)
            if isinstance(outcome, GridPage):
                self._collect(st, unit, entry, outcome, feedback)
            elif isinstance(outcome, CnkiError) and not is_fatal(outcome):
                entry.failed = True
                entry.error = outcome.message
                record_item_error(ctx, outcome, None, "retrieval", channel=channel.id)
            elif isinstance(outcome, BaseException):
                stop = stop or outcome
        if stop is not None:
            raise stop

    def _suspect_zero(
        self,
        st: SearchState,
        channel: Channel,
        page: int,
        grid: GridPage,
        round_rows: dict[str, int],
        *,
        feedback: bool,
    ) -> bool:
        """A page without rows the search itself contradicts: a later page (the page before it
        promised more), or a subject channel whose title/keywords siblings of the same concepts
        found rows (this round or earlier). A throttled client is answered exactly so."""
        if grid.rows:
            return False
        if page > 1:
            return True
        if feedback or st.structured:
            return False
        narrower = _CONTAINS.get(channel.field, frozenset())
        return any(
            other.field in narrower and (round_rows.get(other.id, 0) > 0 or st.coverage_of(other.id).rows > 0)
            for other in st.channels
            if other.id != channel.id
        )

    async def _recheck_suspect_zeros(
        self,
        st: SearchState,
        ctx: OperationContext,
        units: Sequence[Unit],
        requests: Sequence[GridRequest],
        outcomes: list[Any],
        *,
        feedback: bool,
    ) -> None:
        """Soft-block rule: every suspect zero of the round is asked once more after a pause; a zero
        that stays suspect becomes SITE_UNAVAILABLE (fatal: the checkpoint keeps the channel open
        and its cursor, so `continue` asks for the same page). Never stored as exhausted."""

        def suspects() -> list[int]:
            rows: dict[str, int] = {}
            for u, o in zip(units, outcomes, strict=True):
                if isinstance(o, GridPage):
                    rows[u.channel.id] = rows.get(u.channel.id, 0) + len(o.rows)
            return [
                i
                for i, (u, o) in enumerate(zip(units, outcomes, strict=True))
                if isinstance(o, GridPage)
                # One query of a split channel covers only part of it: its first page may be empty.
                and not (u.channel.queries > 1 and requests[i].page == 1)
                and self._suspect_zero(st, u.channel, requests[i].page, o, rows, feedback=feedback)
            ]

        first = suspects()
        if not first:
            return
        ctx.set_stage("retrieval", "知网返回了可疑的空结果，稍后复查一次")
        await self.clock.sleep(self.soft_block_pause)
        again = await asyncio.gather(
            *(self.backend.grid(requests[i], op=ctx) for i in first), return_exceptions=True
        )
        for i, outcome in zip(first, again, strict=True):
            outcomes[i] = outcome
        for i in suspects():
            if i in first:
                outcomes[i] = SiteUnavailable(
                    "知网对本应有结果的检索连续返回空结果（疑似限流软封），已暂停；稍后可继续任务",
                    reason="soft_block",
                    channel=units[i].channel.id,
                    page=requests[i].page,
                )

    async def _page(
        self, st: SearchState, ctx: OperationContext, unit: Unit, request: GridRequest
    ) -> GridPage:
        """One channel's page of a round. Committed when observed: the rows go to the store and the
        page to the checkpoint at once, so a round cut short (the watchdog, a crash) loses no
        observation and `continue` does not ask for the page again (docs/reliability.md)."""
        key = unit.channel.id if unit.channel.queries == 1 else f"{unit.channel.id}#{unit.lane}"
        landed = st.landed.get(key)
        if landed is not None and landed.get("page") == request.page:
            return GridPage.model_validate(landed["grid"])
        grid = await self.backend.grid(request, op=ctx)
        self._kept_papers(st, grid)
        st.landed[key] = {"page": request.page, "grid": grid.model_dump(mode="json")}
        ctx.checkpoint(st.to_json())
        return grid

    def _kept_papers(self, st: SearchState, grid: GridPage) -> tuple[list[tuple[int, Any]], list[Paper]]:
        y0, y1 = st.input.get("year_from") or 0, st.input.get("year_to") or 0
        kept: list[tuple[int, Any]] = []
        for i, row in enumerate(grid.rows):
            if (y0 or y1) and (not row.year or (y0 and row.year < y0) or (y1 and row.year > y1)):
                continue
            kept.append((i, row))
        papers = self.store.upsert_from_grid(
            [row for _, row in kept], self.clock.now(), public_origins=self.public_origins
        )
        return kept, papers

    def _collect(
        self, st: SearchState, unit: Unit, entry: CoverageEntry, grid: GridPage, feedback: bool
    ) -> None:
        channel = unit.channel
        lane = st.lanes_of(channel)[unit.lane] if channel.queries > 1 else None
        seen_rows = lane.rows if lane is not None else entry.rows
        kept, papers = self._kept_papers(st, grid)
        seen = set(st.refs)
        new = 0
        for (index, _), paper in zip(kept, papers, strict=True):
            ref = paper.record_ref
            if ref not in seen:
                seen.add(ref)
                new += 1
                st.refs.append(ref)
                if feedback:
                    st.feedback_refs.append(ref)
            hits = st.hits.setdefault(ref, [])
            if not any(h.channel == channel.id for h in hits):
                hits.append(Hit(channel.id, seen_rows + index + 1, channel.weight))
        exhausted = grid.exhausted or not grid.rows
        entry.pages += 1
        entry.rows += len(grid.rows)
        if self.policy.channel_stop == ChannelStop.NO_NEW and grid.rows and not new and lane is None:
            entry.stopped = "no_new"  # pipeline/policy.py ChannelStop.NO_NEW
        if lane is None:
            if grid.turnpage:
                st.cursors[channel.id] = grid.turnpage
            else:
                st.cursors.pop(channel.id, None)
            entry.total = grid.total
            entry.exhausted = exhausted
            return
        lane.cursor = grid.turnpage or ""
        lane.pages += 1
        lane.rows += len(grid.rows)
        lane.total = grid.total
        lane.exhausted = exhausted
        lanes = st.lanes_of(channel)
        totals = [x.total for x in lanes if x.total is not None]
        entry.total = sum(totals) if totals else None  # sum over the queries; they may overlap
        entry.exhausted = all(x.exhausted for x in lanes)

    # --- ranking helpers ----------------------------------------------------------------

    def candidates(self, st: SearchState, refs: Sequence[str]) -> tuple[list[Candidate], dict[str, Paper]]:
        """Candidates in first-seen order, one per paper (refs merged since are folded)."""
        found = self.store.papers_by_refs(refs)
        papers: dict[str, Paper] = {}
        hits: dict[str, list[Hit]] = {}
        for ref in refs:
            paper = found.get(ref)
            if paper is None:
                continue
            papers.setdefault(paper.record_ref, paper)
            hits.setdefault(paper.record_ref, []).extend(st.hits.get(ref, []))
        out = [
            Candidate(
                ref=ref,
                title=p.title,
                abstract=p.abstract or "",
                keywords=tuple(p.keywords),
                doc_type=p.doc_type or "",
                year=p.year,
                cited=p.cited,
                hits=tuple(hits[ref]),
                quality=self.enricher.source_quality(p),
            )
            for ref, p in papers.items()
        ]
        local = self._local_channels(st)
        if local:
            subject = self._subject(st)
            detailed = {ref for ref, p in papers.items() if self._detailed(p)}
            out = with_local_hits(
                out, st.groups, local, detailed, order_by=subject.id if subject is not None else "q1"
            )
        return out, papers

    def rank(self, st: SearchState, refs: Sequence[str]) -> tuple[list[Ranked], dict[str, Paper]]:
        cands, papers = self.candidates(st, refs)
        return self.ranker.rank(cands, st.groups, self.now_year()), papers

    def _pool(self, st: SearchState, refs: Sequence[str]) -> list[str]:
        mode = st.input["metadata"]
        if mode == "basic" or not refs:
            return []
        if mode == "all":
            return list(refs)
        if self.policy.enrichment == Enrichment.BOUNDARY and not st.structured:
            return []  # decided batch by batch (_enrich)
        ranked, _ = self.rank(st, refs)
        return [r.ref for r in ranked[: enhancement_size(len(ranked))]]

    def _feedback_channels(self, st: SearchState) -> list[Channel]:
        ranked, papers = self.rank(st, st.refs)
        words = feedback_keywords(ranked, {ref: p.keywords for ref, p in papers.items()}, st.groups)
        out: list[Channel] = []
        for i, word in enumerate(words, start=1):
            compiled = compile_expression(feedback_expression(st.groups, word))
            out.append(
                Channel.compiled(f"feedback{i}", "subject", FEEDBACK_WEIGHT, FEEDBACK_REASON + word, compiled)
            )
        return out

    # --- finish -------------------------------------------------------------------------

    def finish(self, st: SearchState, ctx: OperationContext, failure: CnkiError | None) -> SearchSummary:
        params = st.input
        if st.structured:
            _, papers = self.candidates(st, st.refs)
            ranked = [Ranked(ref, 0.0, True, Evidence()) for ref in papers]
        else:
            ranked, papers = self.rank(st, st.refs)
        if st.structured or params["metadata"] == "basic":
            selected = ranked[:MAX_SELECTED]
        else:
            selected = self.ranker.select(ranked, MAX_SELECTED)
        chosen = {r.ref for r in selected}
        excluded = exclusions(ranked, chosen)
        counts: dict[str, int] = {}
        for reason in excluded.values():
            counts[reason] = counts.get(reason, 0) + 1
        status = "partial" if failure is not None or ctx.item_errors else "completed"

        channel_of: dict[str, list[str]] = {}
        for ref, hs in st.hits.items():
            paper = papers.get(ref) or self.store.get(ref)
            if paper is not None:
                channel_of.setdefault(paper.record_ref, []).extend(h.channel for h in hs)
        sources: set[str] = set()
        enhanced = 0
        for p in papers.values():
            if p.abstract and p.detail_observed_at is not None:
                enhanced += 1
            cached = self.enricher.journal_cached(p)
            if cached is not None and cached.state == PRESENT:
                sources.add(source_key(p.source))
        rows = [
            SearchEvidence(
                record_ref=r.ref,
                rank=i,
                channels=tuple(dict.fromkeys(channel_of.get(r.ref, []))),
                score=None if st.structured else r.score,
                evidence={**r.evidence.to_dict(), "eligible": r.eligible}
                if not st.structured
                else {"eligible": True},
                selected=r.ref in chosen,
                exclusion=excluded.get(r.ref),
            )
            for i, r in enumerate(ranked, start=1)
        ]
        limit = params.get("limit") or DEFAULT_LIMIT
        scores = {r.ref: r.score for r in ranked}
        summary = SearchSummary(
            search_id=st.search_id,
            status=status,
            candidate_count=len(ranked),
            eligible_count=sum(1 for r in ranked if r.eligible),
            selected_count=len(selected),
            enhanced_count=enhanced,
            quality_source_count=len(sources),
            selection_exclusions=counts,
            coverage=[c.model_copy() for c in st.coverage],
            plan=plan_view(st.plan, [*st.channels, *(st.feedback or [])]),
            results=[
                self.result_item(papers[r.ref], None if st.structured else scores[r.ref])
                for r in selected[:limit]
            ],
            source="live",
            requests=ctx.requests,
            warnings=list(st.plan.get("warnings", [])),
            errors=[
                e.model_dump(mode="json")
                for e in ([] if failure is None else [OperationErrorInfo.of(failure)])
            ]
            + [e.model_dump(mode="json") for e in ctx.item_errors],
        )
        now = self.clock.now()
        self.store.save_evidence(st.search_id, rows)
        self.store.save_search(
            st.search_id,
            params["query"],
            params,
            st.cache_key,
            status,
            now,
            updated_at=now,
            summary=summary.model_dump(mode="json"),
        )
        return summary

    def result_item(self, paper: Paper, score: float | None) -> ResultItem:
        cached = self.enricher.journal_cached(paper)
        tiers = list(cached.page.tiers) if cached is not None and cached.page is not None else []
        return ResultItem(
            record_ref=paper.record_ref,
            title=paper.title,
            authors=paper.author_names(),
            source=paper.source,
            year=paper.year,
            doc_type=paper.doc_type,
            tiers=tiers,
            score=None if score is None else round(score, 6),
            url=paper.public_url,
        )
