"""`cnki-mcp watch` without a browser: list, an unknown watch (exit 2, nothing started), a check of
a watch with nothing to read (exit 0, JSON report), and the documented exit codes."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.cli.main import main
from cnki_mcp.cli.watch_cmd import EXIT_CHANGED, EXIT_INTERRUPTED, EXIT_STOPPED, EXIT_UNCHANGED, exit_code
from cnki_mcp.clock import FakeClock
from cnki_mcp.pipeline.watch import CheckReport, WatchCheck
from cnki_mcp.store import Store
from cnki_mcp.store.watches import KnownRecord


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "data"
    monkeypatch.setenv("CNKI_DATA_DIR", str(path))
    monkeypatch.setenv("CNKI_BROWSER_PATH", "/nonexistent/browser")  # must never be launched
    with Store.open(path, FakeClock()) as store:
        store.create_watch("wat_cli", "sch_1", "违约金", {"channels": []}, FakeClock().now(), "2026-01-01", [KnownRecord("r")])
    return path


def test_list_and_an_empty_check_print_and_exit_zero(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "list"]) == EXIT_UNCHANGED
    assert "wat_cli\tsch_1\tchecks=0" in capsys.readouterr().out
    assert main(["watch", "check", "--json"]) == EXIT_UNCHANGED
    report = json.loads(capsys.readouterr().out)
    assert [c["watch_id"] for c in report["checks"]] == ["wat_cli"] and report["requests"] == 0
    assert main(["watch", "check", "wat_cli"]) == EXIT_UNCHANGED
    assert "[wat_cli] 违约金: 新增 0" in capsys.readouterr().out


def test_unknown_watch_exits_two_with_its_code(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "check", "wat_missing"]) == 2
    assert "错误 INVALID_ARGUMENT" in capsys.readouterr().err


def test_exit_codes_follow_the_report() -> None:
    quiet = WatchCheck(watch_id="w", search_id="s", question="q", checked_at=FakeClock().now())
    news = quiet.model_copy(update={"new_count": 1})
    assert exit_code("completed", CheckReport(checks=[quiet])) == EXIT_UNCHANGED
    assert exit_code("completed", CheckReport(checks=[quiet, news])) == EXIT_CHANGED
    assert exit_code("partial", CheckReport(checks=[news])) == EXIT_STOPPED


@pytest.mark.parametrize(("headless", "policy"), [("1", "skip"), ("0", "wait")])
def test_a_headless_check_does_not_wait_for_a_verification_nobody_can_solve(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], headless: str, policy: str
) -> None:
    """A cron check runs without a window: a verification page would hold it for the whole human
    timeout before it stops anyway, so its operation skips instead of waiting."""
    monkeypatch.setenv("CNKI_HEADLESS", headless)
    assert main(["watch", "check", "--json"]) == EXIT_UNCHANGED
    capsys.readouterr()
    with Store.open(data, FakeClock()) as store:
        [op] = store.list_operations(5)
    assert op.record["budget"]["on_verification"] == policy


def test_remove_stops_watching(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "remove", "wat_cli"]) == EXIT_UNCHANGED
    assert "wat_cli" in capsys.readouterr().out
    assert main(["watch", "list"]) == EXIT_UNCHANGED
    assert capsys.readouterr().out == ""
    assert main(["watch", "remove", "wat_cli"]) == 2
    assert "错误 INVALID_ARGUMENT" in capsys.readouterr().err
    with Store.open(data, FakeClock()) as store:
        assert store.known_records("wat_cli") == {} and store.watch_checks("wat_cli") == []


def test_the_digest_names_what_stopped_the_check_early() -> None:
    """A check stopped by the browser, the site or a slider is not a spent budget."""
    from cnki_mcp.pipeline.watch import digest

    stopped = digest(CheckReport(unchecked=["wat_a", "wat_b"]), "BROWSER_UNAVAILABLE")
    assert "BROWSER_UNAVAILABLE" in stopped and "wat_a, wat_b" in stopped
    assert "预算用完" not in stopped


def test_a_data_directory_without_watches_says_so_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cron job on the wrong data directory (or before any watch_search) used to print only
    '请求数：0' and exit 0: nothing said that nothing was watched, nor where."""
    empty = tmp_path / "empty"
    empty.mkdir()  # a data directory that does not exist is DATA_DIRECTORY_MISSING (below)
    monkeypatch.setenv("CNKI_DATA_DIR", str(empty))
    monkeypatch.setenv("CNKI_BROWSER_PATH", "/nonexistent/browser")
    assert main(["watch", "check"]) == EXIT_UNCHANGED
    err = capsys.readouterr().err
    assert str(empty.resolve()) in err and "watch_search" in err
    assert main(["watch", "list"]) == EXIT_UNCHANGED
    listed = capsys.readouterr()
    assert listed.out == "" and "watch_search" in listed.err


