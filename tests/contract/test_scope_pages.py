"""get_metadata and export_citations read one page (offset/limit) of a saved search's scope: the
result says how many the scope holds and where the next page starts, and next_step names the call,
so a client following it reads the whole scope once (the real pipeline on the corpus backend)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.pipeline import metadata
from cnki_mcp.pipeline.models import MAX_OFFSET
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from tests.contract.server_fakes import Harness, completed_data
from tests.corpus_backend import CorpusBackend

QUESTION = {
    "query": "自动驾驶汽车产品责任的归责原则",
    "concept_groups": [["自动驾驶", "无人驾驶", "智能网联汽车"], ["产品责任", "归责原则", "侵权责任"]],
}


@asynccontextmanager
async def _searched(tmp_path: Path, question: dict[str, Any] = QUESTION) -> AsyncIterator[tuple[Client, str, int]]:
    """A server on the corpus backend with `question` searched: (client, search_id, candidates)."""
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    async with Client(build_server(lambda: Services.open(settings, backend=CorpusBackend()))) as client:
        search = await completed_data(client, "search", question)
        yield client, search["result"]["search_id"], search["result"]["candidate_count"]



async def test_a_scope_read_page_by_page_says_its_total_and_the_next_offset(tmp_path: Path) -> None:
    async with _searched(tmp_path) as (client, search_id, total):
        assert total > 3
        for tool, extra in (("get_metadata", {"local_only": True, "fields": ["year"]}), ("export_citations", {})):
            seen: list[str] = []
            offset: int | None = 0
            while offset is not None:
                args = {"search_id": search_id, "scope": "candidates", "offset": offset, "limit": 3, **extra}
                data = await completed_data(client, tool, args)
                page = data["result"]
                assert page["total"] == total, tool
                seen += [r["record_ref"] for r in page["records"]] if tool == "get_metadata" else ["x"] * page["count"]
                offset = page["next_offset"]
                if offset is not None:
                    assert offset == args["offset"] + 3
                    assert f"offset={offset}" in data["next_step"] and tool in data["next_step"], data["next_step"]
            assert len(seen) == total, tool
            if tool == "get_metadata":
                assert len(set(seen)) == total


async def test_a_page_of_full_records_stops_at_the_size_a_client_reads_and_says_where_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bundled corpus's rows are short: a smaller budget makes its pages reach it
    monkeypatch.setattr(metadata, "PAGE_TOKENS", 3_000)

    async with _searched(tmp_path) as (client, search_id, total):
        seen: list[str] = []
        cut = 0
        offset: int | None = 0
        while offset is not None:
            args = {"search_id": search_id, "scope": "candidates", "view": "records", "offset": offset, "limit": 100}
            result = await client.call_tool("search_results", args)
            assert not result.is_error, result.content
            page = result.structured_content
            assert isinstance(page, dict) and page["total"] == total
            assert metadata.approx_tokens(page) <= metadata.PAGE_TOKENS + 500  # the rows' budget and the page's own fields
            seen += [r["record"]["record_ref"] for r in page["results"]]
            if len(page["results"]) < min(100, total - offset):
                cut += 1
                assert page["next_offset"] == offset + len(page["results"])
                assert f"offset={page['next_offset']}" in page["message"]
            else:
                assert page.get("message") is None
            offset = page["next_offset"]
        assert cut and len(seen) == total == len(set(seen))


async def test_get_metadata_of_a_search_reads_20_full_records_by_default_and_names_the_next_page(tmp_path: Path) -> None:
    # 50 full records measured ~55,000 characters (~24k tokens; ~48k with quality): the default
    # page is the size get_references and search_library answer
    async with _searched(tmp_path) as (client, search_id, total):
        assert total > 20
        args = {"search_id": search_id, "scope": "candidates", "local_only": True}
        data = await completed_data(client, "get_metadata", args)
        assert len(data["result"]["records"]) == 20 and data["result"]["next_offset"] == 20


async def test_a_search_listing_fewer_than_it_selected_names_the_page_with_the_rest(tmp_path: Path) -> None:
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    async with Client(build_server(lambda: Services.open(settings, backend=CorpusBackend()))) as client:
        for source in ("live", "cache"):  # the second identical call is answered from the cache
            data = await completed_data(client, "search", {**QUESTION, "limit": 3})
            summary = data["result"]
            assert summary["source"] == source and summary["selected_count"] > 3
            search_id = summary["search_id"]
            assert f"search_results(search_id='{search_id}', offset=3)" in data["next_step"], data["next_step"]
            rest = (await client.call_tool("search_results", {"search_id": search_id, "offset": 3})).structured_content
            assert isinstance(rest, dict) and rest["total"] == summary["selected_count"]
            shown = [r["record_ref"] for r in summary["results"]]
            assert not set(shown) & {r["record_ref"] for r in rest["results"]}


async def test_a_search_selecting_none_of_the_relevant_papers_it_found_names_them(tmp_path: Path) -> None:
    # one relevant paper (a conference paper, below every selection threshold): the answer's list is
    # empty, and an empty list with no step read as "nothing found"
    question = {"query": "碳排放 STIRPAT", "concept_groups": [["碳排放"], ["STIRPAT"]], "year_from": 2018, "year_to": 2022}
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    async with Client(build_server(lambda: Services.open(settings, backend=CorpusBackend()))) as client:
        for source in ("live", "cache"):
            data = await completed_data(client, "search", question)
            summary = data["result"]
            assert summary["source"] == source and summary["results"] == []
            assert summary["selected_count"] == 0 and summary["eligible_count"] == 1
            step = f"search_results(search_id='{summary['search_id']}', scope='eligible'"
            assert data["next_step"] and step in data["next_step"], data["next_step"]
            args = {"search_id": summary["search_id"], "scope": "eligible", "view": "compact"}
            page = (await client.call_tool("search_results", args)).structured_content
            assert isinstance(page, dict) and page["total"] == 1 and page["results"][0]["eligible"]


async def test_a_search_answered_from_the_cache_names_the_step_the_live_answer_names(tmp_path: Path) -> None:
    # the cached answer said search_results(search_id=…) whatever the live one said: for a search
    # that found nothing (an empty page) or listed all it selected
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    nothing = {"query": "x", "concept_groups": [["联邦学习"], ["违约金"], ["碳达峰"]]}
    async with Client(build_server(lambda: Services.open(settings, backend=CorpusBackend()))) as client:
        for question in (nothing, {**QUESTION, "limit": 100}):
            steps = []
            for source in ("live", "cache"):
                data = await completed_data(client, "search", question)
                assert data["result"]["source"] == source
                assert len(data["result"]["results"]) == data["result"]["selected_count"]
                steps.append(data["next_step"])
            assert steps == [None, None], steps


async def test_a_page_of_a_searchs_full_records_stops_at_the_size_a_client_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metadata, "PAGE_TOKENS", 3_000)  # the bundled corpus's records are short
    async with _searched(tmp_path) as (client, search_id, total):
        seen: list[str] = []
        cut = 0
        offset: int | None = 0
        while offset is not None:
            args = {"search_id": search_id, "scope": "candidates", "offset": offset, "limit": 100, "local_only": True}
            data = await completed_data(client, "get_metadata", args)
            page = data["result"]
            assert page["total"] == total
            assert metadata.approx_tokens(page["records"]) <= 3_000 + 1_000  # at most the record that reached it
            seen += [r["record_ref"] for r in page["records"]]
            if page["next_offset"] is not None and len(page["records"]) < min(100, total - offset):
                cut += 1
                assert page["next_offset"] == offset + len(page["records"])
                assert f"offset={page['next_offset']}" in page["warnings"][0]
            offset = page["next_offset"]
        assert cut and len(seen) == total == len(set(seen))


async def test_an_export_saved_page_by_page_is_told_to_name_another_file(tmp_path: Path) -> None:
    """Exports never overwrite: the next page's call with the same filename is FILE_EXISTS, so the
    advice for a saved page must ask for another one (following it reads the whole scope)."""
    async with _searched(tmp_path) as (client, search_id, total):
        args = {"search_id": search_id, "scope": "candidates", "offset": 0, "limit": 3, "filename": "refs-0"}
        first = await completed_data(client, "export_citations", args)
        assert first["result"]["next_offset"] == 3 and "filename" in first["next_step"], first["next_step"]
        same = await client.call_tool("export_citations", {**args, "offset": 3})
        assert same.is_error and same.structured_content["code"] == "FILE_EXISTS"
        count, offset = first["result"]["count"], first["result"]["next_offset"]
        while offset is not None:
            page = await completed_data(client, "export_citations", {**args, "offset": offset, "filename": f"refs-{offset}"})
            count, offset = count + page["result"]["count"], page["result"]["next_offset"]
        assert count == total


def test_a_page_stopped_by_an_error_is_finished_by_the_same_call_not_skipped() -> None:
    """A get_metadata page stopped by the budget (or the site, or a cancel) reports next_offset as
    the page's end: advising that offset skipped the records whose details were never read."""
    from datetime import UTC, datetime

    from cnki_mcp.errors import BudgetExhausted
    from cnki_mcp.jobs import OperationKind
    from cnki_mcp.operations import BudgetSpec, OperationErrorInfo, OperationRecord, OperationStatus
    from cnki_mcp.server.models import OperationView

    when = datetime(2026, 12, 6, tzinfo=UTC)
    page = {"records": [], "total": 40, "next_offset": 20}
    record = OperationRecord(
        operation_id="op_" + "m" * 24, kind=OperationKind.METADATA, status=OperationStatus.PARTIAL,
        budget=BudgetSpec(max_requests=10, timeout_seconds=60), created_at=when, updated_at=when,
        result=page, errors=[OperationErrorInfo.of(BudgetExhausted(limit="requests"))],
    )  # fmt: skip
    record.final_error = True
    stopped = OperationView.of(record).next_step or ""
    assert "offset=20" not in stopped and "get_metadata" in stopped
    record.final_error, record.errors, record.status = False, [], OperationStatus.COMPLETED
    assert "offset=20" in (OperationView.of(record).next_step or "")


