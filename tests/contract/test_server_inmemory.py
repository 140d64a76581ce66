"""The MCP surface through the SDK's in-memory Client (2026 era, and legacy where it matters),
with a fake SiteBackend and a scripted pipeline injected through Services."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.types import CreateMessageResult, ErrorData, ImageContent, TextContent

from cnki_mcp.errors import ParserUnsupported
from cnki_mcp.jobs import StoreSink
from cnki_mcp.models import HeaderIdentity, IdentityKind
from cnki_mcp.operations import BudgetSpec, OperationKind, OperationRecord, OperationStatus
from cnki_mcp.server.app import TOOL_NAMES, build_server
from cnki_mcp.server.readonly import REFUSED_ARGUMENTS
from cnki_mcp.server.tools_session import validate_remote_access_url
from cnki_mcp.site.launch_error import sandbox_state
from tests.contract.server_fakes import Harness

READ_ONLY = {
    "search",
    "structured_search",
    "search_results",
    "search_library",
    "get_metadata",
    "read_online_html",
    "read_pdf_text",
    "link_references",
    "verify_references",
    "get_references",
    "get_citing",
    "find_citation_path",
    "session_status",
    "operation_status",
    "diagnostics",
    "export_search_log",
    "list_watches",
    "check_updates",
}


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data", inline_wait=5.0)


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    data = result.structured_content
    assert data is not None, result.content
    assert {"code", "message", "retryable", "details"} <= set(data)
    assert data["errors"][0]["code"] == data["code"]
    return data


async def test_lists_all_tools_with_annotations_and_read_only_hints(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.annotations is not None, name
        assert tool.output_schema is not None, name
        assert tool.description and len(tool.description) > 20, name
        assert bool(tool.annotations.read_only_hint) == (name in READ_ONLY), name
    # a tool that can write a file the person asked for is not read-only (a client may run
    # read-only tools without asking): exactly the tools whose arguments read-only mode refuses
    writers = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint is False}
    assert set(REFUSED_ARGUMENTS) <= writers and not set(REFUSED_ARGUMENTS) & READ_ONLY


BAD_ARGUMENTS: list[tuple[str, dict[str, Any]]] = [
    ("search", {}),
    ("search", {"query": ""}),
    ("search", {"query": "x", "limit": 0}),
    # an empty group is dropped (tool_coerce); seven terms in one group are over the limit
    ("search", {"query": "x", "concept_groups": [["a", "b", "c", "d", "e", "f", "g"]]}),
    ("search", {"query": "x", "year_from": 2024, "year_to": 2020}),
    ("search", {"query": "x", "options": {"max_pages": 0}}),
    ("structured_search", {"expression": {"op": "and", "items": [{"field": "title", "value": "a"}]}}),
    ("structured_search", {"expression": {"field": "nope", "value": "a"}}),
    # two different orders: before, the top-level one ran and the other was dropped without a word
    ("structured_search", {"expression": {"field": "title", "value": "a"}, "sort": "date_desc",
                           "options": {"sort": "cited_desc"}}),
    ("search_results", {"search_id": "s", "limit": 500}),
    ("search_results", {}),
    ("search_library", {}),
    ("search_library", {"query": "x", "limit": 0}),
    ("search_library", {"query": "，。"}),
    ("search_library", {"query": "x", "year_from": 2024, "year_to": 2020}),
    ("get_metadata", {}),
    ("get_metadata", {"record_refs": ["r"] * 101}),
    ("read_online_html", {}),
    ("download_paper", {"record_ref": "r", "format": "doc"}),
    ("read_pdf_text", {"path": "../../etc/passwd"}),
    ("export_citations", {}),
    ("link_references", {}),
    ("verify_references", {}),
    ("verify_references", {"text": "a", "references": ["b"]}),
    ("get_references", {}),
    ("get_references", {"paper": "r", "limit": 51}),
    ("get_citing", {"paper": "r", "types": ["patent"]}),
    ("citation_graph", {"seeds": []}),
    ("citation_graph", {"seeds": ["r"], "depth": 4}),
    ("find_citation_path", {"source": "a"}),
    ("login", {"remote_access_url": "http://vpn.example.edu/"}),
    ("login", {"remote_access_url": "https://user:pw@vpn.example.edu/"}),
    ("session_status", {"refresh": "maybe"}),
    ("operation_status", {"operation_id": "bad"}),
    ("operation_status", {"wait_seconds": 99}),
    ("operation_control", {"action": "explode"}),
    ("operation_control", {"action": "cancel"}),
    ("diagnostics", {"unexpected": {"x": 1}}),
    ("export_search_log", {}),
    ("export_search_log", {"search_id": "s", "format": "docx"}),
    ("watch_search", {"search_id": ""}),
    ("list_watches", {"checks": 11}),
    ("list_watches", {"watch_id": "wat_unknown"}),
    ("check_updates", {"pages": 0}),
    ("check_updates", {"watch_id": "wat_unknown"}),
]


async def test_bad_arguments_for_every_tool_are_coded_errors_and_start_no_browser(h: Harness) -> None:
    seen: set[str] = set()
    async with Client(build_server(h.open)) as client:
        for name, args in BAD_ARGUMENTS:
            result = await client.call_tool(name, args)
            data = _error(result)
            assert data["code"].startswith("INVALID_"), (name, args, data)
            seen.add(name)
        assert h.services is not None
        assert h.services.host.started is False
        assert h.backend.calls == []
    assert seen == set(TOOL_NAMES)


async def test_an_argument_the_tool_does_not_have_is_refused_before_anything_starts(h: Harness) -> None:
    """A misspelled name (year_form) was dropped by the SDK's argument model: the search ran with
    no year limit, search_results(ofset=…) gave the first page again. Now INVALID_ARGUMENT names
    it, the tool's arguments and the name probably meant, and nothing is started."""
    async with Client(build_server(h.open)) as client:
        data = _error(await client.call_tool("search", {"query": "违约金", "year_form": 2020}))
        assert data["code"] == "INVALID_ARGUMENT"
        assert data["details"]["unknown"] == ["year_form"]
        assert data["details"]["did_you_mean"] == {"year_form": "year_from"}
        assert "year_from" in data["details"]["allowed"] and "query" in data["details"]["allowed"]
        data = _error(await client.call_tool("search_results", {"search_id": "s", "ofset": 50}))
        assert data["details"]["did_you_mean"] == {"ofset": "offset"}
        data = _error(await client.call_tool("diagnostics", {"zzz_unknown": 1}))
        assert data["details"]["unknown"] == ["zzz_unknown"] and "did_you_mean" not in data["details"]
        good = await client.call_tool("diagnostics", {})
        assert not good.is_error
        assert h.services is not None and h.services.jobs.recent(5) == []
        assert h.backend.calls == []


