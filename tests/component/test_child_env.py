"""The environment the tests give the processes they start (tests/child_env.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.child_env import child_env
from tests.clients.support import node_env, server_env
from tests.e2e.support import serve_env


@pytest.mark.parametrize(
    "build",
    [
        child_env,
        lambda: serve_env(Path("data"), "http://127.0.0.1:9", "/usr/bin/chromium"),
        lambda: server_env(Path("data")),
        node_env,
    ],
    ids=["child_env", "e2e_serve_env", "clients_server_env", "clients_node_env"],
)
def test_a_started_server_or_client_keeps_the_suites_temp_folder_and_none_of_its_settings(
    build: Callable[[], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The e2e and contract servers were started without TMPDIR: a CI run with a private TMPDIR
    had their Chromium and Playwright temp folders in the machine's /tmp."""
    monkeypatch.setenv("TMPDIR", "/run/suite-temp")
    monkeypatch.setenv("CNKI_READ_ONLY", "1")
    env = build()
    assert env["TMPDIR"] == "/run/suite-temp"
    assert "CNKI_READ_ONLY" not in env
