"""stored.load / known_keys: a stored record with keys this release's models do not declare (a
newer release wrote them) is read without them, through nested models, lists, dicts, unions and
aliases; a value it cannot read still fails."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cnki_mcp.stored import known_keys, load


class Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class Node(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    leaf: Leaf
    maybe: Leaf | None = None
    many: list[Leaf] = Field(default_factory=list)
    named: dict[str, Leaf] = Field(default_factory=dict)
    free: dict[str, int] = Field(default_factory=dict)
    count: int = Field(0, alias="n")


def test_unknown_keys_are_dropped_at_every_level_and_declared_ones_kept() -> None:
    stored = {
        "leaf": {"name": "a", "new": 1},
        "maybe": {"name": "b", "new": 2},
        "many": [{"name": "c", "new": 3}],
        "named": {"k": {"name": "d", "new": 4}},
        "free": {"any key": 5},
        "n": 6,
        "added_later": True,
    }
    node = load(Node, stored)
    assert node == Node(leaf=Leaf(name="a"), maybe=Leaf(name="b"), many=[Leaf(name="c")],
                        named={"k": Leaf(name="d")}, free={"any key": 5}, count=6)  # fmt: skip
    assert known_keys(Node, {"leaf": {"name": "a"}, "x": 1}) == {"leaf": {"name": "a"}}


def test_a_record_that_validates_is_read_as_it_is_and_a_value_it_cannot_read_still_fails() -> None:
    assert load(Node, '{"leaf": {"name": "a"}, "n": 2}') == Node(leaf=Leaf(name="a"), count=2)
    with pytest.raises(ValidationError):
        load(Node, '{"leaf": {"name": 7}, "new": 1}')


def test_stored_text_that_is_not_json_is_a_validation_error() -> None:
    # It was json's JSONDecodeError (from the retry without unknown keys), which the callers
    # that skip an unreadable record (the library index rebuild at start) did not catch.
    with pytest.raises(ValidationError):
        load(Node, '{"leaf": {"name": "a"}, "n": 2')
