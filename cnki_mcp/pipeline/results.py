"""`search_results`: pages of a saved search read from the store (no request). Paper fields are
read fresh, so details fetched after the search show up here."""

from __future__ import annotations

from typing import Any

from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.pipeline.metadata import PAGE_TOKENS, approx_tokens, metadata_record, refs_in_scope
from cnki_mcp.pipeline.models import ResultsInput, ResultsPage
from cnki_mcp.store import SearchEvidence, Store

__all__ = ["PAGE_TOKENS", "approx_tokens", "read_results"]


def read_results(store: Store, enricher: Enricher, inp: ResultsInput) -> ResultsPage:
    """One page of `scope` in rank order; SEARCH_NOT_FOUND for an unknown id."""
    total, refs = refs_in_scope(store, inp.search_id, inp.scope, inp.offset, inp.limit)
    record = store.get_search(inp.search_id)
    assert record is not None  # refs_in_scope raised otherwise
    every = {e.record_ref: e for e in store.search_results(inp.search_id, "all", 0, 1_000_000).items}
    papers = store.papers_by_refs(refs)
    results: list[dict[str, Any]] = []
    spent = 0
    read = 0
    for ref in refs:
        paper = papers.get(ref)
        if paper is None:
            read += 1
            continue
        ev = every.get(ref) or SearchEvidence(record_ref=ref)
        eligible = bool(ev.evidence.get("eligible", True))
        if inp.view == "titles":
            item: dict[str, Any] = {
                "record_ref": paper.record_ref,
                "title": paper.title,
                "url": paper.public_url,
            }
        elif inp.view == "compact":
            item = {
                "record_ref": paper.record_ref,
                "title": paper.title,
                "url": paper.public_url,
                "authors": paper.author_names(),
                "year": paper.year,
                "source": paper.source,
                "abstract": paper.abstract,
                "score": ev.score,
                "eligible": eligible,
            }
        else:
            evidence = {k: v for k, v in ev.evidence.items() if k != "eligible"}
            item = {
                "record": metadata_record(enricher, paper),
                "score": ev.score,
                "eligible": eligible,
                "selected": ev.selected,
                "exclusion": ev.exclusion,
                "channels": list(ev.channels),
                "evidence": evidence,
            }
        cost = approx_tokens(item)
        if results and spent + cost > PAGE_TOKENS:
            break
        spent += cost
        results.append(item)
        read += 1
    end = inp.offset + read
    cut = read < len(refs)
    return ResultsPage(
        search_id=inp.search_id,
        status=record.status,
        scope=inp.scope,
        total=total,
        offset=inp.offset,
        next_offset=end if end < total else None,
        results=results,
        message=(
            f"本页在 {read} 条处截止（limit={inp.limit}；一页约 {PAGE_TOKENS} token 以内，客户端会截断更长的结果）："
            f"用 offset={end} 续读"
            if cut
            else None
        ),
    )
