"""`doctor`'s check of the `cnki-mcp` command on PATH: ours, another environment's copy of
ours, or another project's (the PyPI name `cnki-mcp` belongs to someone else)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from cnki_mcp.cli.path_owner import owners_via_subprocess, path_owner, shebang_interpreter


def _judge(found: str | None, owners: list[str] | None, *, own: str = "/venv/bin/cnki-mcp"):
    return path_owner(
        found=found,
        own_script=own,
        same_file=lambda a, b: a == b,
        read_head=lambda _p: b"#!/other/bin/python3\nimport sys\n",
        owners_of=lambda interp: owners if interp == "/other/bin/python3" else None,
    )


def test_no_command_on_path_is_fine() -> None:
    assert _judge(None, None).ok


def test_our_own_script_on_path_is_fine() -> None:
    got = _judge("/venv/bin/cnki-mcp", ["cnki-mcp"])
    assert got.ok and "本安装" in got.detail


def test_another_environment_of_our_distribution_is_fine() -> None:
    assert _judge("/other/bin/cnki-mcp", ["cnki_research.mcp"]).ok


def test_a_stranger_distribution_on_path_is_a_warning_naming_it() -> None:
    got = _judge("/other/bin/cnki-mcp", ["cnki-mcp"])
    assert not got.ok
    assert "cnki-mcp" in got.detail and got.hint


def test_an_unknown_owner_is_not_a_warning() -> None:
    assert _judge("/other/bin/cnki-mcp", None).ok


@pytest.mark.parametrize(
    ("head", "want"),
    [
        (b"#!/opt/venv/bin/python3\n", "/opt/venv/bin/python3"),
        (b'#!"C:\\Program Files\\Py\\python.exe"\r\nrest', "C:\\Program Files\\Py\\python.exe"),
        (b"#!/usr/bin/env python3\n", "python3"),
        (b"MZ\x90\x00launcher...#!C:\\Py\\python.exe\r\nPK\x03\x04zip", "C:\\Py\\python.exe"),
        (b"\x7fELF binary", None),
    ],
)
def test_shebang_interpreter_reads_scripts_and_windows_launchers(head: bytes, want: str | None) -> None:
    assert shebang_interpreter(head) == want


def test_owners_are_asked_of_the_script_interpreter(tmp_path: Path) -> None:
    """A real subprocess: this test's interpreter lists the distributions that declare a
    `cnki-mcp` console script; in the project's environment that is ours."""
    got = owners_via_subprocess(sys.executable)
    assert got is not None
    assert "cnki-research-mcp" in [n.lower() for n in got]


def test_a_failing_interpreter_gives_no_owner(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert owners_via_subprocess(str(fake)) is None
    assert os.path.exists(fake)
