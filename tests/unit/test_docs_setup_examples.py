"""The `cnki-mcp setup` commands the README and docs/ show parse, and one that asks nothing
(`--yes`) also installs (`--install-client`) unless it is a `--dry-run`: with `--yes` alone setup
writes no client file, so an example presented as the way to install would leave the user with
nothing configured."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cnki_mcp.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"cnki-mcp setup(?: [^`\n]*)?")


def _unwrapped(text: str) -> str:
    """`text` with each inline code span outside fenced blocks on one line (prose wraps them)."""
    parts = text.split("```")
    for i in range(0, len(parts), 2):  # even parts are outside fences
        parts[i] = re.sub(r"`[^`]+`", lambda m: " ".join(m.group(0).split()), parts[i])
    return "```".join(parts)


def _examples() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for path in DOCS:
        for match in COMMAND.finditer(_unwrapped(path.read_text(encoding="utf-8"))):
            line = match.group(0).split("#", 1)[0].strip()
            if (path.name, line) not in found:  # a command a page shows twice is one case
                found.append((path.name, line))
    return found


def test_the_docs_show_setup_examples() -> None:
    assert any(name == "README.md" for name, _ in _examples())


@pytest.mark.parametrize(("doc", "line"), _examples())
def test_a_documented_setup_command_parses_and_a_yes_one_installs(doc: str, line: str) -> None:
    argv = shlex.split(line)[1:]
    args = build_parser("setup").parse_args(argv)
    if args.yes and not args.dry_run:
        assert args.install_client, f"{doc}: `{line}` writes no client file (--yes without --install-client)"
