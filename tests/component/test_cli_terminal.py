"""The `cnki-mcp` command as a terminal and a shell script meet it: a reader gone from the pipe
ends a command quietly (`cnki-mcp version | true`), and a simulator asked to log into a file it
cannot write refuses to start instead of dropping every request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _with_stdout_reader_gone(*argv: str) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes: every write is EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "cnki_mcp", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


def test_version_to_a_pipe_whose_reader_is_gone_ends_without_a_traceback() -> None:
    done = _with_stdout_reader_gone("version")
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr


def test_sim_refuses_a_request_log_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request failed on the log file (the connection dropped, a traceback each time) while
    the simulator looked up and running."""
    from cnki_mcp.cli.main import main
    from cnki_mcp.sim.server import SimServer

    def started(self: SimServer) -> SimServer:
        raise AssertionError("the simulator started")

    monkeypatch.setattr(SimServer, "start", started)
    for target in (tmp_path / "missing" / "log.jsonl", tmp_path):  # a missing folder, and a folder
        assert main(["sim", "--request-log", str(target)]) == 2
        assert capsys.readouterr().err.startswith("错误 INVALID_ARGUMENT")
