"""The search's candidates and their ranking on the state, the detail pool a phase reads, and the
finished search's summary and evidence rows (site-rules.md §3.4 "finish"): shared by the research
search and the structured search. A mixin of `SearchEngine`, which owns the state, the store, the
enrichment and the local channels."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cnki_mcp.clock import Clock
from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import Paper, source_key
from cnki_mcp.jobs import OperationContext
from cnki_mcp.operations import OperationErrorInfo
from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.pipeline.models import EnrichMore, ResultItem, SearchSummary
from cnki_mcp.pipeline.paper_memo import PaperMemo
from cnki_mcp.pipeline.policy import Enrichment, LocalChannel, SearchPolicy, with_local_hits
from cnki_mcp.pipeline.readout import enrich_more, result_item
from cnki_mcp.pipeline.state import FEEDBACK, RETRIEVAL, Channel, SearchState
from cnki_mcp.pipeline.structured import structured_warnings
from cnki_mcp.pipeline.units import plan_view
from cnki_mcp.rank import (
    MAX_SELECTED,
    Candidate,
    Evidence,
    Hit,
    Ranked,
    Ranker,
    SourceQuality,
    enhancement_size,
    exclusions,
    select_works,
)
from cnki_mcp.store import PRESENT, SearchEvidence, Store

DEFAULT_LIMIT = 50  # results a finished search lists when the input names no limit


def issue_year_warning(papers: Sequence[Paper], params: dict[str, Any]) -> str | None:
    """CNKI filters years by 发表时间 (site-rules.md §1.3), a paper first published online by its
    online day, while `year` is its issue's (the citation year, read from the export or detail
    page): such a paper selected inside the years may show a year outside them. Named, with the
    filter on `year` (search_library), so the answer does not look as if it ignored the years."""
    y0, y1 = params.get("year_from") or 0, params.get("year_to") or 0
    if not (y0 or y1):
        return None
    outside = [p for p in papers if p.year and ((y0 and p.year < y0) or (y1 and p.year > y1))]
    if not outside:
        return None
    named = "；".join(f"《{p.title}》发表时间 {(p.date or '')[:10] or '—'}、year {p.year}" for p in outside[:3])
    span = f"{y0 or ''}–{y1 or ''}"
    return (
        f"知网按发表时间（网络首发论文为其首发日期）限定年份 {span}：{len(outside)} 篇入选文献的 year（刊期年份）"
        f"在此范围外（{named}）；需要按刊期年份时用 search_library(query=主题词, search_id=本次的 search_id, "
        f"year_from={y0 or None}, year_to={y1 or None}) 筛选"
    )


class Finish:
    """Mixed into `SearchEngine`, whose store, papers, enrichment, ranker, policy and local channels it uses."""

    store: Store
    clock: Clock
    papers: PaperMemo
    enricher: Enricher
    ranker: Ranker
    policy: SearchPolicy
    now_year: Callable[[], int]

    if TYPE_CHECKING:  # provided by SearchEngine and its other mixins; declared for the type checker only

        def _local_channels(self, st: SearchState, *, retrieval_only: bool = False) -> list[LocalChannel]: ...

        def _subject(self, st: SearchState) -> Channel | None: ...

        def unproposed_prefetch(self, st: SearchState) -> frozenset[str]: ...

    # --- ranking helpers ----------------------------------------------------------------

    def candidates(
        self,
        st: SearchState,
        refs: Sequence[str],
        through: int | None = None,
        *,
        retrieval_only: bool = False,
        masked: frozenset[str] = frozenset(),
    ) -> tuple[list[Candidate], dict[str, Paper]]:
        """Candidates in first-seen order, one per paper (refs merged since are folded). `through`:
        only the retrieval candidates and hits of pages <= `through` (a snapshot of the first pages
        that is the same whatever later pages have landed: state.py keeps each hit's earliest page).
        `retrieval_only`: no feedback candidate, hit or local channel (FeedbackWhen.CERTAIN);
        `masked`: sources whose journal evidence is left out (read early, not proposed yet)."""
        seen = st.first_seen
        if through is not None:
            refs = [r for r in refs if seen.get(r, [FEEDBACK])[0] == RETRIEVAL and seen[r][1] <= through]
        if retrieval_only:
            refs = [r for r in refs if seen.get(r, [FEEDBACK])[0] == RETRIEVAL]
        feedback_ids = st.feedback_ids if retrieval_only else set()
        found = self.papers.papers(refs)
        papers: dict[str, Paper] = {}
        hits: dict[str, list[Hit]] = {}
        for ref in refs:
            paper = found.get(ref)
            if paper is None:
                continue
            papers.setdefault(paper.record_ref, paper)
            kept = st.hits.get(ref, [])
            if through is not None:
                kept = [h for h in kept if st.hit_keys.get(f"{ref}|{h.channel}", [0])[0] <= through]
            if feedback_ids:
                kept = [h for h in kept if h.channel not in feedback_ids]
            hits.setdefault(paper.record_ref, []).extend(kept)
        quality: dict[str, SourceQuality | None] = {}  # one journal lookup per source, not per paper

        def quality_of(p: Paper) -> SourceQuality | None:
            key = source_key(p.source)
            if key not in quality:
                quality[key] = None if key in masked else self.enricher.source_quality(p)
            return quality[key]

        out = [
            Candidate(
                ref=ref,
                title=p.title,
                abstract=p.abstract or p.excerpt or "",  # a newspaper's 正文快照 is its text
                keywords=tuple(p.keywords),
                doc_type=p.doc_type or "",
                year=p.year,
                cited=p.cited,
                hits=tuple(hits[ref]),
                quality=quality_of(p),
            )
            for ref, p in papers.items()
        ]
        local = self._local_channels(st, retrieval_only=retrieval_only)
        if local:
            subject = self._subject(st)
            detailed = {ref for ref, p in papers.items() if self.enricher.abstract_read(p)}
            out = with_local_hits(
                out, st.groups, local, detailed, order_by=subject.id if subject is not None else "q1"
            )
        return out, papers

    def rank(
        self, st: SearchState, refs: Sequence[str], through: int | None = None, *, deciding: bool = False
    ) -> tuple[list[Ranked], dict[str, Paper]]:
        """The ranking of `refs`; `deciding`: for a decision, so a journal read early and not yet
        proposed counts as unread (JournalPrefetch.FIRST_LEVEL, `unproposed_prefetch`)."""
        masked = self.unproposed_prefetch(st) if deciding else frozenset()
        cands, papers = self.candidates(st, refs, through, masked=masked)
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

    # --- finish -------------------------------------------------------------------------

    def finish(
        self, st: SearchState, ctx: OperationContext, failure: CnkiError | None, *, stopped: bool = False
    ) -> SearchSummary:
        params = st.input
        if st.structured:
            _, papers = self.candidates(st, st.refs)
            ranked = [Ranked(ref, 0.0, True, Evidence()) for ref in papers]
        else:
            ranked, papers = self.rank(st, st.refs)
        first_only = st.structured or params["metadata"] == "basic"
        # a work CNKI lists twice (online-first and final, a reprint) is selected once; a structured
        # search lists CNKI's rows as they are
        def select(listed: Sequence[Ranked]) -> list[Ranked]:
            return list(listed[:MAX_SELECTED]) if first_only else self.ranker.select(listed, MAX_SELECTED)

        selected, dupes = (select(ranked), {}) if st.structured else select_works(ranked, papers, select)
        chosen = {r.ref for r in selected}
        excluded = exclusions(ranked, chosen, first_only=first_only, duplicates=dupes)
        counts: dict[str, int] = {}
        for reason in excluded.values():
            counts[reason] = counts.get(reason, 0) + 1
        status = "partial" if stopped or failure is not None or ctx.item_errors else "completed"

        channel_of: dict[str, list[str]] = {}
        for ref, hs in st.hits.items():
            paper = papers.get(ref) or self.store.get(ref)
            if paper is not None:
                channel_of.setdefault(paper.record_ref, []).extend(h.channel for h in hs)
        if st.local:  # channels answered on the known candidates (pipeline/policy.py) found them too
            local = {x["id"] for x in st.local}
            for cand in self.candidates(st, st.refs)[0]:
                channel_of.setdefault(cand.ref, []).extend(h.channel for h in cand.hits if h.channel in local)
        sources: set[str] = set()
        enhanced = 0
        for p in papers.values():
            if p.abstract and self.enricher.abstract_read(p):
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
                | ({"duplicate_of": dupes[r.ref]} if r.ref in dupes else {})
                if not st.structured
                else {"eligible": True},
                selected=r.ref in chosen,
                exclusion=excluded.get(r.ref),
            )
            for i, r in enumerate(ranked, start=1)
        ]
        limit = params.get("limit") or DEFAULT_LIMIT
        before = self.store.get_search(st.search_id)  # a continue ranks the same search again
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
            warnings=list(st.plan.get("warnings", []))
            # a stopped search is continued instead (its next_step)
            + (structured_warnings(st.coverage, params, st.channels) if st.structured and status == "completed" else [])
            + [w for w in [issue_year_warning([papers[r.ref] for r in selected], params)] if w],
            errors=[
                e.model_dump(mode="json")
                for e in ([] if failure is None else [OperationErrorInfo.of(failure)])
            ]
            + [e.model_dump(mode="json") for e in ctx.item_errors],
            enrich_more=self.enrich_more([papers[r.ref] for r in selected]),
            ranking=before.ranking + 1 if before is not None else 1,
        )
        now = self.clock.now()
        self.store.save_search(
            st.search_id,
            params["query"],
            params,
            st.cache_key,
            status,
            now,
            updated_at=now,
            summary=summary.model_dump(mode="json"),
            evidence=rows,
        )
        return summary

    def enrich_more(self, papers: Sequence[Paper]) -> EnrichMore | None:
        return enrich_more(self.enricher, papers)

    def result_item(self, paper: Paper, score: float | None) -> ResultItem:
        return result_item(self.enricher, paper, score)
