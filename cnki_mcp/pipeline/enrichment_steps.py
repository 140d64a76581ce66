"""The research search's enrichment steps (DESIGN.md "Request policies", "Reading abstracts by
batch export"): the pool a phase decided, then, under `Enrichment.BOUNDARY`, the policy's next
batch after batch (pipeline/policy.py `next_enrichment`), each decision appended to the checkpoint
before it is read. A mixin of `SearchEngine`, which owns the state, the store and the ranking."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from cnki_mcp.identity import Paper, source_key
from cnki_mcp.jobs import OperationContext
from cnki_mcp.pipeline.enrich import Enricher, is_journal
from cnki_mcp.pipeline.policy import (
    Enrichment,
    LocalChannel,
    Reading,
    RefState,
    SearchPolicy,
    early_journals,
    next_enrichment,
)
from cnki_mcp.pipeline.state import SearchState, enrich_event
from cnki_mcp.rank import (
    MAX_SELECTED,
    Candidate,
    Ranked,
    Ranker,
    reach_floor,
    select_works,
    sort_key,
    works_ranking,
)
from cnki_mcp.store import Store


class EnrichmentSteps:
    """Mixed into `SearchEngine`, whose state, store, ranking and local channels it uses."""

    policy: SearchPolicy
    enricher: Enricher
    store: Store
    ranker: Ranker
    now_year: Callable[[], int]

    if TYPE_CHECKING:  # provided by SearchEngine; declared for the type checker only

        # SearchEngine.candidates(st, refs, through=None, *, retrieval_only=False, masked=frozenset())
        candidates: Callable[..., tuple[list[Candidate], dict[str, Paper]]]

        def _local_channels(self, st: SearchState, *, retrieval_only: bool = False) -> list[LocalChannel]: ...

    async def _enrich(
        self,
        st: SearchState,
        ctx: OperationContext,
        pool: list[str],
        *,
        stage: str,
        label: str,
        through: int | None = None,
        stop: Callable[[], bool] | None = None,
        before_step: Callable[[], None] | None = None,
        closing_steps: int = 0,
        retrieval_only: bool = False,
    ) -> None:
        """Enrich `pool` (a resumed phase asks again only what is still missing: read abstracts
        and cached journals send nothing), then, under Enrichment.BOUNDARY, batch after batch until
        the policy proposes nothing; each batch's unread papers join `pool` before they are read
        (checkpointed). Reading.EXPORT reads abstracts by batch export and a journal only once the
        policy, seeing the abstract, still proposes the paper (DESIGN.md "Reading abstracts by
        batch export"). `through`: decide on the candidates and hits of retrieval pages <=
        `through` only (EnrichmentStart.LAST_PAGES: a snapshot that does not depend on which later
        pages have landed); `stop`: no new step once it holds (the retrieval beside it failed);
        `before_step`: called before each decision; `closing_steps` (the closing snapshot, Reading.EXPORT):
        each step that reads abstracts is counted in its batch's event (`SearchState.closing_steps`),
        and once that many are, a step reads only the journal pages its decision proposes and leaves
        the abstracts to a later phase, and the steps end when it proposes no journal page; `retrieval_only`:
        decide without the feedback's candidates, hits and local channels (FeedbackWhen.CERTAIN)."""
        boundary, export = self._reading(st)
        closing = export and closing_steps > 0
        feedback = pool is st.feedback_pool
        key = "feedback_pool" if feedback else "pool"
        journal_key = "feedback_journals" if feedback else "journals"
        tried = st.feedback_journals if feedback else st.journals
        if export:  # a resumed phase first finishes the batch it had decided on
            await self._read_batch(pool, list(tried), ctx, stage=stage, label=label)
        else:
            await self.enricher.run(pool, ctx, stage=stage, label=label)
        if not boundary:
            return
        while True:
            if stop is not None and stop():
                return
            if before_step is not None:
                before_step()
            batch, early = self._next_batch(st, set(tried), through, retrieval_only=retrieval_only)
            if not batch:
                return
            attempted = set(st.pool) | set(st.feedback_pool)
            papers = self.store.papers_by_refs(batch)
            unread = (
                [
                    ref
                    for ref in batch
                    if ref not in attempted
                    and not (ref in papers and self.enricher.abstract_read(papers[ref]))
                ]
                if export
                else batch
            )
            if closing and st.closing_steps >= closing_steps:
                held = set(unread)
                batch, unread, early = [ref for ref in batch if ref not in held], [], []
                if not batch:
                    return
            if unread:
                event = enrich_event(key, unread, closing=closing)
                st.apply(event)  # joins `pool`; appended, not a whole checkpoint (O(batch))
                ctx.checkpoint_append(event)
            if not export:
                await self.enricher.run(batch, ctx, stage=stage, label=label)
                continue
            reading = set(unread)
            journals = [ref for ref in batch if ref not in reading] + [ref for ref in early if ref in reading]
            if journals:
                event = enrich_event(journal_key, journals)
                st.apply(event)
                ctx.checkpoint_append(event)
            await self._read_batch(unread, journals, ctx, stage=stage, label=label)

    async def _read_batch(
        self, abstracts: list[str], journals: list[str], ctx: OperationContext, *, stage: str, label: str
    ) -> None:
        """Reading.EXPORT: the abstracts (batch export) and the journal pages of one decision, side
        by side; both land what they sent before a failure is raised (BUDGET_EXHAUSTED included)."""
        outcomes = await asyncio.gather(
            self.enricher.read_abstracts(abstracts, ctx, stage=stage, label=label),
            self.enricher.run(journals, ctx, stage=stage, quality=True, detail=False, label="读取期刊"),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def _reading(self, st: SearchState) -> tuple[bool, bool]:
        """(boundary enrichment, abstracts by batch export) for this search."""
        boundary = self.policy.enrichment == Enrichment.BOUNDARY and st.input["metadata"] == "ranked"
        boundary = boundary and not st.structured
        return boundary, boundary and self.policy.reading == Reading.EXPORT

    def _next_batch(
        self, st: SearchState, journals_tried: set[str], through: int | None = None, *, retrieval_only: bool = False
    ) -> tuple[list[str], list[str]]:
        """The policy's next batch, and those of its unread candidates whose journal page goes
        beside their abstract (`early_journals`)."""
        ranked, _, states, _ = self._ranked_states(st, through, retrieval_only=retrieval_only)
        listed = sorted(ranked, key=sort_key)  # the records the answer selects from
        selected = self.ranker.select(listed, MAX_SELECTED)
        attempted = set(st.pool) | set(st.feedback_pool)
        batch = next_enrichment(
            ranked,
            states,
            attempted,
            self.policy,
            selected=len(selected),
            floor=reach_floor(listed, selected),
            local=self._local_channels(st, retrieval_only=retrieval_only),
            journals_tried=journals_tried,
        )
        return batch, early_journals(ranked, states, batch, attempted, self.policy, journals_tried)

    def _ranked_states(
        self, st: SearchState, through: int | None = None, *, retrieval_only: bool = False
    ) -> tuple[list[Ranked], dict[str, Paper], dict[str, RefState], dict[str, str]]:
        """The current ranking (lower bounds) with each work once (`rank.works_ranking`: the record
        the answer would list, where the work's best record ranks; a final record still unread keeps
        its online-first record's place, `select_works(settled=...)`), its papers, what the store
        holds for each, and the copies left out (copy -> kept record). A journal read early
        (JournalPrefetch.FIRST_LEVEL) counts as unread until a step proposes its source
        (`unproposed_prefetch`), so the decisions are those of a search that did not read it."""
        masked = self.unproposed_prefetch(st)
        cands, papers = self.candidates(st, st.refs, through, retrieval_only=retrieval_only, masked=masked)
        ranked = self.ranker.rank(cands, st.groups, self.now_year())
        states: dict[str, RefState] = {}
        by_source: dict[str, tuple[bool, bool]] = {}  # one journal lookup per source, not per paper
        for r in ranked:
            p = papers[r.ref]
            key = source_key(p.source)
            known = by_source.get(key)
            if known is None and key in masked:
                known = by_source[key] = (True, False)
            elif known is None:
                cached = self.enricher.journal_cached(p)
                known = by_source[key] = (cached is None, self.enricher.source_quality(p) is not None)
            journal = is_journal(p)
            states[r.ref] = RefState(
                detailed=self.enricher.abstract_read(p),
                journal_open=journal and known[0],
                journal_known=known[1],
            )
        if st.structured:  # a structured search lists CNKI's rows as they are
            return ranked, papers, states, {}
        _, copies = select_works(
            ranked, papers, lambda listed: self.ranker.select(listed, MAX_SELECTED), lambda ref: states[ref].detailed
        )
        return works_ranking(ranked, copies), papers, states, copies

    def unproposed_prefetch(self, st: SearchState) -> frozenset[str]:
        """The sources of the journals read early (`SearchState.prefetched_journals`) that no step has
        proposed yet (`journals`, `feedback_journals`): a function of the checkpoint alone, so a
        resumed search decides alike whether those reads have landed or not."""
        if not st.prefetched_journals:
            return frozenset()
        proposed = self.store.papers_by_refs([*st.journals, *st.feedback_journals])
        released = {source_key(p.source) for p in proposed.values()}
        early = self.store.papers_by_refs(st.prefetched_journals)
        return frozenset(k for p in early.values() if (k := source_key(p.source)) and k not in released)
