"""export_citations' file writes: a caller name up to the 240-byte limit is saved (the temporary
name must not add bytes to it), nothing but the file is left behind, and names stay one component."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from full_disk import FullDisk

from cnki_mcp.errors import CnkiError
from cnki_mcp.server.tools_cite import export_file_name, save_export


def test_a_name_at_the_byte_limit_is_saved_and_no_temporary_file_remains(tmp_path: Path) -> None:
    name = export_file_name("引" * 78 + "a", "bib")  # 235 + 4 bytes: accepted by the name check
    assert len(name.encode("utf-8")) == 239
    path = save_export(tmp_path, name, "@article{x}")
    assert path == tmp_path / "exports" / name and path.read_text(encoding="utf-8") == "@article{x}"
    assert [p.name for p in (tmp_path / "exports").iterdir()] == [name]


@pytest.mark.parametrize("pid", [os.getpid() + 1, os.getpid()], ids=["another_pid", "this_pid_again"])
def test_a_temporary_a_killed_process_left_is_removed_by_the_next_export(tmp_path: Path, pid: int) -> None:
    """Also when the killed process had this one's pid: a container's server starts as the same
    pid every time, and its killed run's temporaries were taken for this one's (review 11)."""
    (tmp_path / "exports").mkdir()
    stale = tmp_path / "exports" / f".export-{pid}-0a1b2c3d.part"
    stale.write_text("@article{half")
    save_export(tmp_path, "x.bib", "@article{x}")
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == ["x.bib"]


@pytest.mark.parametrize("bad", ["../x.bib", "a/b.bib", "C:\\x.bib", "NUL", "x\x00.bib", "COM¹.bib"])
def test_export_names_are_one_safe_component(bad: str) -> None:
    with pytest.raises(CnkiError) as info:
        export_file_name(bad, "bib")
    assert info.value.code == "INVALID_ARGUMENT"


def test_exports_are_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = save_export(tmp_path, "refs.bib", "@article{x}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_symlinked_exports_directory_is_refused_and_nothing_is_written_there(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "exports").symlink_to(outside)
    with pytest.raises(CnkiError) as info:
        save_export(data, "refs.bib", "@article{x}")
    assert info.value.code == "DATA_PATH_SYMLINK"
    assert list(outside.iterdir()) == []


def test_a_full_disk_is_a_coded_error_and_leaves_nothing_in_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk filled while the server ran: export_citations' (and citation_graph's) filename
    answered INTERNAL (a bare OSError). Now DATA_DIRECTORY_UNUSABLE with reason disk_full, no
    temporary file left, and the same name saves once there is room."""
    real_fdopen = os.fdopen
    with monkeypatch.context() as patch:
        patch.setattr(os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode)))
        with pytest.raises(CnkiError) as info:
            save_export(tmp_path, "refs.bib", "@article{x}")
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "disk_full"
    assert list((tmp_path / "exports").iterdir()) == []
    assert save_export(tmp_path, "refs.bib", "@article{x}").read_text(encoding="utf-8") == "@article{x}"

