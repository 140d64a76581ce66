"""`stored.load_cached` (DESIGN.md "Freshness"): a cache row this release's model refuses is a miss,
logged; any other error while reading it is a bug and is raised, not turned into a miss that asks
CNKI again on every call."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel, ConfigDict, field_validator

from cnki_mcp.stored import load_cached


class _Page(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int


class _Buggy(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _broken(cls, value: str) -> str:
        raise TypeError("a bug in this release's code")


@pytest.mark.parametrize("row", ['{"count": {"retyped": 1}}', "not json at all", "[1, 2]"])
def test_a_row_the_model_refuses_is_a_logged_miss(row: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="cnki_mcp.stored"):
        assert load_cached(_Page, row) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_a_row_the_model_reads_is_returned_with_unknown_keys_dropped() -> None:
    assert load_cached(_Page, '{"count": 3, "added_later": true}') == _Page(count=3)


def test_an_error_that_is_no_refusal_of_the_row_is_raised_not_read_as_a_miss() -> None:
    with pytest.raises(TypeError):
        load_cached(_Buggy, '{"name": "x"}')
