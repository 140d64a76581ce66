"""A client config that cannot be read is CONFIG_INVALID with the line and column of the problem
(details `line`, `column`), never an internal token name or a raw decoder exception; the file is
not rewritten (the merges are pure: text in, error out)."""

from __future__ import annotations

import pytest

from cnki_mcp.cli.configfile import merge_jsonc, merge_yaml_map
from cnki_mcp.errors import ConfigInvalid

ENTRY = {"type": "stdio", "command": "/opt/cnki/bin/cnki-mcp", "args": ["serve"]}

# (VS Code mcp.json with a comment, so the JSONC reader handles it) -> (line, column) of the fault
JSONC_CASES = {
    "missing comma": ('{\n  // mine\n  "servers": {\n    "a": {}\n    "b": {}\n  }\n}\n', (5, 5)),
    "missing colon": ('{\n  // mine\n  "servers" {}\n}\n', (3, 13)),
    "single quotes": ("{\n  // mine\n  'servers': {}\n}\n", (3, 3)),
    "unquoted key": ("{\n  // mine\n  servers: {}\n}\n", (3, 3)),
    "key expected": ('{\n  // mine\n  "servers": {,}\n}\n', (3, 15)),
    "truncated": ('{\n  // mine\n  "servers": {\n', (3, 15)),
    "unterminated string": ('{\n  // mine\n  "servers": "abc\n}\n', (3, 14)),
    "unterminated comment": ('{\n  /* mine\n  "servers": {}\n}\n', (2, 3)),
    "content after the object": ("{ // mine\n}\n{}\n", (3, 1)),
    "missing value": ('{\n  // mine\n  "servers": }\n', (3, 14)),
}


@pytest.mark.parametrize("name", list(JSONC_CASES))
def test_unreadable_jsonc_names_line_and_column(name: str) -> None:
    text, (line, column) = JSONC_CASES[name]
    with pytest.raises(ConfigInvalid) as info:
        merge_jsonc(text, "servers", "cnki", ENTRY)
    assert info.value.code == "CONFIG_INVALID"
    assert (info.value.details.get("line"), info.value.details.get("column")) == (line, column)


@pytest.mark.parametrize(
    "text",
    [
        '{ // mine\n  "a\\x": 1\n}\n',  # a key with an invalid escape (json.loads raised out of the parser)
        '{ // mine\n  "servers": {"cnki": "\\q"}\n}\n',
        '{ // mine\n  "servers": {"cnki": "a\tb"}\n}\n',  # a raw tab inside a string
    ],
)
def test_an_invalid_string_in_jsonc_is_config_invalid_not_a_decoder_crash(text: str) -> None:
    with pytest.raises(ConfigInvalid) as info:
        merge_jsonc(text, "servers", "cnki", ENTRY)
    assert info.value.details.get("line") == 2


def test_unreadable_yaml_names_line_and_column() -> None:
    text = "# goose\nextensions:\n  developer: [1,\n"
    with pytest.raises(ConfigInvalid) as info:
        merge_yaml_map(text, "extensions", "cnki", {"name": "cnki"})
    assert info.value.details.get("line") == 4 and info.value.details.get("column") == 1
