"""The store's TTL'd cache rows (DESIGN.md "Freshness"): a row is answered only when
0 <= age < its TTL, so a row kept while the wall clock was ahead (a laptop whose clock was put
right since) is stale, not trusted until that time plus the TTL; and a row this release cannot
read (a value of another type, written by another release) is a miss that CNKI answers again,
never an error."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from corpus_backend import CorpusBackend
from pipeline_fakes import SimSite, run_metadata

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import JournalPage
from cnki_mcp.parse.citations import CitationItem, CitationListPage
from cnki_mcp.pipeline.enrich import read_in_full
from cnki_mcp.pipeline.models import MetadataInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.server.tools_read import _pdf_offered
from cnki_mcp.store import PRESENT, Store
from tests.component.test_pipeline import PLAN, make, run_search, search_input
from tests.paper_samples import sample_detail

AHEAD = timedelta(days=3)  # shorter than every TTL but the journal mismatch's and the search cache's
URL = "https://kns.cnki.net/kcms2/article/abstract?v=TOKEN1"
LIST = CitationListPage(type_code="CJFDREF", total=1, start=1, items=[
    CitationItem(title="甲", filename="A1", detail_url="https://kns.cnki.net/kcms2/article/abstract?v=1")])  # fmt: skip


def _retype(store: Store, table: str, path: str, value: str) -> None:
    """Give a field of the rows' JSON a value of another type (`value`, JSON), as another release
    might write it."""
    with store._write() as conn:
        conn.execute(f"UPDATE {table} SET data = json_set(data, ?, json(?))", (path, value))


def _journal(store: Store, at: Any) -> None:
    store.save_journal("计算机学报", JournalPage(name="计算机学报", tiers=["北大核心"]), PRESENT, at)


# each cache: (keep it at a time, read it at a time: the answer or None)
CACHES: dict[str, tuple[Callable[[Store, Any], None], Callable[[Store, Any], Any]]] = {
    "citation list page": (
        lambda s, at: s.save_citation_page("P1", "references", LIST, at),
        lambda s, now: s.citation_page("P1", "references", "CJFDREF", 1, now),
    ),
    "citation counts": (
        lambda s, at: s.save_citation_metrics("P1", {"references": 3}, at),
        lambda s, now: s.citation_metrics("P1", now),
    ),
    "journal page": (_journal, lambda s, now: s.journal_quality("计算机学报", now)),
}


@pytest.mark.parametrize("cache", list(CACHES))
def test_a_cache_row_kept_while_the_clock_was_ahead_is_stale_once_it_is_put_right(
    store: Store, clock: FakeClock, cache: str
) -> None:
    keep, read = CACHES[cache]
    now = clock.now()
    keep(store, now)
    assert read(store, now) is not None  # kept now: answered
    keep(store, now + AHEAD)
    assert read(store, now) is None


def test_an_abstract_read_while_the_clock_was_ahead_is_not_read_once_it_is_put_right(store: Store, clock: FakeClock) -> None:
    now = clock.now()
    paper = store.upsert_from_detail(sample_detail(), URL, now + AHEAD)
    assert not read_in_full(paper, now)
    assert read_in_full(paper, now + AHEAD)


RETYPED = {  # table, JSON path, a value of another type
    "citation list page": ("citation_pages", "$.items[0].title", "[1]"),
    "citation counts": ("citation_metrics", "$.references", '{"n": 3}'),
    "journal page": ("journals", "$.tiers", "7"),
}


@pytest.mark.parametrize("row", list(RETYPED))
def test_a_cache_row_this_release_cannot_read_is_a_miss(store: Store, clock: FakeClock, row: str) -> None:
    keep, read = CACHES[row]
    keep(store, clock.now())
    _retype(store, *RETYPED[row])
    assert read(store, clock.now()) is None


@pytest.mark.parametrize("case", ["this release cannot read it", "kept while the clock was ahead"])
async def test_get_metadata_reads_the_detail_page_again_over_such_a_stored_one(clock: FakeClock, store: Store, case: str) -> None:
    backend = CorpusBackend()
    title = next(r.title for r in backend.corpus.records if r.type == "期刊" and not r.online_first)
    ahead = FakeClock(wall=clock.now() + AHEAD) if case != "this release cannot read it" else clock
    first = await run_metadata(ahead, ResearchPipeline(backend, store, ahead, now_year=lambda: 2026),
                               MetadataInput(titles=[title], fields=["funds"]))  # fmt: skip
    ref = first.result["records"][0]["record_ref"]
    if case == "this release cannot read it":
        _retype(store, "details", "$.title", "[1]")
        assert _pdf_offered(store, ref) is None  # download_paper's hint: not known, not an error
    backend.requests.clear()
    again = await run_metadata(clock, ResearchPipeline(backend, store, clock, now_year=lambda: 2026),
                               MetadataInput(record_refs=[ref], fields=["funds"]))  # fmt: skip
    assert again.status == "completed", again.errors
    assert backend.requests == Counter({"detail": 1})
    assert store.detail_page(ref) is not None and store.detail_page(ref).observed_at == clock.now()


async def test_a_cached_search_whose_summary_this_release_cannot_read_is_searched_again(
    clock: FakeClock, store: Store
) -> None:
    pipe = make(clock, store, SimSite(clock))
    await run_search(clock, pipe, search_input())
    assert pipe.cached(search_input(), PLAN) is not None
    with store._write() as conn:
        conn.execute("""UPDATE searches SET summary = json_set(summary, '$.results', 'x') WHERE summary IS NOT NULL""")
    assert pipe.cached(search_input(), PLAN) is None


def test_a_kept_citation_entry_this_release_cannot_read_is_no_entry(store: Store, clock: FakeClock) -> None:
    # get_references / get_citing / citation_graph look entries up by key and by detail token: an
    # entry written by another release with a value of another type was an uncoded internal error
    item = CitationItem(title="甲", filename="A1", detail_url=URL)
    store.save_citation_node(item, clock.now())
    assert store.citation_node(item.key) == item
    _retype(store, "citation_nodes", "$.title", "[1]")
    assert store.citation_node(item.key) is None
    assert store.citation_nodes_by_detail_token("TOKEN1") == []
