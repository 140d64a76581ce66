"""The published schemas against the models' own: compacted input schemas accept exactly what
the full ones accept, and every value the full output schema accepts (and every error payload)
is accepted by the output envelope."""

from __future__ import annotations

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
