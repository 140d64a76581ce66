"""The published schemas against the models' own: compacted input schemas accept exactly what
the full ones accept, and every value the full output schema accepts (and every error payload)
is accepted by the output envelope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cnki_mcp.errors import CnkiError, InvalidInput
from cnki_mcp.server.app import build_server
from cnki_mcp.server.errors import payload
from cnki_mcp.server.wire_schema import compact_input, output_envelope
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from tests.schema_strategies import invalid_object, valid


def _declared() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """name -> (full input schema, full output schema) as the SDK derives them from the models."""
    server = build_server(lambda: Services.open(Settings(data_dir=Path("/nonexistent"))), lazy_tools=False)
    return {t.name: (t.parameters, t.output_schema) for t in server._tool_manager.list_tools()}


DECLARED = _declared()
NAMES = sorted(DECLARED)
FUZZ = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def test_compact_input_drops_generated_titles_but_not_properties_named_title() -> None:
    full = DECLARED["read_online_html"][0]
    compact = compact_input(full)
    assert "title" in compact["properties"]  # the argument called `title` stays
    assert all("title" not in prop for prop in compact["properties"].values())
    # nullable arguments stay anyOf (portable to single-`type` dialects)
    assert compact["properties"]["title"]["anyOf"][1] == {"type": "null"}
    assert compact["properties"]["title"]["anyOf"][0]["maxLength"] == full["properties"]["title"]["anyOf"][0]["maxLength"]
    assert "default" not in compact["properties"]["title"]


@pytest.mark.parametrize("name", NAMES)
def test_compact_input_accepts_what_the_full_schema_accepts(name: str) -> None:
    full, _ = DECLARED[name]
    compact = compact_input(full)
    full_check = jsonschema.Draft202012Validator(full)
    compact_check = jsonschema.Draft202012Validator(compact)

    @FUZZ
    @given(st.one_of(valid(full), valid(compact), invalid_object(full), invalid_object(compact)))
    def same_verdict(value: Any) -> None:
        assert full_check.is_valid(value) == compact_check.is_valid(value)

    same_verdict()


@pytest.mark.parametrize("name", NAMES)
def test_the_output_envelope_accepts_every_success_value_and_the_error_payload(name: str) -> None:
    _, full = DECLARED[name]
    envelope = output_envelope(full)
    check = jsonschema.Draft202012Validator(envelope)
    for error in (InvalidInput("x", field="query"), CnkiError("内部错误")):
        assert check.is_valid(payload(error)), name

    @FUZZ
    @given(valid(full))
    def accepted(value: Any) -> None:
        assert jsonschema.Draft202012Validator(full).is_valid(value)  # the generator's own check
        assert check.is_valid(value)

    accepted()


def test_the_envelope_widens_a_field_the_error_payload_shares() -> None:
    full = {
        "type": "object",
        "properties": {
            "status": {"const": "ok", "type": "string"},
            "errors": {"type": "array", "items": {"type": "string"}},
            "result": {},
        },
        "required": ["status"],
        "additionalProperties": False,
    }
    envelope = output_envelope(full)
    assert envelope["properties"]["status"] == {"type": "string"}
    assert envelope["properties"]["errors"] == {"type": "array"}
    assert "result" not in envelope["properties"]  # Any is left out, never published as {}
    assert "required" not in envelope and "additionalProperties" not in envelope
    jsonschema.validate({"status": "ok", "errors": ["a"], "result": 3}, envelope)
    jsonschema.validate(payload(InvalidInput("x")), envelope)


def test_compact_input_copies_data_keywords_as_they_are() -> None:
    full = {
        "type": "object",
        "title": "Args",
        "properties": {
            "style": {"title": "Style", "default": {"title": "kept", "x": None}, "type": "object"},
            "kind": {"title": "Kind", "enum": [{"title": "a"}], "default": None},
        },
    }
    compact = compact_input(full)
    assert compact == {
        "type": "object",
        "properties": {
            "style": {"default": {"title": "kept", "x": None}, "type": "object"},
            "kind": {"enum": [{"title": "a"}]},
        },
    }


def test_compact_input_writes_a_value_set_used_once_in_place() -> None:
    """pydantic puts every Literal/Enum type in `$defs`; one used once costs its name twice on the
    wire (get_references' CitationType: 54 characters of the tools/list cap)."""
    full = {
        "type": "object",
        "$defs": {
            "Once": {"enum": ["a", "b"], "type": "string"},
            "Twice": {"enum": ["x", "y"], "type": "string"},
            "Options": {"properties": {"n": {"type": "integer"}}, "type": "object"},
            "Clash": {"description": "own", "enum": [1, 2], "type": "integer"},
        },
        "properties": {
            "one": {"anyOf": [{"items": {"$ref": "#/$defs/Once"}, "type": "array"}, {"type": "null"}]},
            "two": {"$ref": "#/$defs/Twice", "default": "x"},
            "too": {"anyOf": [{"$ref": "#/$defs/Twice"}, {"type": "null"}]},
            "options": {"anyOf": [{"$ref": "#/$defs/Options"}, {"type": "null"}]},
            "clash": {"$ref": "#/$defs/Clash", "description": "the argument's own"},
        },
    }
    compact = compact_input(full)
    props = compact["properties"]
    assert props["one"]["anyOf"][0]["items"] == {"enum": ["a", "b"], "type": "string"}
    assert props["two"] == {"$ref": "#/$defs/Twice", "default": "x"}  # shared: kept once
    assert props["options"]["anyOf"][0] == {"$ref": "#/$defs/Options"}  # an object keeps its name
    assert props["clash"]["$ref"] == "#/$defs/Clash"  # written in place it would lose a keyword
    assert set(compact["$defs"]) == {"Twice", "Options", "Clash"}
    check_full, check_compact = jsonschema.Draft202012Validator(full), jsonschema.Draft202012Validator(compact)
    for value in ({"one": ["a"]}, {"one": ["c"]}, {"two": "y"}, {"two": "z"}, {"clash": 2}, {"clash": 3}):
        assert check_full.is_valid(value) == check_compact.is_valid(value), value
    only_once = {"type": "object", "$defs": {"Once": full["$defs"]["Once"]}, "properties": {"a": {"$ref": "#/$defs/Once"}}}
    assert compact_input(only_once) == {"type": "object", "properties": {"a": {"enum": ["a", "b"], "type": "string"}}}


def test_published_input_schemas_name_no_value_set_they_use_once() -> None:
    for name, (full, _) in DECLARED.items():
        compact = compact_input(full)
        text = json.dumps(compact)
        for def_name in compact.get("$defs", {}):
            used = text.count(f'"#/$defs/{def_name}"')
            is_object = "properties" in compact["$defs"][def_name]
            assert used > 1 or is_object, (name, def_name)


def test_operation_envelopes_list_no_bookkeeping_field() -> None:
    """`stage`, `progress`, `requests`, ... stay in every result, out of each operation tool's
    schema in tools/list (docs/benchmarks.md §MCP surface)."""
    envelope = output_envelope(DECLARED["download_paper"][1])
    assert {"operation_id", "status", "message", "result", "next_step", "code"} <= set(envelope["properties"])
    assert not {"stage", "progress", "requests", "budget"} & set(envelope["properties"])
