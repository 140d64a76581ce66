"""MCP Inspector's CLI against `cnki-mcp serve`, over stdio and over HTTP sessions: tools/list
with its schema portability check (`--strict`: exit 6 on an error-severity problem), and each
tool called once with good and once with bad arguments. The Inspector validates every
structuredContent (error results too) against the tool's output schema and fails the call with
-32602 on a mismatch; a tool result with isError:true exits 5 (`tool_is_error`).

No simulator here: the server's browser path does not exist, so tools that would visit CNKI end
with a coded BROWSER_UNAVAILABLE before any browser starts; the local tools answer for real."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.server.app import TOOL_NAMES
from tests.clients.support import INSPECTOR, http_server, require_node_clients, run_node, server_env

pytestmark = [pytest.mark.slow]

TIMEOUT = 150.0  # seconds per Inspector run (a bound, never a timing assertion)
OP_ID = "op_" + "0" * 24
EXIT_OK, EXIT_TOOL_IS_ERROR, EXIT_STRICT = 0, 5, 6
BEFORE_THE_BROWSER = {"BROWSER_UNAVAILABLE", "DOCUMENT_NOT_FOUND", "SEARCH_NOT_FOUND", "OPERATION_NOT_FOUND"}

GOOD: dict[str, dict[str, Any]] = {
    "search": {"query": "违约金 酌减", "concept_groups": [["违约金"], ["酌减"]], "limit": 5},
    "structured_search": {"expression": {"field": "title", "value": "违约金"}, "limit": 5},
    "search_results": {"search_id": OP_ID},
    "get_metadata": {"titles": ["违约金酌减的裁判规则"]},
    "read_online_html": {"title": "违约金酌减的裁判规则"},
    "download_paper": {"title": "违约金酌减的裁判规则"},
    "read_pdf_text": {"record_ref": "rec_" + "0" * 24},
    "export_citations": {"record_refs": ["rec_" + "0" * 24], "format": "bibtex"},
    "link_references": {"text": "见《违约金酌减的裁判规则》。"},
    "verify_references": {"references": ["张三. 违约金酌减的裁判规则[J]. 法学研究, 2020, 42(3): 1-10."]},
    "search_library": {"query": "违约金"},
    "get_references": {"paper": "rec_" + "0" * 24},
    "get_citing": {"paper": "rec_" + "0" * 24, "types": ["journal"]},
    "citation_graph": {"seeds": ["rec_" + "0" * 24]},
    "find_citation_path": {"source": "rec_" + "0" * 24, "target": "rec_" + "1" * 24},
    "login": {},
    "session_status": {},
    "operation_status": {},
    "operation_control": {"action": "recover"},
    "diagnostics": {},
    "export_search_log": {"search_id": OP_ID},
    "watch_search": {"search_id": OP_ID},
    "list_watches": {},
    "check_updates": {"watch_id": "all"},
}
BAD: dict[str, dict[str, Any]] = {
    "search": {"query": "", "limit": 0},
    "structured_search": {"expression": {"field": "nope", "value": "a"}},
    "search_results": {"search_id": "s", "limit": 500},
    "get_metadata": {"record_refs": ["r"] * 101},
    "read_online_html": {},
    "download_paper": {"record_ref": "r", "format": "doc"},
    "read_pdf_text": {"path": "../../etc/passwd"},
    "export_citations": {},
    "link_references": {},
    "verify_references": {"text": "a", "references": ["b"]},
    "search_library": {"query": "x", "limit": 0},
    "get_references": {"paper": ""},
    "get_citing": {"paper": "r", "offset": -1},
    "citation_graph": {"seeds": ["r"], "depth": 9},
    "find_citation_path": {"source": "a", "target": "b", "max_depth": 0},
    "login": {"remote_access_url": "https://user:pw@vpn.example.edu/"},
    "session_status": {"refresh": 3},  # a string would be coerced by the Inspector ("maybe" -> false)
    "operation_status": {"wait_seconds": 99},
    "operation_control": {"action": "explode"},
    "diagnostics": {"unexpected": {"x": 1}},  # an argument the tool does not have: INVALID_ARGUMENT
    "export_search_log": {"search_id": "s", "format": "docx"},
    "watch_search": {"search_id": ""},
    "list_watches": {"checks": 11},
    "check_updates": {"pages": 0},
}


def inspector(target: list[str], method: list[str]) -> tuple[int, Any, str]:
    proc = run_node(
        [str(INSPECTOR), "--connect-timeout", str(int(TIMEOUT * 1000) - 10000), "--format", "json", *method, *target],
        timeout=TIMEOUT,
    )
    out = proc.stdout.strip()
    return proc.returncode, (json.loads(out) if out.startswith("{") else out), proc.stderr


def call(target: list[str], tool: str, args: dict[str, Any]) -> tuple[int, Any, str]:
    return inspector(
        target, ["--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(args, ensure_ascii=False)]
    )


def check_call(tool: str, good: bool, outcome: tuple[int, Any, str]) -> None:
    code, out, err = outcome
    assert code in (EXIT_OK, EXIT_TOOL_IS_ERROR), (tool, good, code, out, err[-2000:])
    result = out["result"]
    data = result["structuredContent"]
    if code == EXIT_TOOL_IS_ERROR:
        assert result["isError"] is True and data["status"] == "failed", (tool, data)
        assert "tool_is_error" in err, err[-2000:]
        if good:
            assert data["code"] in BEFORE_THE_BROWSER, (tool, data)
        else:
            assert data["code"].startswith("INVALID_"), (tool, data)
    else:
        assert not result.get("isError"), (tool, data)
        assert good, (tool, data)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    require_node_clients()
    work = tmp_path_factory.mktemp("inspector")
    return server_env(work / "data", CNKI_BROWSER_PATH=str(work / "no-such-browser")), work


def _stdio_target(env: dict[str, str]) -> list[str]:
    pairs = [part for key in ("CNKI_DATA_DIR", "CNKI_BROWSER_PATH", "CNKI_HEADLESS", "PATH", "HOME", "TMPDIR")
             if key in env for part in ("-e", f"{key}={env[key]}")]
    return [*pairs, str(Path(sys.executable).parent / "cnki-mcp"), "serve"]  # no `-m` for the CLI to parse


def _listed(outcome: tuple[int, Any, str]) -> None:
    code, out, err = outcome
    assert code == EXIT_OK, (code, out, err[-2000:])  # --strict: no error-severity portability problem
    tools = {t["name"]: t for t in out["result"]["tools"]}
    assert set(tools) == set(TOOL_NAMES)
    assert all(t.get("outputSchema") for t in tools.values())


def test_inspector_over_stdio_lists_the_tools_and_accepts_a_coded_error(
    env: tuple[dict[str, str], Path],
) -> None:
    server, work = env

    def target(i: int) -> list[str]:  # each run starts its own server: its own data directory
        return _stdio_target({**server, "CNKI_DATA_DIR": str(work / f"stdio-{i}")})

    with ThreadPoolExecutor(max_workers=2) as pool:  # every call over HTTP below; here the stdio path
        listed = pool.submit(inspector, target(1), ["--method", "tools/list", "--strict"])
        bad = pool.submit(call, target(2), "search", BAD["search"])
        _listed(listed.result())
        check_call("search", False, bad.result())


def test_inspector_over_http_calls_every_tool_with_good_and_bad_arguments(
    env: tuple[dict[str, str], Path],
) -> None:
    server, work = env
    with http_server(server, work) as url:
        target = ["--transport", "http", "--server-url", url]
        _listed(inspector(target, ["--method", "tools/list", "--strict"]))
        jobs = [(tool, True, GOOD[tool]) for tool in TOOL_NAMES] + [(tool, False, BAD[tool]) for tool in TOOL_NAMES]
        with ThreadPoolExecutor(max_workers=4) as pool:
            outcomes = list(pool.map(lambda job: call(target, job[0], job[2]), jobs))
        for (tool, good, _args), outcome in zip(jobs, outcomes, strict=True):
            check_call(tool, good, outcome)
