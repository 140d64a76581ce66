"""`cnki-mcp … --help` speaks both languages, and every option it lists is documented: in
README's command table (its command's row) or, for setup and config, in docs/clients.md."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cnki_mcp.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND_TABLE = README.split("## 命令行", 1)[1].split("\n## ", 1)[0]
CLIENTS_MD = (ROOT / "docs" / "clients.md").read_text(encoding="utf-8")
CJK = re.compile(r"[\u4e00-\u9fff]")
# An English word, not a flag, variable or value name that a Chinese help also carries.
ENGLISH = re.compile(r"(?<![-\w])[a-z]{3,}(?![_\w])")


def _commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from _commands(child, f"{name} {sub}")


def _options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
            yield action


def _helps() -> Iterator[tuple[str, str]]:
    for name, parser in _commands(build_parser(), "cnki-mcp"):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                yield from ((f"{name} {c.dest}", c.help or "") for c in action._choices_actions)
        yield from ((f"{name} {a.option_strings or a.dest}", a.help or "") for a in _options(parser))


@pytest.mark.parametrize(("where", "text"), list(_helps()), ids=lambda v: str(v)[:60])
def test_every_help_line_is_in_chinese_and_english(where: str, text: str) -> None:
    assert CJK.search(text) and ENGLISH.search(text), f"{where}: {text!r}"


def _row(command: str) -> str:
    rows = [line for line in COMMAND_TABLE.splitlines() if line.startswith(f"| `cnki-mcp {command}")]
    return "\n".join(rows)


def test_every_option_is_documented_with_its_command() -> None:
    missing = []
    for name, parser in _commands(build_parser(), "cnki-mcp"):
        command = name.split(" ")[1] if " " in name else ""
        if not command:
            continue
        docs = CLIENTS_MD if command in ("setup", "config") else _row(command)
        for action in _options(parser):
            longs = [o for o in action.option_strings if o.startswith("--")]
            if longs and not any(o in docs for o in longs):
                missing.append(f"{name} {longs[0]}")
    assert not missing, missing


def test_no_command_is_a_usage_error_with_the_help_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """`cnki-mcp $CMD` with CMD empty in a script printed the help to stdout and exited 0."""
    from cnki_mcp.cli.main import main

    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: cnki-mcp")