def _watch_that_reads_the_site(data: Path) -> None:
    """A watch whose plan has a channel: checking it needs the browser (here /nonexistent)."""
    channel = {"id": "q1", "field": "subject", "weight": 1.0, "reason": "", "anchor": "违约金", "fingerprint": "f",
               "subject": {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": []}}  # fmt: skip
    with Store.open(data, FakeClock()) as store:
        store.create_watch("wat_read", "sch_2", "违约金", {"channels": [channel]}, FakeClock().now(), None, [])

def test_json_says_how_the_check_ended_and_which_code_stopped_it(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script reading --json saw exit 3 and `unchecked`, but the code that stopped the check was
    only in stderr's text."""
    _watch_that_reads_the_site(data)
    assert main(["watch", "check", "wat_read", "--json"]) == EXIT_STOPPED  # the browser is /nonexistent
    report = json.loads(capsys.readouterr().out)
    assert report["status"] != "completed" and report["unchecked"] == ["wat_read"]
    assert [e["code"] for e in report["errors"]] == ["BROWSER_UNAVAILABLE"]
    assert main(["watch", "check", "wat_cli", "--json"]) == EXIT_UNCHANGED
    assert json.loads(capsys.readouterr().out)["status"] == "completed"


class _ReaderGone(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_digest_nobody_reads_keeps_the_exit_code_of_the_check(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`watch check | head` with the reader gone: exit 0 said nothing changed, whatever the check found."""
    _watch_that_reads_the_site(data)
    monkeypatch.setattr(sys, "stdout", _ReaderGone())
    assert main(["watch", "check", "wat_read"]) == EXIT_STOPPED  # the browser is /nonexistent
    assert "BROWSER_UNAVAILABLE" in capsys.readouterr().err


def test_ctrl_c_prints_what_the_watches_checked_before_it_found(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their records are stored as known, so a later check never reports them again: exit 130
    with nothing printed lost that news for whoever pressed Ctrl-C after one watch of several."""
    from cnki_mcp.jobs import Job

    real_finish = Job.finish
    pressed: list[bool] = []

    async def ctrl_c_once_checked(self: Job) -> Any:
        record = await real_finish(self)  # the check is stored; Ctrl-C arrives now
        if not pressed:
            pressed.append(True)
            raise asyncio.CancelledError
        return record

    monkeypatch.setattr(Job, "finish", ctrl_c_once_checked)
    assert main(["watch", "check"]) == EXIT_INTERRUPTED
    assert "[wat_cli] 违约金: 新增 0" in capsys.readouterr().out


# `cnki-mcp watch check` stopped from outside (cron's `timeout`) once its one watch is checked.
_STOPPED_PROBE = """
import asyncio, os, signal, sys
from pathlib import Path
from cnki_mcp.clock import SystemClock
from cnki_mcp.store import Store
from cnki_mcp.pipeline import watch
from cnki_mcp.cli.main import main

data = Path(sys.argv[1])
with Store.open(data, SystemClock()) as store:
    store.create_watch("wat_term", "sch_1", "违约金", {"channels": []}, SystemClock().now(), None, [])
real_check = watch.WatchService.check

async def check_then_stopped(self, *args):
    report = await real_check(self, *args)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.Event().wait()
    return report

watch.WatchService.check = check_then_stopped
os.environ.update(CNKI_DATA_DIR=str(data), CNKI_BROWSER_PATH="/nonexistent")
raise SystemExit(main(["watch", "check"]))
"""


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["from_a_terminal", "sigint_ignored"])
def test_sigterm_ends_a_check_as_ctrl_c_does(tmp_path: Path, sigint: signal.Handlers) -> None:
    """It killed the process on the spot: the check left `running`, nothing printed. Started with
    SIGINT ignored (`cnki-mcp watch check &` in a script) the loop had no Ctrl-C handler to call."""
    done = subprocess.run(
        [sys.executable, "-c", _STOPPED_PROBE, str(tmp_path / "data")],
        capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )  # fmt: skip
    assert done.returncode == EXIT_INTERRUPTED, done.stderr
    assert "[wat_term] 违约金" in done.stdout
    with Store.open(tmp_path / "data", FakeClock()) as store:
        [op] = store.list_operations(5)
    assert op.status == "interrupted"


@pytest.mark.parametrize("budget", ["0", "-3", "many"])
def test_a_request_budget_below_one_is_refused_before_the_data_directory_is_opened(
    budget: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-data-yet"
    monkeypatch.setenv("CNKI_DATA_DIR", str(missing))
    with pytest.raises(SystemExit) as stop:
        main(["watch", "check", "--max-requests", budget])
    assert stop.value.code == 2 and not missing.exists()


def test_remove_takes_the_search_id_as_check_does(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`watch check sch_1` checked the watch; `watch remove sch_1` said there was no such watch."""
    assert main(["watch", "remove", "sch_1"]) == EXIT_UNCHANGED
    assert "wat_cli" in capsys.readouterr().out
    assert main(["watch", "list"]) == EXIT_UNCHANGED and capsys.readouterr().out == ""
    assert main(["watch", "remove", "all"]) == 2  # one at a time


@pytest.mark.parametrize("action", [["list"], ["check"], ["check", "wat_cli"], ["remove", "wat_cli"]])
def test_a_data_directory_that_does_not_exist_is_named_and_not_created(
    action: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in CNKI_DATA_DIR in a crontab: `watch list` created the mistyped folder and said
    there were no watches; the next run found it and said so again."""
    typo = tmp_path / "cnki-dta"
    monkeypatch.setenv("CNKI_DATA_DIR", str(typo))
    monkeypatch.setenv("CNKI_BROWSER_PATH", "/nonexistent/browser")
    assert main(["watch", *action]) == 2
    out = capsys.readouterr()
    assert "错误 DATA_DIRECTORY_MISSING" in out.err and out.out == ""
    assert not typo.exists()
