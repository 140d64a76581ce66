"""tool_coerce on values no client should send: it runs before the server's error handling, so
it never raises; what it cannot read is left for validation to refuse."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.tool_coerce import coerce_object

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "items": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "n": {"type": "integer"},
    },
}


@pytest.mark.parametrize(
    "value",
    [10**400, -(10**400), float("inf"), float("nan"), "[" * 5000, "{" * 5000, "x" * 1_000_000, [[[[[]]]]], {"a": {}}],
)
def test_an_extreme_value_is_left_for_validation_and_never_raises(value: Any) -> None:
    # a JSON integer of 400 digits for a text argument raised OverflowError (INTERNAL)
    for name in SCHEMA["properties"]:
        coerce_object({name: value}, SCHEMA)


def test_a_whole_number_for_text_is_its_text_only_when_small() -> None:
    assert coerce_object({"text": 3.0}, SCHEMA) == {"text": "3"}
    assert coerce_object({"text": 10**400}, SCHEMA) == {"text": 10**400}
    assert coerce_object({"items": "A、b"}, SCHEMA) == {"items": ["a", "b"]}


LISTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        name: {"type": "array", "items": {"type": "string"}} for name in ("record_refs", "source_tiers", "document_types")
    },
}


def test_a_name_holding_a_space_is_one_item_and_ids_split_at_spaces() -> None:
    # `AMI 核心` was split into `AMI` and `核心` (any core tier): the filter silently widened
    assert coerce_object({"source_tiers": "AMI 核心"}, LISTS) == {"source_tiers": ["AMI 核心"]}
    assert coerce_object({"source_tiers": "CSSCI、 AMI 核心"}, LISTS) == {"source_tiers": ["CSSCI", "AMI 核心"]}
    assert coerce_object({"document_types": "journal article"}, LISTS) == {"document_types": ["journal article"]}
    assert coerce_object({"record_refs": "rec_1 rec_2,rec_3"}, LISTS) == {"record_refs": ["rec_1", "rec_2", "rec_3"]}
