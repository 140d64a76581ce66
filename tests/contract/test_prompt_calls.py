"""The wait the prompts and the search tool's description prescribe, made as a model would make
it: the `operation_status(...)` call written there, with the search's own operation_id where the
text names one, answers that search. Every search result carries an operation_id (a completed
one too), and `operation_status` without one answers `idle` once the search is done (or, on a
shared HTTP server, another session's newest running operation)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.server.app import build_server
from tests.contract.server_fakes import Harness

WAIT_CALL = re.compile(r"operation_status\(([^()]*)\)")


def wait_arguments(text: str, operation_id: str) -> dict[str, Any]:
    """The arguments of the first operation_status call in `text`, as a model fills them in for
    `operation_id` (an `operation_id` argument gets the id, whatever placeholder it shows)."""
    call = WAIT_CALL.search(text)
    assert call is not None, f"no operation_status(...) call in: {text}"
    arguments: dict[str, Any] = {}
    for part in call.group(1).split(","):
        key, _, value = (s.strip() for s in part.partition("="))
        if key == "operation_id":
            arguments[key] = operation_id
        elif key == "wait_seconds":
            arguments[key] = float(value)
        elif key:
            raise AssertionError(f"operation_status has no argument {key!r}: {text}")
    return arguments


def test_wait_arguments_reads_the_call_as_written() -> None:
    assert wait_arguments("用 operation_status(wait_seconds=50) 等待", "op_1") == {"wait_seconds": 50.0}
    assert wait_arguments("用 operation_status(operation_id, wait_seconds=50)", "op_1") == {
        "operation_id": "op_1",
        "wait_seconds": 50.0,
    }


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data", inline_wait=5.0)


@pytest.mark.parametrize("source", ["research_topic", "literature_review", "search"])
async def test_the_prescribed_wait_answers_the_search_that_was_started(h: Harness, source: str) -> None:
    async with Client(build_server(h.open)) as client:
        if source == "search":
            tools = {t.name: t for t in (await client.list_tools()).tools}
            text = tools["search"].description or ""
        else:
            text = (await client.get_prompt(source, {"topic": "分层作业"})).messages[0].content.text
        args = {"query": "分层作业的效果", "concept_groups": [["分层作业"], ["效果"]]}
        started = (await client.call_tool("search", args)).structured_content
        assert started["status"] == "completed" and started["operation_id"]
        waited = (await client.call_tool("operation_status", wait_arguments(text, started["operation_id"])))
    got = waited.structured_content
    assert (got["operation_id"], got["status"]) == (started["operation_id"], "completed"), source
    assert got["result"]["search_id"] == started["result"]["search_id"]
