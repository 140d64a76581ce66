"""`cnki-mcp serve` at start: a data directory it cannot use and a remote HTTP bind without a
token end with `错误 CODE: 说明` and exit code 2, never a traceback and never a listening port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cnki_mcp.cli.serve_cmd import check_token_rule, http_url, is_loopback
from cnki_mcp.errors import CnkiError

REPO = Path(__file__).resolve().parents[2]


def serve(data: Path, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CNKI_")}
    env["CNKI_DATA_DIR"] = str(data)
    if token:
        env["CNKI_MCP_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "cnki_mcp", "serve", *args],
        cwd=REPO,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_clean_error(done: subprocess.CompletedProcess[str], code: str) -> None:
    assert done.returncode == 2, done.stderr
    assert f"错误 {code}: " in done.stderr
    assert "Traceback" not in done.stderr


def test_database_path_that_is_a_directory_is_a_coded_error_without_traceback(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "cnki.sqlite3").mkdir(parents=True)
    assert_clean_error(serve(data), "DATABASE_UNUSABLE")


def test_symlinked_downloads_directory_is_a_coded_error_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "downloads").symlink_to(tmp_path)
    assert_clean_error(serve(data), "DATA_PATH_SYMLINK")


def test_data_directory_that_is_a_file_is_a_coded_error_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.write_text("not a folder")
    done = serve(data)
    assert_clean_error(done, "DATA_DIRECTORY_UNUSABLE")
    assert str(data.resolve()) in done.stderr  # which path: the default one is not obvious


def test_http_on_all_interfaces_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = serve(data, "--transport", "http", "--host", "0.0.0.0", "--port", "9")
    assert_clean_error(done, "TOKEN_REQUIRED")
    assert not data.exists()  # refused before anything was opened


def test_insecure_no_token_flag_lets_a_remote_bind_pass_the_token_rule(tmp_path: Path) -> None:
    # the start goes on past the token rule: it stops at the unusable database instead
    data = tmp_path / "data"
    (data / "cnki.sqlite3").mkdir(parents=True)
    done = serve(data, "--transport", "http", "--host", "0.0.0.0", "--port", "9", "--insecure-no-token")
    assert_clean_error(done, "DATABASE_UNUSABLE")


def test_token_rule_needs_a_token_only_for_non_loopback_http() -> None:
    for host in ("127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
        check_token_rule("http", host, None, False)
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.org", "10.0.0.1"):
        assert not is_loopback(host), host
        with pytest.raises(CnkiError) as info:
            check_token_rule("http", host, None, False)
        assert info.value.code == "TOKEN_REQUIRED"
        check_token_rule("http", host, "secret", False)
        check_token_rule("http", host, None, True)
    check_token_rule("stdio", "0.0.0.0", None, False)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_serve_starts_the_segmenter_warm_up_once_the_server_is_built(
    transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN.md "Start-up", step 5: after the handshake (stdio) and before serving, never before."""
    import argparse

    import cnki_mcp.query.segment as segment
    import cnki_mcp.server.app as app
    import cnki_mcp.server.fast_start as fast_start
    import cnki_mcp.server.http as http
    import cnki_mcp.server.stdio as stdio
    from cnki_mcp.cli import serve_cmd

    events: list[str] = []
    monkeypatch.setenv("CNKI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(fast_start, "serve_handshake", lambda snapshot: events.append("handshake") or fast_start.Handover())
    build = app.build_server
    monkeypatch.setattr(app, "build_server", lambda *a, **k: events.append("built") or build(*a, **k))
    monkeypatch.setattr(segment, "warm_in_background", lambda: events.append("warm-up"))

    async def serve(*args: object, **kwargs: object) -> None:
        events.append("serving")

    monkeypatch.setattr(stdio, "run_stdio", serve)
    monkeypatch.setattr(http, "serve_http", serve)
    parser = argparse.ArgumentParser()
    serve_cmd.add_arguments(parser)
    assert serve_cmd.run(parser.parse_args(["--transport", transport])) in (0, None)
    expected = ["built", "warm-up", "serving"]
    assert events == (["handshake", *expected] if transport == "stdio" else expected)


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def test_http_on_a_port_in_use_is_a_coded_error_before_any_address_is_announced(
    tmp_path: Path, busy_port: int
) -> None:
    done = serve(tmp_path / "data", "--transport", "http", "--port", str(busy_port))
    assert_clean_error(done, "LISTEN_FAILED")
    assert "http://" not in done.stderr  # no banner for a server that never listened


def test_sim_on_a_port_in_use_or_with_a_broken_scenario_is_a_coded_error(tmp_path: Path, busy_port: int) -> None:
    def sim(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cnki_mcp", "sim", *args],
            cwd=REPO, input="", capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert_clean_error(sim("--port", str(busy_port)), "LISTEN_FAILED")
    broken = tmp_path / "scenario.json"
    broken.write_text("{faults: []}", encoding="utf-8")
    assert_clean_error(sim("--scenario", str(broken)), "INVALID_ARGUMENT")
    assert_clean_error(sim("--scenario", str(tmp_path / "missing.json")), "INVALID_ARGUMENT")


def test_the_announced_url_brackets_an_ipv6_address() -> None:
    assert http_url("::1", 8000) == "http://[::1]:8000/mcp"
    assert http_url("[::1]", 8000) == "http://[::1]:8000/mcp"
    assert http_url("127.0.0.1", 8000) == "http://127.0.0.1:8000/mcp"


def test_a_host_name_with_two_addresses_is_served_on_both(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--host localhost` where localhost is both ::1 and 127.0.0.1 (macOS): uvicorn listened on
    every address; binding before the announcement must too, on one port (here two loopback
    IPv4 addresses stand for the two)."""
    import socket

    from cnki_mcp.cli import serve_cmd

    def two(name: str, port: int, *args: object, **kwargs: object) -> list[tuple[object, ...]]:
        assert name == "twohost"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in ("127.0.0.1", "127.0.0.2")]

    monkeypatch.setattr(serve_cmd.socket, "getaddrinfo", two)
    socks = serve_cmd.listen_sockets("twohost", 0)
    try:
        names = [s.getsockname() for s in socks]
        assert [n[0] for n in names] == ["127.0.0.1", "127.0.0.2"] and names[0][1] == names[1][1]
    finally:
        for s in socks:
            s.close()


# The serve process's loop at SIGTERM: a main task whose clean-up needs another task (as closing
# the browser needs Playwright's connection task) to answer once more.
_SIGTERM_PROBE = """
import asyncio, os, signal
from cnki_mcp.cli.serve_cmd import run_like_ctrl_c

async def main():
    print("sigint ignored" if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else "sigint handled", flush=True)
    requests = asyncio.Queue()

    async def connection():
        while True:
            (await requests.get()).set_result("answered")

    helper = asyncio.ensure_future(connection())
    try:
        # delivered while the loop runs something else than this task, as a signal usually is
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        await asyncio.Event().wait()
    finally:
        reply = asyncio.get_running_loop().create_future()
        requests.put_nowait(reply)
        try:
            print(await asyncio.wait_for(reply, 5), flush=True)
        except BaseException as exc:
            print("no answer:", type(exc).__name__, flush=True)
        helper.cancel()

try:
    run_like_ctrl_c(main)
except KeyboardInterrupt:
    raise SystemExit(130)
"""


def _signals_as_a_terminal_leaves_them() -> None:
    """SIGINT and SIGHUP at their defaults in the probe, not ignored as this test process may
    have inherited them (a background job of a non-interactive shell ignores SIGINT, and then
    neither Python nor the event loop installs its Ctrl-C handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _sigint_ignored_as_in_a_background_job() -> None:
    """A background job of a non-interactive shell (`cnki-mcp serve &` in a script): SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("started", "sigint"),
    [
        (_signals_as_a_terminal_leaves_them, "sigint handled"),
        (_sigint_ignored_as_in_a_background_job, "sigint ignored"),
    ],
    ids=["from_a_terminal", "sigint_ignored"],
)
def test_sigterm_lets_the_clean_up_use_the_other_tasks_before_they_are_cancelled(
    started: Callable[[], None], sigint: str
) -> None:
    """SIGTERM to `cnki-mcp serve` (stdio) cancels the main task alone, as Ctrl-C does: closing
    the browser still has Playwright's connection. It raised KeyboardInterrupt wherever the loop
    was, and the loop's teardown cancelled every task at once: the browser could not be closed,
    was killed, and left its socket folder in the temporary directory. Started with SIGINT
    ignored, the loop installed no Ctrl-C handler and SIGTERM took that old path; SIGINT stays
    ignored in the loop (a Ctrl-C meant for the shell's foreground job)."""
    done = subprocess.run(
        [sys.executable, "-c", _SIGTERM_PROBE], cwd=REPO, capture_output=True, text=True, timeout=60,
        preexec_fn=started,
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stdout.split("\n")[:2] == [sigint, "answered"]


# `cnki-mcp demo` stopped from outside while its run holds a temporary data directory.
_DEMO_STOP_PROBE = """
import asyncio, os, signal, sys, tempfile, types
from cnki_mcp.cli import demo_cmd

async def run_demo(question):
    with tempfile.TemporaryDirectory(prefix="cnki-demo-") as tmp:
        print(tmp, flush=True)
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), getattr(signal, sys.argv[1]))
        await asyncio.Event().wait()
    return 0

sys.modules["cnki_mcp.server.demo"] = types.SimpleNamespace(run_demo=run_demo)
try:
    demo_cmd.run(types.SimpleNamespace(question=None))
except KeyboardInterrupt:
    raise SystemExit(130)
"""


@pytest.mark.parametrize(
    ("signame", "started"),
    [
        ("SIGTERM", _signals_as_a_terminal_leaves_them),
        ("SIGHUP", _signals_as_a_terminal_leaves_them),
        ("SIGTERM", _sigint_ignored_as_in_a_background_job),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGTERM_sigint_ignored"],
)
def test_a_demo_stopped_from_outside_removes_its_temporary_data_directory(
    signame: str, started: Callable[[], None]
) -> None:
    """SIGTERM, or SIGHUP when the demo's terminal closes: the run ends as after Ctrl-C and its
    temporary data directory (browser profile included) is removed. It was killed on the spot
    and the directory stayed in the temporary directory; started with SIGINT ignored, SIGTERM
    raised KeyboardInterrupt wherever the loop was."""
    done = subprocess.run(
        [sys.executable, "-c", _DEMO_STOP_PROBE, signame],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        preexec_fn=started,
    )  # fmt: skip
    scratch = Path(done.stdout.strip())
    assert scratch.name.startswith("cnki-demo-"), done.stderr
    assert done.returncode == 130, done.stderr
    assert not scratch.exists()


def test_http_options_given_to_the_stdio_server_are_named_as_ignored(tmp_path: Path) -> None:
    """`serve --port 9000` without `--transport http` waited on stdin in silence, as if hung."""
    done = serve(tmp_path / "data", "--port", "9000", "--stateless")
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "--transport http" in line]
    assert warned and "--port" in warned[0] and "--stateless" in warned[0], done.stderr


def test_a_person_at_a_terminal_is_told_what_the_stdio_server_waits_for() -> None:
    from cnki_mcp.cli.main import build_parser
    from cnki_mcp.cli.serve_cmd import stdio_notes

    plain = build_parser("serve").parse_args(["serve"])
    assert stdio_notes(plain, stdin_is_tty=False) == []  # a client's pipe: nothing extra in its log
    assert len(stdio_notes(plain, stdin_is_tty=True)) == 1


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--allowed-host", "http://mybox.local:8000"),
        ("--allowed-host", "mybox.local:8000/mcp"),
        ("--allowed-origin", "app.example.com"),
        ("--allowed-origin", "https://app.example.com/"),
    ],
)
def test_an_allowlist_entry_no_request_could_match_is_a_usage_error(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was accepted, and every request it was meant to let in was answered 421 or 403."""
    from cnki_mcp.cli.main import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser("serve").parse_args(["serve", "--transport", "http", flag, value])
    assert stop.value.code == 2 and flag in capsys.readouterr().err


def test_allowlist_entries_in_the_headers_own_form_are_kept() -> None:
    from cnki_mcp.cli.main import build_parser

    args = build_parser("serve").parse_args(
        ["serve", "--allowed-host", "mybox.local:8000", "--allowed-host", "mybox.local:*",
         "--allowed-origin", "https://app.example.com", "--allowed-origin", "http://localhost:*",
         "--allowed-origin", "tauri://localhost", "--allowed-origin", "chrome-extension://abcdefgh",
         "--allowed-origin", "vscode-webview://1a2b", "--allowed-origin", "null",
         "--allowed-origin", "HTTPS://App.Example.com"]
    )  # fmt: skip
    assert args.allowed_host == ["mybox.local:8000", "mybox.local:*"]
    # any scheme an app's web view sends, and `null`; in lower case, as browsers send the header
    assert args.allowed_origin == [
        "https://app.example.com", "http://localhost:*", "tauri://localhost", "chrome-extension://abcdefgh",
        "vscode-webview://1a2b", "null", "https://app.example.com",
    ]  # fmt: skip
