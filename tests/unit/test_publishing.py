"""The registry entry (server.json) stays in step with pyproject.toml and the README, and the
check notices when it does not (a release would otherwise fail after the version is spent)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _checker(root: Path):
    spec = importlib.util.spec_from_file_location("check_server_json", ROOT / "scripts" / "check_server_json.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    module.ROOT = root
    return module


def test_server_json_agrees_with_pyproject_and_readme() -> None:
    assert _checker(ROOT).problems() == []


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for name in ("server.json", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_a_version_that_differs_from_pyproject_is_reported(copy: Path) -> None:
    doc = json.loads((copy / "server.json").read_text(encoding="utf-8"))
    doc["packages"][0]["version"] = "9.9.9"
    (copy / "server.json").write_text(json.dumps(doc), encoding="utf-8")
    assert any("9.9.9" in p for p in _checker(copy).problems())


def test_a_readme_without_the_mcp_name_marker_is_reported(copy: Path) -> None:
    text = (copy / "README.md").read_text(encoding="utf-8")
    (copy / "README.md").write_text(text.replace("mcp-name:", "mcp name"), encoding="utf-8")
    assert any("mcp-name" in p for p in _checker(copy).problems())


def test_an_overlong_description_is_reported(copy: Path) -> None:
    doc = json.loads((copy / "server.json").read_text(encoding="utf-8"))
    doc["description"] = "x" * 101
    (copy / "server.json").write_text(json.dumps(doc), encoding="utf-8")
    assert any("100" in p for p in _checker(copy).problems())
