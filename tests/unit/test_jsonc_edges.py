"""JSONC merges where the file is legal but unusual: what the client reads decides where the
cnki entry goes (the last of duplicated keys; `null` for the servers object, as `merge_json` does)."""

from __future__ import annotations

from cnki_mcp.cli.configfile import merge_json, merge_jsonc
from cnki_mcp.cli.jsonc import loads

ENTRY = {"type": "stdio", "command": "/opt/cnki/bin/cnki-mcp", "args": ["serve"]}


def test_duplicated_servers_key_gets_the_entry_in_the_copy_the_client_reads() -> None:
    text = '{\n  // mine\n  "servers": {"old": {}},\n  "servers": {"x": {"command": "x"}}\n}\n'
    merged = merge_jsonc(text, "servers", "cnki", ENTRY)
    assert loads(merged)["servers"] == {"x": {"command": "x"}, "cnki": ENTRY}  # last duplicate wins
    assert merge_jsonc(merged, "servers", "cnki", ENTRY) == merged


def test_null_servers_in_a_commented_file_is_replaced_like_in_plain_json() -> None:
    commented = '{\n  // mine\n  "theme": "dark",\n  "servers": null\n}\n'
    merged = merge_jsonc(commented, "servers", "cnki", ENTRY)
    assert "// mine" in merged
    assert loads(merged) == {"theme": "dark", "servers": {"cnki": ENTRY}}
    plain = '{"theme": "dark", "servers": null}'
    assert loads(merge_json(plain, "servers", "cnki", ENTRY)) == loads(merged)


def test_null_on_a_nested_servers_key_is_replaced() -> None:
    text = '{\n  // zcode\n  "mcp": null,\n}\n'
    assert loads(merge_jsonc(text, "mcp.servers", "cnki", ENTRY)) == {"mcp": {"servers": {"cnki": ENTRY}}}
