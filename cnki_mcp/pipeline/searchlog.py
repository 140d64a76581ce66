"""The reproducible search log (`export_search_log`, DESIGN.md "Search log"): what a stored search
asked CNKI, page by page, and how its records flowed from identified to selected.

`PageLog` is the engine's hook: every grid page observed, and every page merged into the search,
is written to `search_log_pages` (store/searchlog.py). `build_search_log` reads a search back from
the store (its row, summary, evidence rows and page log) into a `SearchLog`; the formatters are in
`searchlog_format.py`. The PRISMA-style flow adds up by construction:
identified - outside the year range - duplicates = screened; screened - excluded = selected."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cnki_mcp.clock import Clock
from cnki_mcp.errors import SearchNotFound
from cnki_mcp.identity import source_key
from cnki_mcp.models import GridPage
from cnki_mcp.pipeline.models import SearchSummary
from cnki_mcp.pipeline.searchlog_format import (
    ChannelLog,
    PageEntry,
    PrismaFlow,
    SearchLog,
    render_subject,
)
from cnki_mcp.pipeline.state import Channel, SearchState
from cnki_mcp.query.compiler import year_filter
from cnki_mcp.rank import EXCLUDED_DUPLICATE
from cnki_mcp.store import PRESENT, Store
from cnki_mcp.stored import load

# How the concept plan was made (query/plan.py PlanMethod), in words for a methods section.
PLAN_METHODS: dict[str, str] = {
    "explicit": "concept groups given by the caller",
    "sampling": "concept groups proposed by the client's language model (MCP sampling) from the question",
    "segmented": "concept words segmented from the question by the server (no model)",
    "lexical": "the question split on its explicit separators",
    "structured": "the caller's boolean expression (structured_search), run as written",
}

# The selection rule of each ranker (rank.py), stated once here for the log.
SELECTION_RULES: dict[str, str] = {
    "reference": (
        "score = relevance x source quality; selected: eligible (relevance evidence), score >= "
        "max(0.24, 0.55 x top score), and (relevance >= 0.35 with every concept covered, or quality "
        ">= 0.45, or quality >= 0.25 with relevance >= 0.35, or no quality evidence and relevance >= 0.55); at most 100"
    ),
    "min10": "the reference rule, topped up to 10 with the next eligible papers passing its clauses; at most 100",
    "min10_rescue55": (
        "the reference rule (score = relevance x source quality; score >= max(0.24, 0.55 x top score) and "
        "its relevance/quality clauses), topped up to 10 with the next eligible papers passing the clauses, "
        "plus every eligible paper covering all concept groups with relevance >= 0.55 and the eligible "
        "clause-passing papers ranked above it; at most 100"
    ),
}
STRUCTURED_RULE = "CNKI's own order kept; the first 100 records listed are selected, nothing re-ranked"
BASIC_RULE = "list data only (metadata=basic): the first 100 records in ranked order are selected"
ONE_RECORD_PER_WORK = (
    "; one record per work (works.duplicate_works: an online-first record and its final one, a reprint, "
    "a conference version, the thesis an article came from; the final record preferred), the other records "
    "excluded as duplicate_work"
)


# --------------------------------------------------------------------------- the engine's hook


class PageLog:
    """Writes the per-page log for the engine (one committed row update per page)."""

    def __init__(self, store: Store, clock: Clock, page_size: int) -> None:
        self.store = store
        self.clock = clock
        self.page_size = page_size

    def _query(self, st: SearchState, channel: Channel, lane: int) -> dict[str, Any]:
        return {
            "subject": channel.subject_at(lane),
            "year_from": st.input.get("year_from") or None,
            "year_to": st.input.get("year_to") or None,
            "sort": st.input.get("sort"),
            "page_size": self.page_size,
        }

    def write(
        self,
        st: SearchState,
        channel: Channel,
        lane: int,
        page: int,
        grid: GridPage,
        kept: int,
        *,
        merged: bool,
    ) -> None:
        self.store.log_search_page(
            st.search_id,
            channel.id,
            lane,
            page,
            self._query(st, channel, lane),
            observed_at=self.clock.now(),
            rows=len(grid.rows),
            kept=kept,
            total=grid.total,
            merged=merged,
        )


# --------------------------------------------------------------------------- reading a search back


def _checkpoint_channels(store: Store, search_id: str) -> dict[str, Channel]:
    """Channels of the search's checkpoint, while the operation is still stored (the QueryJson of a
    channel that never got a page in). Read through the operation accessor; empty otherwise."""
    try:
        op = store.load_operation(search_id)
        cp = op.checkpoint if op is not None else None
        if not cp:
            return {}
        st = SearchState.from_json(cp)
        return {c.id: c for c in [*st.channels, *(st.feedback or [])]}
    except Exception:  # an older or newer checkpoint shape: the page log still stands
        return {}


def build_search_log(store: Store, search_id: str, ranker_name: str) -> SearchLog:
    """The log of a stored search (SEARCH_NOT_FOUND when the store does not hold it)."""
    record = store.get_search(search_id)
    if record is None or record.summary is None:
        raise SearchNotFound(search_id=search_id)
    summary = load(SearchSummary, record.summary)
    params = dict(record.params)
    structured = summary.plan.method == "structured"
    logged = store.search_log_pages(search_id)
    fallback = _checkpoint_channels(store, search_id)
    reasons = {c.id: c.reason for c in summary.plan.channels}

    channels: list[ChannelLog] = []
    for cov in summary.coverage:
        pages = sorted((p for p in logged if p.channel == cov.channel), key=lambda p: (p.lane, p.page))
        subjects: dict[int, dict[str, Any]] = {}
        for p in pages:
            subjects.setdefault(p.lane, p.query.get("subject") or {})
        if not subjects and cov.channel in fallback:
            ch = fallback[cov.channel]
            subjects = {i: ch.subject_at(i) for i in range(ch.queries)}
        ordered = [subjects[k] for k in sorted(subjects)]
        channels.append(
            ChannelLog(
                id=cov.channel,
                field=cov.field,
                reason=reasons.get(cov.channel, cov.reason),
                queries=[render_subject(s) for s in ordered],
                query_json=ordered,
                pages_read=cov.pages,
                rows=cov.rows,
                total_reported=cov.total,
                exhausted=cov.exhausted,
                error=cov.error,
                answered_locally=cov.stopped == "local",
                pages=[
                    PageEntry(
                        query=p.lane + 1,
                        page=p.page,
                        at=p.observed_at,
                        rows=p.rows,
                        kept=p.kept,
                        total=p.total,
                        attempts=p.attempts,
                        merged=p.merged,
                    )
                    for p in pages
                ],
            )
        )

    evidence = store.search_results(search_id, "all", 0, 1_000_000).items
    screened = len(evidence)
    selected = sum(1 for e in evidence if e.selected)
    by_reason: dict[str, int] = {}
    for e in evidence:
        if not e.selected:
            reason = e.exclusion or "not_selected"
            by_reason[reason] = by_reason.get(reason, 0) + 1
    merged = [p for p in logged if p.merged]
    if merged:
        identified = sum(p.rows for p in merged)
        outside = sum(p.rows - p.kept for p in merged)
        page_log = True
    else:  # a search stored before the page log existed: coverage counts every row listed
        identified = sum(c.rows for c in summary.coverage)
        outside = 0
        page_log = not any(c.pages for c in summary.coverage)
    prisma = PrismaFlow(
        identified=identified,
        outside_years=outside,
        duplicates=identified - outside - screened,
        screened=screened,
        excluded=screened - selected,
        excluded_by_reason=dict(sorted(by_reason.items())),
        selected=selected,
        page_log=page_log,
    )
    if structured:
        rule = STRUCTURED_RULE
    elif params.get("metadata") == "basic":
        rule = BASIC_RULE
    else:
        rule = SELECTION_RULES.get(ranker_name, f"ranker {ranker_name}")
    if not structured and by_reason.get(EXCLUDED_DUPLICATE):
        rule += ONE_RECORD_PER_WORK  # said where it happened: searches stored before it did not fold works
    started = min([record.created_at, *(p.observed_at for p in logged)])  # the row is written at the end
    abstracts, journals = _read_during(store, [e.record_ref for e in evidence], started, record.updated_at)
    return SearchLog(
        search_id=search_id,
        status=record.status,
        kind="structured_search" if structured else "search",
        question=record.query,
        created_at=started,
        finished_at=record.updated_at,
        plan_method=summary.plan.method,
        plan_method_note=PLAN_METHODS.get(summary.plan.method, summary.plan.method),
        concepts=summary.plan.concepts,
        warnings=summary.warnings,
        parameters={
            k: params.get(k)
            for k in ("mode", "year_from", "year_to", "sort", "max_pages", "candidate_target", "metadata")
        },
        channels=channels,
        requests=summary.requests,
        abstracts_read=abstracts,
        journals_read=journals,
        abstracts_known=summary.enhanced_count,
        journals_known=summary.quality_source_count,
        selection_rule=rule,
        prisma=prisma,
        unmerged_pages=sum(1 for p in logged if not p.merged),
        year_filter=year_filter(params.get("year_from") or None, params.get("year_to") or None)
        if params.get("year_from") or params.get("year_to")
        else None,
    )


def _read_during(store: Store, refs: list[str], start: datetime, end: datetime) -> tuple[int, int]:
    """Abstracts (a detail page or the batch export) and journal pages of the candidates that were
    read between the search's start and end: what this search read. The summary's counts are of
    what is known, earlier searches' reads included: a one-request search that reused four
    abstracts was logged as having read four. A page read again since (past its TTL) by a later
    search is that search's read."""
    abstracts = 0
    sources: set[str] = set()
    for ref in refs:
        paper = store.get(ref)
        if paper is None:
            continue
        seen = (paper.detail_observed_at, paper.export_observed_at)
        if paper.abstract and any(t is not None and start <= t <= end for t in seen):
            abstracts += 1
        key = source_key(paper.source)
        if key and key not in sources:
            cached = store.journal_quality(key, end)
            if cached is not None and cached.state == PRESENT and start <= cached.observed_at <= end:
                sources.add(key)
    return abstracts, len(sources)
