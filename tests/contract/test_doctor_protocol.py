"""`cnki-mcp doctor --protocol`: the stdio MCP handshake against a real `cnki-mcp serve`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cnki_mcp.cli import doctor_cmd
from cnki_mcp.cli.main import main
from tests.child_env import child_env


def _env(tmp_path: Path) -> dict[str, str]:
    env = child_env()
    env["CNKI_DATA_DIR"] = str(tmp_path / "user-data")
    return env


def test_protocol_check_handshakes_with_serve_and_leaves_the_data_directory_alone(tmp_path: Path) -> None:
    check = doctor_cmd.protocol_check([sys.executable, "-m", "cnki_mcp", "serve"], _env(tmp_path))
    assert check.ok, check.detail
    assert check.name == "protocol"
    assert "0.1.0" in check.detail
    assert not (tmp_path / "user-data").exists()  # a temporary data directory was used


def test_protocol_check_reports_a_command_that_is_not_an_mcp_server(tmp_path: Path) -> None:
    check = doctor_cmd.protocol_check([sys.executable, "-c", "print('hello')"], _env(tmp_path))
    assert not check.ok
    missing = doctor_cmd.protocol_check([str(tmp_path / "no-such-program"), "serve"], _env(tmp_path))
    assert not missing.ok


@pytest.mark.browser
def test_doctor_protocol_json_includes_the_handshake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], browser_executable: str
) -> None:
    monkeypatch.setenv("CNKI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CNKI_BROWSER_PATH", browser_executable)
    monkeypatch.setattr(sys, "argv", [sys.executable, "-m", "cnki_mcp"])
    code = main(["doctor", "--protocol", "--json"])
    report = json.loads(capsys.readouterr().out)
    names = {c["name"]: c for c in report["checks"]}
    assert names["protocol"]["ok"] is True, names["protocol"]
    assert code == (0 if report["ok"] else 1)


def test_a_server_that_exits_before_the_handshake_is_reported_with_what_it_wrote(tmp_path: Path) -> None:
    """`python -m cnki_mcp` from an environment without the package: the check says the server
    exited and carries its stderr, not the SDK's "unhandled errors in a TaskGroup"."""
    from cnki_mcp.server.selfcheck import protocol_check

    code = "import sys; sys.stderr.write('No module named cnki_mcp\\n'); sys.exit(1)"
    report = protocol_check([sys.executable, "-c", code], _env(tmp_path), timeout=30)
    assert not report.ok
    assert report.reason == "exited"
    assert "No module named cnki_mcp" in report.stderr_tail
    assert "No module named cnki_mcp" in report.detail
    assert "TaskGroup" not in report.detail


def test_a_server_that_never_answers_is_reported_as_a_timeout(tmp_path: Path) -> None:
    from cnki_mcp.server.selfcheck import protocol_check

    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # reads requests, never answers
    report = protocol_check(silent, _env(tmp_path), timeout=1)
    assert not report.ok
    assert report.reason == "timeout"


def test_a_missing_command_is_reported_as_not_startable(tmp_path: Path) -> None:
    from cnki_mcp.server.selfcheck import protocol_check

    report = protocol_check([str(tmp_path / "no-such-program"), "serve"], _env(tmp_path), timeout=30)
    assert not report.ok
    assert report.reason == "launch_failed"


def test_protocol_check_passes_against_a_read_only_server(tmp_path: Path) -> None:
    """CNKI_READ_ONLY=1 hides download_paper and read_online_html on purpose: not "missing tools,
    reinstall"."""
    from cnki_mcp.server.selfcheck import protocol_check

    env = {**_env(tmp_path), "CNKI_READ_ONLY": "1"}
    report = protocol_check([sys.executable, "-m", "cnki_mcp", "serve"], env, timeout=60)
    assert report.ok, report.detail
    assert report.reason == "ok"
