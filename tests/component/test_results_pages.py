"""search_results and a search's scopes read page by page: each page reads its own evidence rows
(looked up by key, the eligible scope counted in SQL), not every row of the search again, so a
walk through a large search is linear, and the pages put together are the scope in rank order."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.pipeline.models import ResultsInput
from cnki_mcp.pipeline.results import read_results
from cnki_mcp.site.backend import SiteBackend
from cnki_mcp.store import SearchEvidence, Store
from cnki_mcp.store import searches as store_searches

T0 = datetime(2026, 1, 1, tzinfo=UTC)
N = 40


@pytest.mark.parametrize("scope", ["candidates", "eligible"])
def test_a_walk_through_a_search_reads_each_evidence_row_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    clock = FakeClock(wall=T0)
    with Store.open(tmp_path / "data", clock) as store:
        rows = [GridRow(title=f"违约金酌减规则研究{i}", authors=["王明"], source="法学研究", year=2020, doc_type="期刊",
                        native=NativeId(dbname="CJFDLAST", filename=f"FXYJ{i:04d}"),
                        detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v={i}") for i in range(N)]  # fmt: skip
        refs = [p.record_ref for p in store.upsert_from_grid(rows, T0)]
        # every third paper not eligible; one row says nothing (eligible, as before)
        store.save_evidence("op_s", [
            SearchEvidence(r, rank=k + 1, evidence={} if k == 1 else {"eligible": k % 3 != 0}, selected=k < 5)
            for k, r in enumerate(refs)
        ])  # fmt: skip
        store.save_search("op_s", "违约金", {}, "fp", "completed", T0)
        decoded: list[str] = []
        real = store_searches._evidence

        def counted(row: tuple[Any, ...]) -> SearchEvidence:
            decoded.append(row[0])
            return real(row)

        monkeypatch.setattr(store_searches, "_evidence", counted)
        enricher = Enricher(cast(SiteBackend, None), store, clock)
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = read_results(store, enricher, ResultsInput(search_id="op_s", scope=scope, offset=offset, limit=5))  # type: ignore[arg-type]
            seen += [r["record_ref"] for r in page.results]
            offset = page.next_offset
    wanted = refs if scope == "candidates" else [r for k, r in enumerate(refs) if k == 1 or k % 3 != 0]
    assert seen == wanted and page.total == len(wanted)
    assert len(decoded) <= 2 * N  # each page's rows (and their evidence), not the whole search per page
