"""What a search's answer says about how far each paper was read: the result items
(`abstract_read`, `detail_read`, `quality_known`) and `enrich_more`, the `get_metadata` call that
reads the selected papers still unread (DESIGN.md "Reading abstracts by batch export")."""

from __future__ import annotations

from collections.abc import Sequence

from cnki_mcp.identity import Paper
from cnki_mcp.pipeline.enrich import Enricher, is_journal
from cnki_mcp.pipeline.models import EnrichMore, ResultItem
from cnki_mcp.store import PRESENT

MAX_METADATA_REFS = 100  # record_refs one get_metadata call takes (MetadataInput)
# A list of papers (a search's answer, its compact page) names the first ten authors, as the
# citation lists do: a collaboration paper's 3,000 names made one row 55 KB and a search answer
# of ten such papers 270 KB. get_metadata and the records view keep every author.
LISTED_AUTHORS = 10
# what the call asks for: the batch export answers abstract and keywords for 20 papers a request
ENRICH_FIELDS = ["abstract", "keywords", "quality"]


def enrich_more(enricher: Enricher, papers: Sequence[Paper]) -> EnrichMore | None:
    """The papers whose abstract and keywords were not read (no fresh detail page, no batch
    export), or journal articles whose journal page was not read, and the call that reads them
    (at most its 100 refs)."""
    refs = [
        p.record_ref
        for p in papers
        if not enricher.abstract_read(p) or (is_journal(p) and enricher.journal_cached(p) is None)
    ]
    if not refs:
        return None
    call = refs[:MAX_METADATA_REFS]
    return EnrichMore(
        count=len(refs),
        message=f"入选文献中有 {len(refs)} 篇未读取摘要、关键词或期刊信息；需要时调用 get_metadata"
        + (f"（一次最多 {MAX_METADATA_REFS} 篇）" if len(refs) > len(call) else ""),
        suggested_call={
            "tool": "get_metadata",
            "arguments": {"record_refs": call, "fields": ENRICH_FIELDS, "quality": True},
        },
    )


def shown_tiers(enricher: Enricher, paper: Paper) -> list[str]:
    """The tiers a result shows for its source (北大核心, CSSCI …): its journal page's, [] unread."""
    cached = enricher.journal_cached(paper)
    return list(cached.page.tiers) if cached is not None and cached.page is not None else []


def result_item(enricher: Enricher, paper: Paper, score: float | None) -> ResultItem:
    cached = enricher.journal_cached(paper)
    tiers = shown_tiers(enricher, paper)
    return ResultItem(
        abstract_read=enricher.abstract_read(paper),
        detail_read=enricher.detail_fresh(paper.record_ref),
        quality_known=cached is not None and cached.state == PRESENT,
        record_ref=paper.record_ref,
        title=paper.title,
        authors=paper.author_names()[:LISTED_AUTHORS],
        source=paper.source,
        year=paper.year,
        doc_type=paper.doc_type,
        tiers=tiers,
        score=None if score is None else round(score, 6),
        url=paper.public_url,
    )
