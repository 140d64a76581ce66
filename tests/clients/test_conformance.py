"""The official MCP conformance suite (npm @modelcontextprotocol/conformance, active suite)
against `cnki-mcp serve --transport http` (sessions). Every applicable scenario must pass; the
scenarios that need the reference test server's fixtures are listed, with the reason, in
conformance-not-applicable.yml (the suite fails if one of them starts passing: a stale list)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clients.support import (
    CLIENTS,
    CONFORMANCE,
    http_server,
    require_node_clients,
    run_node,
    server_env,
)

pytestmark = [pytest.mark.slow]

APPLICABLE = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
NOT_APPLICABLE = CLIENTS / "conformance-not-applicable.yml"


def test_every_applicable_conformance_scenario_passes(tmp_path: Path) -> None:
    require_node_clients()
    out = tmp_path / "results"
    with http_server(server_env(tmp_path / "data", CNKI_BROWSER_PATH=str(tmp_path / "none")), tmp_path) as url:
        proc = run_node(
            [str(CONFORMANCE), "server", "--url", url, "--expected-failures", str(NOT_APPLICABLE), "-o", str(out)],
            timeout=300,
        )
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-2000:])
    seen: dict[str, list[str]] = {}
    for checks in out.glob("server-*/checks.json"):
        name = checks.parent.name
        scenario = next((s for s in APPLICABLE if name.startswith(f"server-{s}-")), None)
        if scenario is not None:
            seen.setdefault(scenario, []).extend(c["status"] for c in json.loads(checks.read_text()))
    assert set(seen) == set(APPLICABLE), sorted(seen)
    for scenario, statuses in seen.items():
        assert statuses and all(s in ("SUCCESS", "INFO") for s in statuses), (scenario, statuses)
