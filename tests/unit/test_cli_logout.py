"""`cnki-mcp logout` deletes what keeps the CNKI login (browser profile, session cookies and their
leftover temporaries) and nothing else, and never while a server holds the data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.cli.main import main
from cnki_mcp.store.db import acquire_lock


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "data"
    (root / "browser-profile" / "Default").mkdir(parents=True)
    (root / "browser-profile" / "Default" / "Cookies").write_bytes(b"SQLite format 3\x00")
    (root / "session-cookies.json").write_text('{"version": 1, "cookies": []}', encoding="utf-8")
    (root / ".session-cookies.json.4242.tmp").write_text("{}", encoding="utf-8")  # a write killed midway
    (root / "downloads").mkdir()
    (root / "downloads" / "paper.pdf").write_bytes(b"%PDF-1.7\n")
    (root / "exports").mkdir()
    (root / "exports" / "refs.bib").write_text("@article{x}", encoding="utf-8")
    (root / "cnki.sqlite3").write_bytes(b"")
    monkeypatch.setenv("CNKI_DATA_DIR", str(root))
    return root


def test_logout_deletes_the_profile_and_the_session_cookies_and_keeps_the_library(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["logout"]) == 0
    assert not (data / "browser-profile").exists()
    assert not (data / "session-cookies.json").exists()
    assert not (data / ".session-cookies.json.4242.tmp").exists()
    for kept in ("cnki.sqlite3", "downloads/paper.pdf", "exports/refs.bib"):
        assert (data / kept).is_file(), kept
    assert "browser-profile/" in capsys.readouterr().out

    assert main(["logout"]) == 0  # nothing left to delete: still a success


def test_logout_refuses_while_a_server_holds_the_data_directory(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = acquire_lock(data, 0.05)
    try:
        assert main(["logout"]) == 2
    finally:
        lock.release()
    assert "DATA_DIRECTORY_IN_USE" in capsys.readouterr().err
    assert (data / "browser-profile" / "Default" / "Cookies").exists()
    assert (data / "session-cookies.json").exists()


def test_logout_never_follows_a_symlinked_profile(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the product's", encoding="utf-8")
    (data / "browser-profile" / "Default" / "Cookies").unlink()
    (data / "browser-profile" / "Default").rmdir()
    (data / "browser-profile").rmdir()
    (data / "browser-profile").symlink_to(elsewhere)
    assert main(["logout"]) == 2
    assert "DATA_PATH_SYMLINK" in capsys.readouterr().err
    assert (elsewhere / "keep.txt").exists()


def test_logout_of_a_data_directory_that_does_not_exist_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CNKI_DATA_DIR", str(tmp_path / "never"))
    assert main(["logout"]) == 0
    assert not (tmp_path / "never").exists()
