"""`cnki-mcp schema -o FILE`: a path that cannot be written is a typed error (exit 2), not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.cli.main import main


def test_schema_to_a_path_that_cannot_be_written_is_a_typed_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for target in (tmp_path / "no" / "such" / "s.json", tmp_path):  # a missing folder, and a folder
        code = main(["schema", "-o", str(target)])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and err.startswith("错误 INVALID_ARGUMENT"), err


def test_schema_to_dash_is_standard_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o -` wrote a file named `-` in the current folder."""
    monkeypatch.chdir(tmp_path)
    assert main(["schema", "-o", "-"]) == 0
    assert '"tools"' in capsys.readouterr().out and not (tmp_path / "-").exists()