async def test_login_rejects_plain_http_and_credentials_in_remote_access_url(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        for url in (
            "http://vpn.example.edu/login",
            "https://user:pw@vpn.example.edu/",
            "https://me@vpn.example.edu/",
            # hosts Chromium will not open, and control or invisible characters: the login tab
            # stayed about:blank and the operation waited for a person there
            "https://vpn example.edu/",
            "https://vpn.example.edu\x00.cnki.net/",
            "https://vpn.example.edu/\tlogin",
            "https://<vpn>/",
            "https://vpn.example.edu/\u202elogin",
        ):
            data = _error(await client.call_tool("login", {"remote_access_url": url}))
            assert data["code"] == "INVALID_ARGUMENT"
            assert data["details"]["field"] == "remote_access_url"
        assert h.backend.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "https://webvpn.pku.edu.cn/https/77726476706e69737468656265737421/",
        "https://知网.net/",
        "https://xn--cnki-9k0a.net/",
        "https://[::1]:8443/",
        "https://10.0.0.1/login page?entityID=https%3A%2F%2Ffsso.cnki.net#x",
        "https://intranet_vpn.example.edu/",
    ],
)
def test_remote_access_urls_a_browser_opens_are_taken(url: str) -> None:
    assert validate_remote_access_url(f"  {url} ") == url