async def test_bibtex_exported_page_by_page_keeps_the_keys_of_the_whole_export(tmp_path: Path) -> None:
    """The pages of a search's scope put together are one .bib: a key two papers share gets its a, b
    suffixes over the whole scope, not per page (each page gave both the bare key: duplicates)."""
    import bibtexparser

    # two of its papers are 何… 2021 基于…: both he2021jiyu bare, he2021jiyua / he2021jiyub in one export
    question = {"query": "数字文物的开放共享与语义组织", "concept_groups": [["数字文物"]]}
    async with _searched(tmp_path, question) as (client, search_id, total):
        base = {"search_id": search_id, "scope": "candidates", "format": "bibtex"}
        whole = await completed_data(client, "export_citations", {**base, "limit": 1000})
        keys = [e.key for e in bibtexparser.parse_string(whole["result"]["text"]).entries]
        assert len(keys) == total == len(set(keys))
        assert {"he2021jiyua", "he2021jiyub"} <= set(keys)
        parts: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await completed_data(client, "export_citations", {**base, "offset": offset, "limit": 1})
            parts += [e.key for e in bibtexparser.parse_string(page["result"]["text"]).entries]
            offset = page["result"]["next_offset"]
        assert parts == keys


async def test_bibtex_pages_of_a_scope_read_the_scope_once_not_once_per_page(
    tmp_path: Path, cite_sources_made: list[str]
) -> None:
    """Each page made the keys of the whole scope again: 20,000 candidates exported in pages cost
    6 s of CPU a page, and paging through them read the scope once per page (quadratic)."""
    made = cite_sources_made
    async with _searched(tmp_path) as (client, search_id, total):
        base = {"search_id": search_id, "scope": "candidates", "format": "bibtex", "limit": 2}
        offset: int | None = 0
        pages = 0
        while offset is not None:
            page = await completed_data(client, "export_citations", {**base, "offset": offset})
            offset, pages = page["result"]["next_offset"], pages + 1
    assert pages > 3
    assert len(made) <= 2 * total  # the scope once, each page's own papers once


async def test_an_offset_beyond_any_page_is_refused_by_every_paged_local_tool(tmp_path: Path) -> None:
    """An offset of 2**63 was an INTERNAL OverflowError (SQLite's integers are 64-bit) in each of
    these; now it is INVALID_ARGUMENT naming offset, and the largest offset taken is answered."""
    async with _searched(tmp_path) as (client, search_id, _total):
        calls = {
            "search_results": {"search_id": search_id},
            "get_metadata": {"search_id": search_id, "local_only": True},
            "export_citations": {"search_id": search_id},
            "search_library": {"query": "自动驾驶"},
        }
        for tool, args in calls.items():
            for offset in (2**63, 2**64):
                result = await client.call_tool(tool, {**args, "offset": offset})
                assert result.is_error, (tool, offset)
                error = result.structured_content
                assert isinstance(error, dict) and error["code"] == "INVALID_ARGUMENT", (tool, error)
                assert [e["field"] for e in error["details"]["errors"]] == ["offset"], (tool, error)
            result = await client.call_tool(tool, {**args, "offset": MAX_OFFSET})
            assert not result.is_error, (tool, result.content)
