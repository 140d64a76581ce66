"""The official TypeScript SDK client (1.x) against `cnki-mcp serve` on the simulator, over stdio
and over HTTP sessions: it lists the tools and calls each one with good and with bad arguments.
The client validates every structuredContent against the tool's output schema (a mismatch is a
client-side -32602), so every step must end as a result (`ok` or coded `error`), never as a
client error. search, structured_search and get_metadata run for real against the simulator
over stdio (search plans its concepts through the client's sampling); the HTTP run reuses the
same data directory, so its searches are answered from the 10-minute cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.server.app import TOOL_NAMES
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.server import SimServer
from tests.clients.support import (
    http_server,
    require_node_clients,
    run_ts_client,
    serve_command,
    server_env,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT = 420.0  # seconds for one whole client run (a bound, never a timing assertion)
SAMPLING_REPLY = '[["违约金", "约定违约金"], ["酌减", "调整"]]'
SEARCH = {
    "query": "违约金过高时法院如何酌减",
    "limit": 5,
    "year_to": 2025,
    "options": {"max_pages": 1, "candidate_target": 20, "metadata": "basic"},
}
OP_ID = "op_" + "0" * 24


def steps(title: str) -> list[dict[str, Any]]:
    """Each tool once with good and once with bad arguments (good ones run for real on the simulator)."""
    return [
        {"tool": "structured_search", "expect": "ok", "follow": True,
         "args": {"expression": {"field": "title", "value": title, "match": "exact"}, "limit": 5},
         "save": {"ref": "result.results.0.record_ref"}},
        {"tool": "structured_search", "expect": "error", "args": {"expression": {"field": "nope", "value": "a"}}},
        {"tool": "search", "expect": "ok", "follow": True, "args": SEARCH, "save": {"search_id": "result.search_id"}},
        {"tool": "search", "expect": "error", "args": {"query": ""}},
        {"tool": "search_results", "expect": "ok", "args": {"search_id": "$search_id", "limit": 3, "view": "compact"}},
        {"tool": "search_results", "expect": "error", "args": {"search_id": "s", "limit": 500}},
        {"tool": "export_search_log", "expect": "ok", "args": {"search_id": "$search_id", "format": "csv"}},
        {"tool": "export_search_log", "expect": "error", "args": {"search_id": "s", "format": "docx"}},
        {"tool": "watch_search", "expect": "ok", "args": {"search_id": "$search_id"}, "save": {"watch_id": "watch_id"}},
        {"tool": "watch_search", "expect": "error", "args": {"search_id": ""}},
        {"tool": "check_updates", "expect": "ok", "follow": True, "args": {"watch_id": "$watch_id"}},
        {"tool": "check_updates", "expect": "error", "args": {"pages": 0}},
        {"tool": "list_watches", "expect": "ok", "args": {"watch_id": "$watch_id", "checks": 2}},
        {"tool": "list_watches", "expect": "error", "args": {"checks": -1}},
        {"tool": "get_metadata", "expect": "ok", "follow": True, "args": {"record_refs": ["$ref"]}},
        {"tool": "get_metadata", "expect": "error", "args": {"record_refs": ["r"] * 101}},
        {"tool": "read_online_html", "expect": "ok", "follow": True, "args": {"record_ref": "$ref", "max_characters": 500}},
        {"tool": "read_online_html", "expect": "error", "args": {}},
        {"tool": "download_paper", "expect": "ok", "follow": True, "args": {"record_ref": "$ref"}},
        {"tool": "download_paper", "expect": "error", "args": {"record_ref": "r", "format": "doc"}},
        {"tool": "read_pdf_text", "expect": "ok", "args": {"record_ref": "$ref", "max_characters": 500}},
        {"tool": "read_pdf_text", "expect": "error", "args": {"path": "../../etc/passwd"}},
        {"tool": "export_citations", "expect": "ok", "follow": True, "args": {"record_refs": ["$ref"]}},
        {"tool": "export_citations", "expect": "error", "args": {}},
        {"tool": "link_references", "expect": "ok", "follow": True, "args": {"text": f"见《{title}》。"}},
        {"tool": "link_references", "expect": "error", "args": {}},
        {"tool": "verify_references", "expect": "ok", "follow": True, "args": {"references": [f"{title}[J]. 2020."]}},
        {"tool": "verify_references", "expect": "error", "args": {"text": "a", "references": ["b"]}},
        {"tool": "search_library", "expect": "ok", "args": {"query": title[:4]}},
        {"tool": "get_references", "expect": "ok", "follow": True, "args": {"paper": "$ref", "limit": 5}},
        {"tool": "get_references", "expect": "error", "args": {"paper": ""}},
        {"tool": "get_citing", "expect": "ok", "follow": True, "args": {"paper": "$ref", "types": ["journal"]}},
        {"tool": "get_citing", "expect": "error", "args": {"paper": "r", "limit": 0}},
        {"tool": "citation_graph", "expect": "ok", "follow": True, "args": {"seeds": ["$ref"], "max_requests": 30}},
        {"tool": "citation_graph", "expect": "error", "args": {"seeds": []}},
        {"tool": "find_citation_path", "expect": "ok", "follow": True,
         "args": {"source": "$ref", "target": "$ref", "max_depth": 1}},
        {"tool": "find_citation_path", "expect": "error", "args": {"source": "a", "target": "b", "max_depth": 9}},
        {"tool": "search_library", "expect": "error", "args": {"query": "x", "limit": 0}},
        {"tool": "session_status", "expect": "ok", "args": {"refresh": True}},
        {"tool": "session_status", "expect": "error", "args": {"refresh": "maybe"}},
        {"tool": "operation_status", "expect": "ok", "args": {}},
        {"tool": "operation_status", "expect": "error", "args": {"operation_id": "bad"}},
        {"tool": "diagnostics", "expect": "ok", "args": {}},
        {"tool": "diagnostics", "expect": "error", "args": {"unexpected": {"x": 1}}},  # not an argument of it
        # login waits for the person (inline wait is short here), then is cancelled
        {"tool": "login", "expect": "ok", "args": {}, "save": {"login_op": "operation_id"}},
        {"tool": "login", "expect": "error", "args": {"remote_access_url": "http://vpn.example.edu/"}},
        {"tool": "operation_control", "expect": "ok", "args": {"action": "cancel", "operation_id": "$login_op"}},
        {"tool": "operation_control", "expect": "error", "args": {"action": "explode"}},
        {"tool": "operation_control", "expect": "error", "args": {"action": "continue", "operation_id": OP_ID}},
        {"tool": "no_such_tool", "expect": "jsonrpc_error", "raw": True, "args": {}},
    ]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    server = SimServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def record() -> SimRecord:
    """A journal article of the bundled corpus (full text, so reading and downloading can work)."""
    corpus = Corpus.load()
    return next(r for r in corpus.records if r.type == "期刊" and r.fulltext and r.year and r.year <= 2024)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ts-client")


def _env(sim: SimServer, workdir: Path, browser: str) -> dict[str, str]:
    return server_env(
        workdir / "data",
        CNKI_SITE_ORIGIN=sim.origin,
        CNKI_BROWSER_PATH=browser,
        CNKI_REQUEST_INTERVAL_MS="30",
        CNKI_INLINE_WAIT_SECONDS="8",
        CNKI_HUMAN_TIMEOUT_SECONDS="60",
    )


@pytest.fixture(scope="module")
def stdio_report(sim: SimServer, record: SimRecord, workdir: Path, browser_executable: str) -> dict[str, Any]:
    require_node_clients()
    command = serve_command()
    plan = {
        "transport": "stdio",
        "command": command[0],
        "args": command[1:],
        "env": _env(sim, workdir, browser_executable),
        "sampling_reply": SAMPLING_REPLY,
        "steps": steps(record.title),
    }
    return run_ts_client(plan, workdir, TIMEOUT)


@pytest.fixture(scope="module")
def http_report(
    stdio_report: dict[str, Any], sim: SimServer, record: SimRecord, workdir: Path, browser_executable: str
) -> dict[str, Any]:
    with http_server(_env(sim, workdir, browser_executable), workdir) as url:
        plan = {"transport": "http", "url": url, "sampling_reply": SAMPLING_REPLY, "steps": steps(record.title)}
        return run_ts_client(plan, workdir, TIMEOUT)


def _check(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    assert {t["name"] for t in report["tools"]} == set(TOOL_NAMES)
    assert all(t["has_output_schema"] for t in report["tools"])
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for row in report["steps"]:
        by_tool.setdefault(row["tool"], []).append(row)
        assert row["outcome"] != "client_error", row  # e.g. -32602 output schema mismatch
        if row["expect"] != "any":
            assert row["outcome"] == row["expect"], row
        if row["outcome"] == "error":
            assert row["has_structured"] and isinstance(row["code"], str) and row["code"], row
            assert row["status"] == "failed", row
    for name in TOOL_NAMES:
        outcomes = [r["expect"] for r in by_tool[name]]
        assert len(outcomes) >= 2, name
    assert by_tool["no_such_tool"][0]["code"] == -32602
    return by_tool


def test_the_typescript_sdk_client_accepts_every_result_over_stdio(stdio_report: dict[str, Any]) -> None:
    by_tool = _check(stdio_report)
    search = by_tool["search"][0]
    assert search["status"] in ("completed", "partial"), search
    assert search["progress"] > 0  # progress notifications reached the client
    assert stdio_report["bad_progress"] == []  # each increased and stayed within its total
    assert stdio_report["sampling_requests"] >= 1  # concepts planned by the client's model
    assert by_tool["structured_search"][0]["status"] == "completed"
    assert by_tool["get_metadata"][0]["status"] in ("completed", "partial")
    for name in ("read_online_html", "download_paper"):  # the reader and the file, from the simulator
        assert by_tool[name][0]["status"] == "completed", by_tool[name][0]


def test_the_typescript_sdk_client_accepts_every_result_over_http_sessions(http_report: dict[str, Any]) -> None:
    by_tool = _check(http_report)
    assert by_tool["search"][0]["status"] == "completed"
    assert http_report["sampling_requests"] >= 1  # sampling works over HTTP sessions
