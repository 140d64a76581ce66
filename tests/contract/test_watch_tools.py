"""export_search_log, watch_search and check_updates through the SDK's in-memory client: results
validate against the published output schemas, the three formats carry the same flow, an unknown
search is SEARCH_NOT_FOUND, and a check of a watch whose site is down ends partial with its code."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.models import GridPage, GridRow, NativeId
from cnki_mcp.pipeline.models import CoverageEntry, PlanView, SearchSummary
from cnki_mcp.server.app import build_server
from cnki_mcp.store import SearchEvidence
from tests.contract.server_fakes import Harness

SUBJECT = {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [
    {"Key": "mcp", "Title": "", "Logic": 0, "ChildItems": [], "Items": [
        {"Key": "mcp", "Title": "subject", "Logic": 0, "Field": "SU", "Operator": "TOPRANK", "Value": "违约金",
         "Value2": "", "options": {}}]}]}  # fmt: skip


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data", inline_wait=5.0)


def seed(h: Harness) -> str:
    """A finished search in the store: 3 rows on one page, 2 distinct papers, 1 selected."""
    assert h.services is not None
    store, now = h.services.store, h.services.clock.now()
    summary = SearchSummary(
        search_id="op_seed",
        status="completed",
        candidate_count=2,
        selected_count=1,
        coverage=[CoverageEntry(channel="q1", field="subject", pages=1, rows=3, total=3, exhausted=True)],
        plan=PlanView(method="explicit", concepts=[["违约金"]]),
    )
    params = {"query": "违约金", "mode": "precise", "metadata": "basic", "sort": "relevance", "max_pages": 1}
    store.log_search_page("op_seed", "q1", 0, 1, {"subject": SUBJECT}, observed_at=now, rows=3, kept=3, total=3, merged=True)
    store.save_evidence("op_seed", [
        SearchEvidence("rec_a", rank=1, selected=True), SearchEvidence("rec_b", rank=2, exclusion="ranking_or_quality_threshold"),
    ])  # fmt: skip
    store.save_search("op_seed", "违约金", params, "fp", "completed", now, summary=summary.model_dump(mode="json"))
    return "op_seed"


async def test_log_and_watch_results_fit_their_published_schemas(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        search_id = seed(h)
        flows = []
        for fmt in ("markdown", "csv", "json"):
            result = await client.call_tool("export_search_log", {"search_id": search_id, "format": fmt})
            assert not result.is_error, result.content
            jsonschema.validate(result.structured_content, schemas["export_search_log"])
            flows.append(result.structured_content["prisma"])
        watch = await client.call_tool("watch_search", {"search_id": search_id})
        assert not watch.is_error, watch.content
        jsonschema.validate(watch.structured_content, schemas["watch_search"])
        missing = await client.call_tool("export_search_log", {"search_id": "op_missing"})
        jsonschema.validate(missing.structured_content, schemas["export_search_log"])

        async def down(request: Any, op: Any = None) -> Any:
            op.charge()
            raise SiteUnavailable(reason="test")

        h.backend.grid = down  # type: ignore[method-assign]
        checked = await client.call_tool("check_updates", {"watch_id": watch.structured_content["watch_id"]})
        jsonschema.validate(checked.structured_content, schemas["check_updates"])
    assert flows[0] == flows[1] == flows[2]
    assert flows[0] == {"identified": 3, "outside_years": 0, "duplicates": 1, "screened": 2, "excluded": 1,
                        "excluded_by_reason": {"ranking_or_quality_threshold": 1}, "selected": 1, "page_log": True}  # fmt: skip
    assert watch.structured_content["known"] == 2
    assert missing.is_error and missing.structured_content["code"] == "SEARCH_NOT_FOUND"
    assert checked.structured_content["status"] == "partial"
    assert checked.structured_content["errors"][0]["code"] == "SITE_UNAVAILABLE"
    assert checked.structured_content["result"]["unchecked"] == [watch.structured_content["watch_id"]]


async def test_watching_or_logging_a_search_that_has_not_finished_says_how_to_finish_it(tmp_path: Path) -> None:
    """A running search has no saved results yet: SEARCH_NOT_FOUND with the operation's status and
    the call that finishes it (as search_results does), not the "kept 300 searches" answer."""
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    h.pipeline.no_saved_results = True
    async with Client(build_server(h.open)) as client:
        op_id = (await client.call_tool("search", {"query": "x"})).structured_content["operation_id"]
        for tool in ("watch_search", "export_search_log"):
            running = await client.call_tool(tool, {"search_id": op_id})
            assert running.is_error
            error = running.structured_content
            assert error["code"] == "SEARCH_NOT_FOUND" and error["details"]["operation_status"] == "running"
            assert error["details"]["next_step"].startswith("operation_status(")
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        stopped = (await client.call_tool("watch_search", {"search_id": op_id})).structured_content
        assert stopped["details"]["next_step"] == f"operation_control(action='continue', operation_id='{op_id}')"


async def test_continue_of_a_stopped_watch_batch_names_the_check_that_goes_on(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        watch_id = (await client.call_tool("watch_search", {"search_id": seed(h)})).structured_content["watch_id"]

        async def down(request: Any, op: Any = None) -> Any:
            op.charge()
            raise SiteUnavailable(reason="test")

        h.backend.grid = down  # type: ignore[method-assign]
        checked = (await client.call_tool("check_updates", {"watch_id": "all"})).structured_content
        assert checked["status"] == "partial" and checked["result"]["unchecked"] == [watch_id]
        assert checked["next_step"] == f"check_updates(watch_id='{watch_id}')"
        refused = await client.call_tool("operation_control", {"action": "continue", "operation_id": checked["operation_id"]})
        assert refused.is_error
        error = refused.structured_content
        assert error["code"] == "CONTINUE_UNAVAILABLE"
        assert error["details"]["next_step"] == f"check_updates(watch_id='{watch_id}')"


async def test_a_removed_watch_is_no_longer_checked(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        search_id = seed(h)
        watch_id = (await client.call_tool("watch_search", {"search_id": search_id})).structured_content["watch_id"]
        removed = await client.call_tool("watch_search", {"search_id": search_id, "remove": True})
        assert not removed.is_error, removed.content
        jsonschema.validate(removed.structured_content, schemas["watch_search"])
        assert removed.structured_content["watch_id"] == watch_id and removed.structured_content["removed"]
        one = await client.call_tool("check_updates", {"watch_id": watch_id})
        assert one.is_error and one.structured_content["code"] == "INVALID_ARGUMENT"
        every = (await client.call_tool("check_updates", {"watch_id": "all"})).structured_content
        assert every["status"] == "completed" and every["result"]["checks"] == [] and every["requests"] == 0
        assert "watch_search" in (every["next_step"] or "")  # nothing is watched: how to start
        again = await client.call_tool("watch_search", {"search_id": search_id, "remove": True})
        assert again.is_error and again.structured_content["code"] == "INVALID_ARGUMENT"
        fresh = (await client.call_tool("watch_search", {"search_id": search_id})).structured_content
        assert fresh["watch_id"] != watch_id and fresh["checks"] == 0  # watching again starts anew


def list_one_new_record(h: Harness, filename: str) -> GridRow:
    """From now on every grid page the watches ask lists one journal record of today (the Harness
    runs on the system clock; the seeded search is today's)."""
    today = datetime.now(UTC).date()
    row = GridRow(ordinal=1, title="约定违约金的新近观察", date=today.isoformat(), year=today.year, doc_type="期刊",
                  native=NativeId(dbname="CJFD2026", filename=filename))  # fmt: skip

    async def listing(request: Any, op: Any = None) -> Any:
        op.charge()
        return GridPage(rows=[row], total=1, page=1, page_count=1)

    h.backend.grid = listing  # type: ignore[method-assign]
    return row


async def test_list_watches_shows_what_earlier_checks_reported(h: Harness) -> None:
    """A check's new records are known from then on (the next check does not repeat them), so a
    check made elsewhere (cron, an earlier session) is seen again only through its stored report."""
    async with Client(build_server(h.open)) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        watch_id = (await client.call_tool("watch_search", {"search_id": seed(h)})).structured_content["watch_id"]
        empty = (await client.call_tool("list_watches", {})).structured_content
        jsonschema.validate(empty, schemas["list_watches"])
        assert [(w["watch_id"], w["checks"], w["recent_checks"]) for w in empty["watches"]] == [(watch_id, 0, [])]

        list_one_new_record(h, "NEW0001")
        for _ in range(2):
            done = (await client.call_tool("check_updates", {"watch_id": "all"})).structured_content
            assert done["status"] == "completed"
        assert done["result"]["checks"][0]["new_count"] == 0  # reported once, by the first check
        listed = (await client.call_tool("list_watches", {"watch_id": watch_id, "checks": 5})).structured_content
        jsonschema.validate(listed, schemas["list_watches"])
        [entry] = listed["watches"]
        assert entry["checks"] == 2 and [c["new_count"] for c in entry["recent_checks"]] == [0, 1]
        assert [n["title"] for n in entry["recent_checks"][1]["new"]] == ["约定违约金的新近观察"]
        unknown = await client.call_tool("list_watches", {"watch_id": "wat_missing"})
        assert unknown.is_error and unknown.structured_content["code"] == "INVALID_ARGUMENT"


async def test_a_second_check_while_one_runs_is_busy_and_names_the_running_one(tmp_path: Path) -> None:
    """Two batches at once would ask CNKI for the same pages twice and report the same new records
    in both operations."""
    h = Harness(tmp_path / "data", inline_wait=0.05)
    release = asyncio.Event()

    async def slow(request: Any, op: Any = None) -> Any:
        op.charge()
        await release.wait()
        row = GridRow(ordinal=1, title="违约金", native=NativeId(dbname="CJFD2020", filename="OLD0001"))
        return GridPage(rows=[row], total=1, page=1, page_count=1)

    async with Client(build_server(h.open)) as client:
        watch_id = (await client.call_tool("watch_search", {"search_id": seed(h)})).structured_content["watch_id"]
        h.backend.grid = slow  # type: ignore[method-assign]
        first = (await client.call_tool("check_updates", {"watch_id": "all"})).structured_content
        assert first["status"] == "running"
        again = await client.call_tool("check_updates", {"watch_id": watch_id})
        assert again.is_error and again.structured_content["code"] == "OPERATION_BUSY"
        assert again.structured_content["details"]["operation_id"] == first["operation_id"]
        release.set()
        done = (await client.call_tool("operation_status", {"operation_id": first["operation_id"], "wait_seconds": 10})).structured_content
        assert done["status"] != "running"
        after = await client.call_tool("check_updates", {"watch_id": watch_id})
        assert not after.is_error


async def test_a_watch_is_also_found_by_the_search_id_it_watches(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        search_id = seed(h)
        unwatched = await client.call_tool("check_updates", {"watch_id": search_id})
        assert unwatched.is_error and unwatched.structured_content["code"] == "INVALID_ARGUMENT"
        watch_id = (await client.call_tool("watch_search", {"search_id": search_id})).structured_content["watch_id"]
        listed = (await client.call_tool("list_watches", {"watch_id": search_id})).structured_content
        assert [w["watch_id"] for w in listed["watches"]] == [watch_id]

        list_one_new_record(h, "NEW0002")
        checked = (await client.call_tool("check_updates", {"watch_id": search_id})).structured_content
        assert checked["status"] == "completed", checked
        assert [c["watch_id"] for c in checked["result"]["checks"]] == [watch_id]
