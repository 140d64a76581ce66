"""A stored paper as the citation formatters read it (`cite_source`): every reference list the
product writes (export_citations, verify_references' corrected entries) starts from this."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from cnki_mcp.identity import Paper, listed_online_first


def stable_url(url: str | None) -> str | None:
    """A URL fit for a reference list. kcms2 detail links carry a `v` token that expires
    (facts: LOCATOR_EXPIRED), so a citation holding one would rot; those are dropped and the
    DOI identifies the paper instead."""
    if not url:
        return None
    query = parse_qs(urlsplit(url).query)
    return None if "v" in query else url


def cite_source(paper: Paper) -> dict[str, Any]:
    """A stored paper as cite.from_paper reads it: a stable public URL, never the locator."""
    data = paper.model_dump(mode="json", exclude={"locator"})
    data["url"] = stable_url(paper.public_url)
    data["authors"] = paper.author_names()
    data["online_first"] = listed_online_first(paper.native)
    data["date"] = paper.publication_date()  # an online-first paper's 在线公开时间 when it has no date
    data["full_record_read"] = paper.detail_observed_at is not None or paper.export_observed_at is not None
    return data
