"""The BibTeX keys of a search's scope exported page by page are made once per scope and made
again after a paper is written (its details read between two pages change its key), not after
other writes (a search or a PDF read running beside the export)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.server import tools_cite
from cnki_mcp.store import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def grid(i: int, author: str) -> GridRow:
    return GridRow(title=f"违约金酌减规则研究{i}", authors=[author], source="法学研究", year=2020, doc_type="期刊",
                   native=NativeId(dbname="CJFDLAST", filename=f"FXYJ{i:04d}"),
                   detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v={i}")  # fmt: skip


def test_scope_keys_are_made_once_and_again_after_a_write(tmp_path: Path, cite_sources_made: list[str]) -> None:
    made = cite_sources_made
    with Store.open(tmp_path / "data", FakeClock(wall=T0)) as store:
        refs = [p.record_ref for p in store.upsert_from_grid([grid(i, "王明") for i in range(3)], T0)]
        first = tools_cite.scope_keys(store, refs)
        assert tools_cite.scope_keys(store, refs) == first and len(made) == 3
        assert tools_cite.scope_keys(store, refs[:2]) != first and len(made) == 5  # another scope
        store.save_search("op_s", "违约金", {}, "fp", "completed", T0)  # a write that changes no paper
        assert tools_cite.scope_keys(store, refs[:2]) and len(made) == 5
        store.upsert_from_grid([grid(0, "李华")], T0)  # the first paper's author read again
        again = tools_cite.scope_keys(store, refs)
        assert again[refs[0]].startswith("li") and first[refs[0]].startswith("wang")


def test_scope_keys_read_the_papers_a_part_at_a_time_and_match_the_one_call_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cnki_mcp.cite.model import to_records
    from cnki_mcp.cite.sources import cite_source
    from cnki_mcp.cite.tagged import scope_key_map

    monkeypatch.setattr(tools_cite, "KEYS_READ", 2)
    with Store.open(tmp_path / "data", FakeClock(wall=T0)) as store:
        # the same author, year and first title word: suffixed keys across the parts
        refs = [p.record_ref for p in store.upsert_from_grid([grid(i, "王明") for i in range(5)], T0)]
        read: list[int] = []
        real = store.papers_by_refs

        def counted(wanted: Any) -> Any:
            wanted = list(wanted)
            read.append(len(wanted))
            return real(wanted)

        monkeypatch.setattr(store, "papers_by_refs", counted)
        keys = tools_cite.scope_keys(store, [*refs, refs[0]])  # a paper listed twice counts once
        assert max(read) <= 2
        whole = scope_key_map(to_records(cite_source(p) for p in real(refs).values()))
    assert keys == whole and len(set(keys.values())) == 5
