"""The `cnki-mcp` command as a terminal and a shell script meet it: a reader gone from the pipe
ends a command quietly (`cnki-mcp version | true`), and a simulator asked to log into a file it
cannot write refuses to start instead of dropping every request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _with_stdout_reader_gone(*argv: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes: every write is EPIPE
    try:
        # unbuffered output (PYTHONUNBUFFERED, as some shells and this CI set) met the closed pipe in
        # print(), inside main's handler; a person's shell buffers it, so it is met at the flush
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | extra_env
        return subprocess.run(
            [sys.executable, "-m", "cnki_mcp", *argv],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    ("argv", "code"),
    [(("version",), 0), (("--help",), 0), (("serve", "--help"), 0), (("doctor", "--json"), 1)],
    ids=["version", "help", "serve_help", "doctor_json_failing"],
)
def test_a_command_to_a_pipe_whose_reader_is_gone_ends_quietly_with_its_own_exit_code(
    argv: tuple[str, ...], code: int, tmp_path: Path
) -> None:
    """Buffered output met the closed pipe at the interpreter's exit flush: 'Exception ignored …
    BrokenPipeError' and exit 120, whatever the command's own exit code was (doctor's 1 for a
    browser it cannot find)."""
    done = _with_stdout_reader_gone(*argv, CNKI_DATA_DIR=str(tmp_path / "data"), CNKI_BROWSER_PATH="/nonexistent")
    assert "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code


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


def test_a_simulator_whose_origin_nobody_can_read_stops_with_exit_1() -> None:
    """`cnki-mcp sim | reader` with the reader gone before the origin line: the simulator stopped
    at once and exited 0, as if it had served until told to stop."""
    done = _with_stdout_reader_gone("sim")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
