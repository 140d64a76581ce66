"""search_library through the SDK's in-memory Client: the store filled through the production
Store (grid rows, a detail page, a full text), results validated against the advertised output
schema, paging, filters, coded errors, and no browser or CNKI request."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.server.app import build_server
from tests.contract.server_fakes import Harness
from tests.paper_samples import sample_detail

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data", inline_wait=5.0)


def _fill(h: Harness) -> list[str]:
    assert h.services is not None
    store = h.services.store
    rows = [
        GridRow(title=f"违约金酌减规则研究之{i}", authors=["王明"], source="法学研究", year=2010 + i, doc_type="期刊",
                native=NativeId(dbname="CJFDLAST", filename=f"FXYJ{i:04d}"),
                detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v={i}")
        for i in range(5)
    ]  # fmt: skip
    papers = store.upsert_from_grid(rows, T0)
    store.upsert_from_detail(
        sample_detail(title=rows[0].title, authors=[], source="法学研究", year=2010, doi=None,
                      native=NativeId(dbcode="CJFD", filename="FXYJ0000"), abstract="比较法视野下的损失填补原则"),
        None, T0, expected_ref=papers[0].record_ref,
    )  # fmt: skip
    store.save_fulltext(papers[1].record_ref, "html", "第三章 情势变更与不可抗力的区分", T0)
    return [p.record_ref for p in papers]


async def test_search_library_pages_filters_and_matches_its_output_schema(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["search_library"].output_schema
        assert schema is not None
        refs = _fill(h)

        async def call(args: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool("search_library", args)
            assert not result.is_error, result.content
            data = result.structured_content
            assert data is not None
            jsonschema.validate(data, schema)
            return data

        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await call({"query": "违约金", "limit": 2, "offset": offset})
            assert page["total"] == 5 and len(page["results"]) <= 2
            seen += [r["record_ref"] for r in page["results"]]
            offset = page["next_offset"]
        assert sorted(seen) == sorted(refs)
        hit = (await call({"query": "损失填补"}))["results"]
        assert [r["record_ref"] for r in hit] == [refs[0]] and hit[0]["matched_fields"] == ["abstract"]
        assert "【损失填补】" in hit[0]["snippet"]
        text = (await call({"query": "情势变更 不可抗力"}))["results"]
        assert [r["record_ref"] for r in text] == [refs[1]] and text[0]["fulltext"] == ["html"]
        years = await call({"query": "违约金", "year_from": 2012, "year_to": 2013})
        assert sorted(r["year"] for r in years["results"]) == [2012, 2013]
        assert (await call({"query": "违约金", "document_types": ["博士"]}))["total"] == 0
        unknown = await client.call_tool("search_library", {"query": "违约金", "search_id": "sch_missing"})
        assert unknown.is_error and unknown.structured_content is not None
        assert unknown.structured_content["code"] == "SEARCH_NOT_FOUND"
        assert h.services is not None and h.services.host.started is False
        assert h.backend.calls == []


async def test_search_library_during_a_rebuild_after_an_upgrade_is_a_retryable_coded_error_with_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from cnki_mcp.store import Store, library_upkeep

    first = Harness(tmp_path / "data", inline_wait=5.0)
    first.open()
    refs = _fill(first)
    assert first.services is not None
    first.services.store.close()
    with sqlite3.connect(tmp_path / "data" / "cnki.sqlite3") as conn:  # what an upgrade leaves
        conn.execute("DELETE FROM library_meta WHERE key = 'analyzer'")
    monkeypatch.setattr(library_upkeep, "REBUILD_AT_OPEN", 2)  # 5 papers: a large library
    monkeypatch.setattr(Store, "start_upkeep", lambda self: None)  # the steps are taken below
    h = Harness(tmp_path / "data", inline_wait=5.0)
    async with Client(build_server(h.open)) as client:
        building = await client.call_tool("search_library", {"query": "酌减"})
        assert building.is_error
        data = building.structured_content
        assert data is not None and data["code"] == "LIBRARY_INDEX_BUILDING" and data["retryable"] is True
        assert data["details"] == {"indexed": 0, "papers": 5}
        assert h.services is not None
        while not h.services.store.index_step():
            pass
        found = await client.call_tool("search_library", {"query": "酌减"})
        assert not found.is_error and found.structured_content is not None
        assert sorted(r["record_ref"] for r in found.structured_content["results"]) == sorted(refs)


async def test_search_library_reads_off_the_event_loop(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading pending PDFs takes seconds each: on the event loop every other call waited for it."""
    import threading

    from cnki_mcp.server import tools_library

    threads: list[threading.Thread] = []
    real = tools_library.search_library

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(tools_library, "search_library", spy)
    async with Client(build_server(h.open)) as client:
        _fill(h)
        result = await client.call_tool("search_library", {"query": "违约金"})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["total"] == 5 and result.structured_content["pdfs_pending"] == 0
    assert threads and threads[0] is not threading.main_thread()
