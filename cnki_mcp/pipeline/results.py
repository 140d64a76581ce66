"""`search_results`: pages of a saved search read from the store (no request). Paper fields are
read fresh, so details fetched after the search show up here."""

from __future__ import annotations

from typing import Any

from cnki_mcp.identity import Paper
from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.pipeline.metadata import metadata_record, page_cut, refs_in_scope, reranked_note, within_budget
from cnki_mcp.pipeline.models import ResultsInput, ResultsPage
from cnki_mcp.pipeline.readout import LISTED_AUTHORS, shown_tiers
from cnki_mcp.store import SearchEvidence, Store


def read_results(store: Store, enricher: Enricher, inp: ResultsInput) -> ResultsPage:
    """One page of `scope` in rank order; SEARCH_NOT_FOUND for an unknown id."""
    total, refs = refs_in_scope(store, inp.search_id, inp.scope, inp.offset, inp.limit)
    record = store.get_search(inp.search_id)
    assert record is not None  # refs_in_scope raised otherwise
    every = store.evidence_for(inp.search_id, refs)  # the page's rows: the whole scope was read per page
    papers = store.papers_by_refs(refs)
    # one item per ref (None: the paper is gone from the store; it still takes its place)
    built = [None if papers.get(ref) is None else _item(papers[ref], every.get(ref), inp.view, enricher) for ref in refs]
    read = within_budget([item or {} for item in built])
    results = [item for item in built[:read] if item is not None]
    end = inp.offset + read
    cut = read < len(refs)
    next_offset = end if end < total else None
    notes = [
        *([page_cut(read, inp.limit, "条") + f"用 offset={end} 续读"] if cut else []),
        *[n for n in [reranked_note(record.status, inp.offset, next_offset)] if n],
    ]
    return ResultsPage(
        search_id=inp.search_id,
        status=record.status,
        scope=inp.scope,
        total=total,
        offset=inp.offset,
        next_offset=next_offset,
        results=results,
        ranking=record.ranking,
        message="；".join(notes) or None,
    )


def _item(paper: Paper, evidence: SearchEvidence | None, view: str, enricher: Enricher) -> dict[str, Any]:
    """One row of a results page in `view`."""
    ev = evidence or SearchEvidence(record_ref=paper.record_ref)
    eligible = bool(ev.evidence.get("eligible", True))
    if view == "titles":
        item: dict[str, Any] = {
            "record_ref": paper.record_ref,
            "title": paper.title,
            "url": paper.public_url,
        }
    elif view == "compact":
        # what the search's own answer says of a paper (pipeline/readout.result_item: document type,
        # the source's tiers), and whether it was selected: an eligible or candidates page mixes both
        item = {
            "record_ref": paper.record_ref,
            "title": paper.title,
            "url": paper.public_url,
            "authors": paper.author_names()[:LISTED_AUTHORS],
            "year": paper.year,
            "source": paper.source,
            "doc_type": paper.doc_type,
            "tiers": shown_tiers(enricher, paper),
            "abstract": paper.abstract,
            "score": ev.score,
            "eligible": eligible,
            "selected": ev.selected,
            **({"exclusion": ev.exclusion} if ev.exclusion else {}),
        }
    else:
        shown = {k: v for k, v in ev.evidence.items() if k not in ("eligible", "duplicate_of")}
        item = {
            "record": metadata_record(enricher, paper),
            "score": ev.score,
            "eligible": eligible,
            "selected": ev.selected,
            "exclusion": ev.exclusion,
            # exclusion duplicate_work: the record listed for the same work (online-first vs final, a reprint)
            **({"duplicate_of": ev.evidence["duplicate_of"]} if "duplicate_of" in ev.evidence else {}),
            "channels": list(ev.channels),
            "evidence": shown,
        }
    return item
