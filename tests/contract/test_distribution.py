"""The installable distribution: its own PyPI name, a `[sim]` extra that a plain install does
not need, and a server start that imports no simulator code (DESIGN.md §Distribution)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from cnki_mcp.cli import sim_cmd
from cnki_mcp.cli.launcher import DIST_NAME
from cnki_mcp.errors import CnkiError
from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_distribution_has_its_own_name_and_keeps_the_command() -> None:
    project = _pyproject()["project"]
    assert project["name"] == DIST_NAME == "cnki-research-mcp"
    assert project["scripts"] == {"cnki-mcp": "cnki_mcp.cli.main:main"}


def test_simulator_only_dependencies_live_in_the_sim_extra() -> None:
    project = _pyproject()["project"]
    runtime = " ".join(project["dependencies"])
    assert "trustme" not in runtime and "cryptography" not in runtime
    assert any(dep.startswith("trustme") for dep in project["optional-dependencies"]["sim"])


def test_hosts_mode_without_the_sim_extra_is_a_coded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trustme" else real(name, *a))
    with pytest.raises(CnkiError) as info:
        sim_cmd.require_sim_extra(True)
    assert info.value.code == "EXTRA_NOT_INSTALLED"
    sim_cmd.require_sim_extra(False)  # plain mode needs nothing beyond the standard library


async def test_server_start_imports_no_simulator_code_and_no_playwright(tmp_path: Path) -> None:
    """`python -X importtime` logs every module the server imports; after `tools/list` and a
    local tool call, neither the simulator nor its TLS helper may be among them."""
    env = child_env()
    env["CNKI_DATA_DIR"] = str(tmp_path / "data")
    env["CNKI_HEADLESS"] = "1"
    params = StdioServerParameters(
        command=sys.executable, args=["-X", "importtime", "-m", "cnki_mcp", "serve"], env=env, cwd=str(tmp_path)
    )
    log = tmp_path / "imports.log"
    with log.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert (await session.list_tools()).tools
            assert not (await session.call_tool("diagnostics", {})).is_error
    modules = {line.rsplit("|", 1)[-1].strip() for line in log.read_text(encoding="utf-8").splitlines() if "|" in line}
    assert "cnki_mcp.server.app" in modules  # the log really lists the server's imports
    assert not {m for m in modules if m.startswith("cnki_mcp.sim") or m.startswith("trustme")}
    # Playwright loads when the browser first starts, not to answer tools/list (docs/benchmarks.md).
    assert not {m for m in modules if m.startswith("playwright")}
