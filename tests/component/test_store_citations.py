"""Citation tables (store/citations.py): the migration from a schema-3 store, pages and counts
kept with their TTL, the entries a list named."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from cnki_mcp.clock import FakeClock
from cnki_mcp.parse.citations import CitationItem, CitationListPage
from cnki_mcp.store import Store
from cnki_mcp.store.citations import CITATION_TTL
from cnki_mcp.store.db import _V_CITATIONS, MIGRATIONS, SCHEMA_VERSION


def _schema3_store(data: Path, clock: FakeClock) -> None:
    """A store as the release before wrote it: the steps before the citation tables."""
    with Store.open(data, clock):
        pass
    conn = sqlite3.connect(data / "cnki.sqlite3")
    for table in ("citation_pages", "citation_metrics", "citation_nodes"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_V_CITATIONS)}")
    conn.commit()
    conn.close()


def test_a_schema_3_store_gains_the_citation_tables(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    _schema3_store(data, clock)
    page = CitationListPage(type_code="CJFDREF", total=11, start=1, items=[
        CitationItem(title="甲", filename="A1", detail_url="https://kns.cnki.net/kcms2/article/abstract?v=1")])  # fmt: skip
    with Store.open(data, clock) as store:
        version = store._conn.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION
        store.save_citation_page("P1", "references", page, clock.now())
        assert store.citation_page("P1", "references", "CJFDREF", 1, clock.now()) == page
        assert store.citation_node("A1") is not None and store.citation_node("A1").title == "甲"


def test_pages_and_counts_expire_after_the_ttl(store: Store, clock: FakeClock) -> None:
    page = CitationListPage(type_code="CDFDREF", total=0, start=1)
    store.save_citation_page("P1", "citations", page, clock.now())
    store.save_citation_metrics("P1", {"references": 3, "citations": 0}, clock.now())
    assert store.citation_page("P1", "citations", "CDFDREF", 11, clock.now()) is None  # another page
    assert store.citation_metrics("P1", clock.now()) == {"references": 3, "citations": 0}
    later = clock.now() + CITATION_TTL + timedelta(seconds=1)
    assert store.citation_page("P1", "citations", "CDFDREF", 1, later) is None
    assert store.citation_metrics("P1", later) is None