async def test_diagnostics_is_local_and_never_starts_the_browser(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        result = await client.call_tool("diagnostics", {})
        assert not result.is_error
        data = result.structured_content
        assert data["version"]
        assert data["data_dir"] == str(h.settings.data_dir)
        assert data["browser"]["running"] is False
        # whether the browser runs inside Chromium's sandbox (as root it cannot): before the launch, what it will ask
        euid = os.geteuid() if hasattr(os, "geteuid") else None
        assert data["browser"]["sandbox"] == sandbox_state(sys.platform, euid, h.settings.browser_args)
        assert "max_inflight" in data["limiter"]
        # resident now, and the peak since start (which is never below it)
        assert 0 < data["memory_rss_bytes"] <= data["memory_peak_rss_bytes"]
        assert h.services is not None and h.services.host.started is False
    assert not (h.settings.data_dir / "browser").exists()


async def test_search_completes_inline_with_structured_content_matching_output_schema(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("search", {"query": "竞业限制 违约金", "limit": 5})
        assert not result.is_error, result.content
        data = result.structured_content
        jsonschema.validate(data, tools["search"].output_schema)
        assert data["status"] == "completed"
        assert data["operation_id"].startswith("op_")
        assert data["result"]["search_id"] == data["operation_id"]
        assert len(data["result"]["results"]) == 5
        assert json.loads(result.content[0].text)["status"] == "completed"


async def test_long_search_returns_operation_id_then_operation_status_long_polls_to_completion(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        first = (await client.call_tool("search", {"query": "初中物理 分层作业"})).structured_content
        assert first["status"] == "running"
        op_id = first["operation_id"]
        assert first["next_step"].startswith("operation_status")
        idle_check = (await client.call_tool("operation_status", {})).structured_content
        assert idle_check["operation_id"] == op_id
        h.pipeline.release.set()
        done = (
            await client.call_tool("operation_status", {"operation_id": op_id, "wait_seconds": 10})
        ).structured_content
        assert done["status"] == "completed"
        assert done["result"]["search_id"] == op_id
        assert (await client.call_tool("operation_status", {})).structured_content["status"] == "idle"


async def test_when_nothing_runs_operation_status_points_at_the_search_a_restart_interrupted(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.05)
    services = h.open()
    now = services.clock.now()
    interrupted = OperationRecord(
        operation_id="op_" + "b" * 24,
        kind=OperationKind.SEARCH,
        budget=BudgetSpec(max_requests=10, timeout_seconds=60),
        status=OperationStatus.INTERRUPTED,
        checkpoint={"search_id": "op_" + "b" * 24},
        created_at=now,
        updated_at=now,
    )
    StoreSink(services.store).save(interrupted)
    async with Client(build_server(lambda: services)) as client:
        idle = (await client.call_tool("operation_status", {})).structured_content
    assert idle["status"] == "idle"
    assert "operation_control(action='continue', operation_id='op_" + "b" * 24 + "')" in idle["next_step"]


async def test_when_nothing_was_interrupted_the_idle_status_advises_nothing(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        idle = (await client.call_tool("operation_status", {})).structured_content
    assert idle["status"] == "idle" and idle["next_step"] is None


async def test_progress_notifications_arrive_when_a_progress_token_is_sent(h: Harness) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(build_server(h.open)) as client:
        result = await client.call_tool("search", {"query": "知网"}, progress_callback=on_progress)
        assert not result.is_error
    assert seen, "no progress notification arrived"
    values = [p for p, _, _ in seen]
    assert values == sorted(values)
    assert all(total is None or progress <= total for progress, total, _ in seen), seen


def _sampler(reply: str, calls: list[str]) -> Any:
    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        calls.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=reply),
            model="fake",
            stop_reason="endTurn",
        )

    return sampling


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_concepts_are_planned_by_client_sampling_when_declared(h: Harness, mode: str) -> None:
    calls: list[str] = []
    sampler = _sampler('[["竞业限制", "竞业禁止"], ["违约金"]]', calls)
    async with Client(build_server(h.open), sampling_callback=sampler, mode=mode) as client:
        result = await client.call_tool("search", {"query": "竞业限制违约金的裁判思路"})
        assert not result.is_error, result.content
        assert result.structured_content["result"]["plan"]["method"] == "sampling"
    assert calls and "竞业限制违约金" in calls[0]
    assert h.pipeline.plans[-1].groups == [["竞业限制", "竞业禁止"], ["违约金"]]


@pytest.mark.parametrize(
    ("mode", "answer"), [("legacy", "refused"), ("legacy", "never"), ("legacy", "image"), ("auto", "image")]
)
async def test_a_sampling_request_the_client_refuses_or_never_answers_falls_back_to_segmenting(
    h: Harness, mode: str, answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many clients ask the person before sampling; a "no", a request nobody answers or a reply
    that is not text must not fail or hang the search: the server plans and says why. (On the
    input-required revision (`auto` here) a refusal or a silence stays in the client, which
    holds the retry: the server is not waiting on it.)"""
    from cnki_mcp.server import sampling

    # the "never" case's bound; the others keep a bound no loaded machine reaches, so a refusal
    # or an image answered late is still read as what it is, not as a timeout
    monkeypatch.setattr(sampling, "SAMPLING_TIMEOUT_SECONDS", 0.2 if answer == "never" else 60.0)

    async def sampler(context: Any, params: Any) -> Any:
        if answer == "refused":
            return ErrorData(code=-1, message="User rejected sampling request")
        if answer == "never":
            await asyncio.Event().wait()  # the person never answers
        return CreateMessageResult(
            role="assistant", content=ImageContent(type="image", data="aGk=", mime_type="image/png"), model="fake"
        )

    async with Client(build_server(h.open), sampling_callback=sampler, mode=mode) as client:
        result = await client.call_tool("search", {"query": "竞业限制、违约金"})
        assert not result.is_error, result.content
        assert result.structured_content["result"]["plan"]["method"] == "segmented"
    plan = h.pipeline.plans[-1]
    assert plan.groups == [["竞业限制"], ["违约金"]]
    reason = {"refused": "refused", "never": "timeout", "image": "invalid"}[answer]
    assert sampling.fallback_warning(reason) in plan.warnings, plan.warnings  # type: ignore[arg-type]


async def test_concepts_are_planned_by_segmenting_without_sampling(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        result = await client.call_tool("search", {"query": "竞业限制、违约金"})
        assert result.structured_content["result"]["plan"]["method"] == "segmented"
        assert result.structured_content["result"]["plan"]["concepts"] == [["竞业限制"], ["违约金"]]
        raw = await client.call_tool("search", {"query": "2020年以来大语言模型幻觉问题有哪些缓解方法？"})
        assert not raw.is_error, raw.content
    plan = h.pipeline.plans[-1]
    assert plan.method == "segmented" and len(plan.groups) == 2
    assert (plan.year_from, plan.year_to) == (2020, None)


async def test_explicit_concept_groups_skip_sampling(h: Harness) -> None:
    calls: list[str] = []
    async with Client(build_server(h.open), sampling_callback=_sampler("[]", calls)) as client:
        result = await client.call_tool("search", {"query": "q", "concept_groups": [["a"], ["b", "c"]]})
        assert result.structured_content["result"]["plan"]["method"] == "explicit"
    assert calls == []


async def test_search_results_pages_through_stored_results(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        page1 = (
            await client.call_tool("search_results", {"search_id": "op_x", "limit": 50})
        ).structured_content
        assert page1["total"] == 120 and page1["next_offset"] == 50 and len(page1["results"]) == 50
        last = (
            await client.call_tool("search_results", {"search_id": "op_x", "offset": 100, "limit": 50})
        ).structured_content
        assert last["next_offset"] is None and len(last["results"]) == 20


async def test_a_continue_that_ends_failed_is_an_error_result_and_one_that_completes_is_not(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.5)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        op_id = (await client.call_tool("search", {"query": "x"})).structured_content["operation_id"]
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        h.pipeline.continue_failure = ParserUnsupported()
        failed = await client.call_tool("operation_control", {"action": "continue", "operation_id": op_id})
        assert failed.is_error
        tools = {t.name: t for t in (await client.list_tools()).tools}
        jsonschema.validate(failed.structured_content, tools["operation_control"].output_schema)
        assert failed.structured_content["code"] == "PARSER_UNSUPPORTED"
        assert failed.structured_content["operation_id"] == op_id
        h.pipeline.continue_failure = None
        done = await client.call_tool("operation_control", {"action": "continue", "operation_id": op_id})
        assert not done.is_error and done.structured_content["operation"]["status"] == "completed"
        assert done.structured_content["message"] != failed.structured_content["message"]


async def test_results_of_a_search_that_has_not_finished_say_how_to_finish_it(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    h.pipeline.no_saved_results = True  # a search's results are saved when it ends
    async with Client(build_server(h.open)) as client:
        op_id = (await client.call_tool("search", {"query": "x"})).structured_content["operation_id"]
        running = _error(await client.call_tool("search_results", {"search_id": op_id}))
        assert running["code"] == "SEARCH_NOT_FOUND" and running["details"]["operation_status"] == "running"
        assert running["details"]["next_step"].startswith("operation_status(")
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        stopped = _error(await client.call_tool("search_results", {"search_id": op_id}))
        assert stopped["code"] == "SEARCH_NOT_FOUND" and stopped["details"]["operation_status"] == "cancelled"
        assert stopped["details"]["next_step"] == f"operation_control(action='continue', operation_id='{op_id}')"
        unknown = _error(await client.call_tool("search_results", {"search_id": "op_" + "9" * 24}))
        assert unknown["code"] == "SEARCH_NOT_FOUND" and "next_step" not in unknown["details"]


async def test_operation_control_cancel_and_continue_codes(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        op_id = (await client.call_tool("search", {"query": "x"})).structured_content["operation_id"]
        busy = _error(
            await client.call_tool("operation_control", {"action": "continue", "operation_id": op_id})
        )
        assert busy["code"] == "OPERATION_BUSY"
        cancelled = (
            await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        ).structured_content
        assert cancelled["operation"]["status"] == "cancelled"
        again = (
            await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        ).structured_content
        # an operation that has ended is left as it is, and the answer does not claim a cancel
        assert again["operation"]["status"] == "cancelled" and again["message"] != cancelled["message"]
        unknown = _error(
            await client.call_tool(
                "operation_control", {"action": "continue", "operation_id": "op_" + "0" * 24}
            )
        )
        assert unknown["code"] == "OPERATION_NOT_FOUND"
        resume = _error(
            await client.call_tool("operation_control", {"action": "resume", "operation_id": op_id})
        )
        # the cancelled operation ended here: its state (it said 操作不在本进程中运行)
        assert resume["code"] == "OPERATION_STATE" and resume["details"]["status"] == "cancelled"
        show = _error(await client.call_tool("operation_control", {"action": "show"}))
        assert show["code"] == "VERIFICATION_NOT_FOUND"
        recover = await client.call_tool("operation_control", {"action": "recover"})
        assert not recover.is_error
        assert h.services is not None and h.services.host.started is False


async def test_a_budget_given_to_an_action_that_adds_none_is_refused_and_nothing_is_done(tmp_path: Path) -> None:
    """cancel / resume / show / recover dropped additional_requests / additional_seconds without a
    word: a client that asked for more budget with its resume believed it had it."""
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        op_id = (await client.call_tool("search", {"query": "x"})).structured_content["operation_id"]
        for action in ("cancel", "resume", "show", "recover"):
            for extra in ({"additional_seconds": 60}, {"additional_requests": 10, "additional_seconds": 60}):
                args = {"action": action, "operation_id": op_id, **extra}
                error = _error(await client.call_tool("operation_control", args))
                assert error["code"] == "INVALID_ARGUMENT", (action, error)
                assert error["details"]["field"] == next(iter(extra)) and error["details"]["action"] == action
                assert "additional_seconds" in error["details"]["accepts"]["continue"]
        status = (await client.call_tool("operation_status", {"operation_id": op_id})).structured_content
        assert status["status"] == "running"  # the refused cancel cancelled nothing
        done = await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        assert done.structured_content["operation"]["status"] == "cancelled"


async def test_session_status_cached_then_refreshed(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        cached = (await client.call_tool("session_status", {})).structured_content
        assert cached["cached"] is True and cached["evidence_source"] == "not_checked"
        assert h.backend.calls == []
        fresh = (await client.call_tool("session_status", {"refresh": True})).structured_content
        assert fresh["cached"] is False and fresh["institution"] == "observed"
        again = (await client.call_tool("session_status", {})).structured_content
        assert again["cached"] is True and again["institution_evidence"] == ["华东政法大学"]


# Clients of the earlier protocol versions still send logging/setLevel, deprecated by SEP-2577
# (2026-07-28); the server keeps accepting it, so the SDK's deprecation warning is expected here.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_logging_set_level_is_accepted_on_the_legacy_era(h: Harness) -> None:
    async with Client(build_server(h.open), mode="legacy") as client:
        await client.set_logging_level("debug")
        tools = (await client.list_tools()).tools
        assert len(tools) == len(TOOL_NAMES)


# The level is what the client wants to receive (the server sends no log notifications); the
# operator's CNKI_LOG_LEVEL stays the server's own log level.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("level", ["emergency", "debug"])
async def test_a_clients_logging_level_leaves_the_servers_own_log_level_alone(h: Harness, level: str) -> None:
    log = logging.getLogger("cnki_mcp")
    before = log.level
    try:
        log.setLevel(logging.WARNING)
        async with Client(build_server(h.open), mode="legacy") as client:
            await client.set_logging_level(level)  # type: ignore[arg-type]
            assert (await client.call_tool("diagnostics", {})).is_error is False
        assert log.level == logging.WARNING
    finally:
        log.setLevel(before)


async def test_guide_resource_and_prompts_are_listed_and_readable(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        resources = (await client.list_resources()).resources
        assert [r.uri for r in resources] == ["cnki://guide"]
        text = (await client.read_resource("cnki://guide")).contents[0].text
        assert "operation_status" in text and "awaiting_user" in text
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"research_topic", "literature_review"}
        got = await client.get_prompt("research_topic", {"topic": "分层作业"})
        assert "分层作业" in got.messages[0].content.text


async def test_services_are_closed_when_the_session_ends(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        await client.call_tool("diagnostics", {})
    assert h.services is not None and h.services.closed
    assert h.services.store.closed


async def test_research_search_with_the_real_pipeline_on_a_corpus_backend(tmp_path: Path) -> None:
    from cnki_mcp.services import Services
    from tests.corpus_backend import CorpusBackend

    opened: list[Services] = []
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings

    def open_services() -> Services:
        opened.append(Services.open(settings, backend=CorpusBackend()))
        return opened[-1]

    async with Client(build_server(open_services)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        args = {
            "query": "自动驾驶汽车产品责任的归责原则",
            "concept_groups": [
                ["自动驾驶", "无人驾驶", "智能网联汽车"],
                ["产品责任", "归责原则", "侵权责任"],
            ],
            "limit": 5,
        }
        result = await client.call_tool("search", args)
        assert not result.is_error, result.content
        data = result.structured_content
        jsonschema.validate(data, tools["search"].output_schema)
        assert data["status"] == "completed" and data["errors"] == [], data["errors"]
        summary = data["result"]
        assert summary["candidate_count"] > 0 and summary["coverage"]
        assert summary["plan"]["method"] == "explicit"
        page = await client.call_tool(
            "search_results", {"search_id": summary["search_id"], "scope": "candidates", "limit": 2}
        )
        assert not page.is_error, page.content
        assert page.structured_content["total"] == summary["candidate_count"]
        again = (await client.call_tool("search", args)).structured_content
        assert again["result"]["source"] == "cache" and again["operation_id"] is None
    assert opened[0].host.started is False


async def test_the_log_library_export_and_metadata_of_a_search_that_has_not_finished_say_how_to_finish_it(tmp_path: Path) -> None:
    # before: "没有这个检索编号（检索结果只保留最近 300 次）", as for an id that never existed
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        op_id = (await client.call_tool("search", {"query": "x"})).structured_content["operation_id"]
        for tool, args in (
            ("export_search_log", {"search_id": op_id}),
            ("search_library", {"query": "违约金", "search_id": op_id}),
            ("export_citations", {"search_id": op_id}),
            ("get_metadata", {"search_id": op_id, "local_only": True}),
        ):
            running = _error(await client.call_tool(tool, args))
            assert running["code"] == "SEARCH_NOT_FOUND" and running["details"]["operation_status"] == "running", tool
            assert running["details"]["next_step"].startswith("operation_status("), tool
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": op_id})
        unknown = _error(await client.call_tool("export_search_log", {"search_id": "op_" + "9" * 24}))
        assert unknown["code"] == "SEARCH_NOT_FOUND" and "next_step" not in unknown["details"]


async def test_an_identical_search_called_while_one_runs_joins_it_instead_of_searching_again(
    tmp_path: Path,
) -> None:
    # a client retrying a call that outlived its timeout, or a second client asking the same
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        first = (await client.call_tool("search", {"query": "违约金 酌减"})).structured_content
        assert first["status"] == "running" and first["joined"] is False
        again = await client.call_tool("search", {"query": "违约金 酌减"})
        tools = {t.name: t for t in (await client.list_tools()).tools}
        jsonschema.validate(again.structured_content, tools["search"].output_schema)
        assert again.structured_content["operation_id"] == first["operation_id"]
        assert again.structured_content["joined"] is True
        other = (await client.call_tool("search", {"query": "违约金 酌减", "limit": 7})).structured_content
        assert other["operation_id"] != first["operation_id"] and other["joined"] is False
        h.pipeline.release.set()
        done = (
            await client.call_tool("operation_status", {"operation_id": first["operation_id"], "wait_seconds": 10})
        ).structured_content
        assert done["status"] == "completed"
    assert h.pipeline.runs == 2  # the identical call ran nothing; the one with another limit did


async def test_an_identical_structured_search_called_while_one_runs_joins_it(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    expression = {"field": "authors", "value": "王利明"}
    async with Client(build_server(h.open)) as client:
        first = (await client.call_tool("structured_search", {"expression": expression})).structured_content
        again = (await client.call_tool("structured_search", {"expression": expression})).structured_content
        assert first["status"] == "running" and again["operation_id"] == first["operation_id"]
        assert again["joined"] is True
        h.pipeline.release.set()
    assert h.pipeline.runs == 1


async def test_an_identical_search_after_the_running_one_was_cancelled_runs_its_own(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data", inline_wait=0.05)
    h.pipeline.block = True
    async with Client(build_server(h.open)) as client:
        first = (await client.call_tool("search", {"query": "违约金 酌减"})).structured_content
        await client.call_tool("operation_control", {"action": "cancel", "operation_id": first["operation_id"]})
        again = (await client.call_tool("search", {"query": "违约金 酌减"})).structured_content
        assert again["operation_id"] != first["operation_id"] and again["joined"] is False
        h.pipeline.release.set()
    assert h.pipeline.runs == 2


async def test_an_unknown_record_ref_says_which_tool_gets_one(h: Harness) -> None:
    # read_online_html / download_paper / read_pdf_text / export_citations answered the bare
    # 未找到该文献 (or 本地没有这些记录编号): nothing for the model to call next
    unknown = "rec_" + "0" * 24
    calls = [
        ("read_online_html", {"record_ref": unknown}), ("download_paper", {"record_ref": unknown}),
        ("read_pdf_text", {"record_ref": unknown}), ("export_citations", {"record_refs": [unknown]}),
    ]  # fmt: skip
    async with Client(build_server(h.open)) as client:
        for tool, args in calls:
            error = _error(await client.call_tool(tool, args))
            assert error["code"] == "DOCUMENT_NOT_FOUND", (tool, error)
            named = [name for name in TOOL_NAMES if name in error["message"]]
            assert "get_metadata" in named and "search" in named, (tool, error["message"])


class _LoginPage:
    """A login page nobody logs in on: the step ends only by `resume`."""

    async def inspect(self) -> Any:
        from cnki_mcp.site.human import PageKind, PageState

        return PageState(PageKind.LOGIN)

    async def show(self) -> None:
        return None

    async def minimise(self) -> None:
        return None


async def test_resume_without_an_operation_id_resumes_the_step_that_is_open(tmp_path: Path) -> None:
    """The guide, login's description and the skill write operation_control(action='resume') (the
    institution's remote-access login); made as written it was INVALID_ARGUMENT 'resume 需要
    operation_id'. It concerns the one human step the gate holds, as show does."""
    h = Harness(tmp_path / "data", inline_wait=0.05)
    services: list[Any] = []

    async def login(op: Any, *, remote_access_url: str | None = None, force: bool = False) -> Any:
        await services[0].gate.handle("login", _LoginPage(), op, "wait")
        return await h.backend.identity(op)

    h.backend.login = login  # type: ignore[attr-defined]

    def opened() -> Any:
        services.append(h.open())
        return services[0]

    async with Client(build_server(opened)) as client:
        nothing = _error(await client.call_tool("operation_control", {"action": "resume"}))
        assert nothing["code"] == "VERIFICATION_NOT_FOUND"  # no step open: as show says
        started = (await client.call_tool("login", {"remote_access_url": "https://vpn.example.edu/"})).structured_content
        op_id = started["operation_id"]
        waiting = started
        while waiting["status"] != "awaiting_user":
            waiting = (
                await client.call_tool("operation_status", {"operation_id": op_id, "wait_seconds": 5})
            ).structured_content
        resumed = await client.call_tool("operation_control", {"action": "resume"})
        assert not resumed.is_error, resumed.structured_content
        assert resumed.structured_content["operation"]["operation_id"] == op_id
        done = (await client.call_tool("operation_status", {"operation_id": op_id, "wait_seconds": 10})).structured_content
        assert done["status"] == "completed" and done["result"]["institution"] == "observed"


async def test_session_status_names_the_account_so_a_switch_from_one_account_to_another_shows(h: Harness) -> None:
    accounts = iter(["alice", "bob"])

    async def identity(op: Any = None) -> HeaderIdentity:
        return HeaderIdentity(ready=True, personal=IdentityKind.AUTHENTICATED, personal_name=next(accounts))

    h.backend.identity = identity  # type: ignore[method-assign]
    async with Client(build_server(h.open)) as client:
        first = (await client.call_tool("session_status", {"refresh": True})).structured_content
        second = (await client.call_tool("session_status", {"refresh": True})).structured_content
        cached = (await client.call_tool("session_status", {})).structured_content
    assert first["personal"] == second["personal"] == "authenticated"
    assert (first["personal_name"], second["personal_name"], cached["personal_name"]) == ("alice", "bob", "bob")
