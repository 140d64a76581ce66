"""The broad-question bench's comparison (`scripts/bench_broad.py`), on hand-written runs."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def broad() -> Any:  # scripts/ is not a package: load the module from its file
    sys.path.insert(0, str(SCRIPTS))  # it imports bench and bench_policy
    spec = importlib.util.spec_from_file_location("bench_broad", SCRIPTS / "bench_broad.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(requests: int, words: list[str], top: list[str]) -> dict[str, Any]:
    return {"requests": requests, "q1_total": 900, "q1_pages": 20, "candidates": 1000, "words": words, "top": top}


def test_a_row_says_where_the_policies_agree_and_where_they_do_not(broad: Any) -> None:
    top = [f"r{i}" for i in range(20)]
    same = {name: _run(40, ["甲", "乙"], top) for name in broad.POLICIES}
    swapped = [*top[:8], top[9], top[8], *top[10:]]
    differ = {
        "default": _run(40, ["甲", "乙"], top),
        "default-feedback_start": _run(43, ["甲", "丙"], swapped),
        "default-enrichment_start": _run(41, ["甲", "乙"], top),
    }
    lines = broad._table(1000, [("q-same", same), ("q-differ", differ)]).splitlines()
    assert lines[0] == "### Target 1000"
    assert lines[-2] == "| q-same | 900 | 20 | 1000 | 40 / 40 / 40 | 甲、乙 | yes | yes | yes |"
    # the swap keeps the top 20's set but not the top 10's order
    assert lines[-1] == "| q-differ | 900 | 20 | 1000 | 40 / 43 / 41 | 甲、乙 | no | yes | no |"


@pytest.mark.parametrize("extra", [["--corpus", "diverse"], ["--pacing", "0.2,0.7"]])
def test_write_refuses_what_the_written_section_is_not_before_running_anything(
    broad: Any, extra: list[str], tmp_path: Path
) -> None:
    # the section is the unpaced comparison on `main`: a write of another run would be silently
    # dropped, or would put other figures under its heading
    parser = argparse.ArgumentParser()
    broad.add_broad_parser(parser.add_subparsers())
    out = tmp_path / "bench.md"
    args = parser.parse_args(["broad", "--write", str(out), *extra])
    with pytest.raises(SystemExit, match="--write"):
        args.func(args)
    assert not out.exists()
