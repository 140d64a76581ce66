"""The generated labelled corpus (scripts/gen_big_corpus.py) for the tests that need one: scripts/
is not a package, so the generator is loaded from its file."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

GENERATOR = Path(__file__).resolve().parents[1] / "scripts" / "gen_big_corpus.py"


def corpus_generator() -> Any:
    """The generator module (`generate(out, variant, scale)`, `GENERATOR_VERSION`, ...)."""
    spec = importlib.util.spec_from_file_location("gen_big_corpus", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_corpus(out: Path, variant: str = "main", scale: float = 1.0) -> Path:
    """`variant` at `scale` written into `out` (records, journals, questions, growth questions)."""
    corpus_generator().generate(out, variant, scale)
    return out
