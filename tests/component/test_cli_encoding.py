"""The command line on a terminal or pipe whose encoding cannot hold Chinese (a latin-1 locale,
PYTHONIOENCODING=ascii): the text comes out escaped and the command does what it does, instead of
a UnicodeEncodeError traceback and exit code 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, encoding: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CNKI_")}
    env["PYTHONIOENCODING"] = encoding
    return subprocess.run(
        [sys.executable, "-m", "cnki_mcp", *args], cwd=REPO, env=env, capture_output=True, timeout=120
    )


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("args", [("--help",), ("schema",), ("config", "--list")])
def test_commands_print_escaped_text_without_a_traceback(encoding: str, args: tuple[str, ...]) -> None:
    done = run(*args, encoding=encoding)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-400:]
    assert done.stdout.strip()


def test_a_gbk_terminal_gets_the_characters_gbk_lacks_escaped(tmp_path: Path) -> None:
    """GBK holds Chinese but not CO₂'s subscript: `parse` of a saved page with such a title (and a
    cron `watch check` digest of one) ended in a traceback under a GBK locale."""
    page = tmp_path / "detail.html"
    page.write_text("<html><body><h1>CO₂排放研究</h1></body></html>", encoding="utf-8")
    done = run("parse", "detail", str(page), encoding="gbk")
    assert b"Traceback" not in done.stderr, done.stderr[-400:]
    assert done.returncode == 0 and b"\\u2082" in done.stdout
