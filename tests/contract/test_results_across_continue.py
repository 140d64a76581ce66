"""A partial search's pages across its `continue`: the continue ranks the candidates again (the
abstracts read since change the scores) and replaces their ranks, so offsets taken from a page read
before it skip some papers and repeat others. A page of a search that is not completed says so
(search_results `message`, get_metadata `warnings`, export_citations `message`); a completed search's pages do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from tests.contract.server_fakes import Harness, completed_data
from tests.contract.test_scope_pages import QUESTION
from tests.corpus_backend import CorpusBackend


async def _page(client: Client, search_id: str, offset: int, limit: int) -> dict[str, Any]:
    args = {"search_id": search_id, "scope": "candidates", "offset": offset, "limit": limit}
    result = await client.call_tool("search_results", args)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_pages_of_a_partial_search_say_a_continue_reranks_them_and_to_start_over(tmp_path: Path) -> None:
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    async with Client(build_server(lambda: Services.open(settings, backend=CorpusBackend()))) as client:
        started = (await client.call_tool("search", {**QUESTION, "options": {"max_requests": 2}})).structured_content
        assert isinstance(started, dict) and started["status"] == "partial", started
        search_id = started["result"]["search_id"]
        before = await _page(client, search_id, 0, 5)
        whole = await _page(client, search_id, 0, 100)  # the scope on one page: nothing to say
        assert before["next_offset"] == 5 and before["message"] and "offset=0" in before["message"]
        assert whole["next_offset"] is None and whole["message"] is None
        scoped = {"search_id": search_id, "scope": "candidates", "limit": 5, "local_only": True, "fields": ["year"]}
        metadata = await completed_data(client, "get_metadata", scoped)
        assert any("offset=0" in w for w in metadata["result"]["warnings"]), metadata["result"]["warnings"]
        export = await completed_data(client, "export_citations", {"search_id": search_id, "scope": "candidates", "limit": 5})
        assert "offset=0" in export["message"], export["message"]
        assert any("offset=0" in w for w in export["result"]["warnings"]), export["result"]
        # with a title not stored the export runs as an operation, whose ending sets the message
        located = await client.call_tool(
            "export_citations",
            {"search_id": search_id, "scope": "candidates", "limit": 5, "titles": ["本地没有的一篇论文的完整题名"]},
        )
        data = located.structured_content
        assert isinstance(data, dict) and data["status"] in ("completed", "partial") and data["operation_id"], data
        assert any("offset=0" in w for w in data["result"]["warnings"]), data["result"]
        go_on = {"action": "continue", "operation_id": started["operation_id"], "additional_requests": 600}
        resumed = await client.call_tool("operation_control", go_on)
        assert not resumed.is_error, resumed.content
        after = await _page(client, search_id, 0, 100)
        # what the note warned of: the candidates' order changed, so offset 5 of the old ranking
        # is not offset 5 of the new one
        assert [r["record_ref"] for r in whole["results"]] != [r["record_ref"] for r in after["results"]]
        page = await _page(client, search_id, 5, 5)
        assert after["status"] == page["status"] == "completed" and page["message"] is None
        metadata = await completed_data(client, "get_metadata", {**scoped, "offset": 5})
        assert metadata["result"]["warnings"] == []
        export = await completed_data(client, "export_citations", {"search_id": search_id, "scope": "candidates", "offset": 5, "limit": 5})
        assert "offset=0" not in export["message"], export["message"]
        assert export["result"]["warnings"] == []


async def test_a_page_names_its_ranking_so_a_client_sees_a_continue_reranked_between_pages(tmp_path: Path) -> None:
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    async with Client(build_server(lambda: Services.open(settings, backend=CorpusBackend()))) as client:
        started = (await client.call_tool("search", {**QUESTION, "options": {"max_requests": 2}})).structured_content
        assert isinstance(started, dict) and started["status"] == "partial", started
        search_id = started["result"]["search_id"]
        first = await _page(client, search_id, 0, 5)
        assert first["ranking"] == started["result"]["ranking"] == 1
        scoped = {"search_id": search_id, "scope": "candidates", "limit": 5, "local_only": True, "fields": ["year"]}
        assert (await completed_data(client, "get_metadata", scoped))["result"]["ranking"] == 1
        # a continue that stops partial again: the status says nothing changed, the ranking does
        go_on = {"action": "continue", "operation_id": started["operation_id"], "additional_requests": 1}
        resumed = (await client.call_tool("operation_control", go_on)).structured_content
        assert isinstance(resumed, dict) and resumed["operation"]["status"] == "partial", resumed
        assert resumed["operation"]["result"]["ranking"] == 2
        second = await _page(client, search_id, 5, 5)
        assert second["ranking"] == 2 != first["ranking"]
        metadata = await completed_data(client, "get_metadata", {**scoped, "offset": 5})
        assert metadata["result"]["ranking"] == 2
        # not given a search_id, get_metadata names no ranking
        refs = {"record_refs": [first["results"][0]["record_ref"]], "local_only": True}
        assert (await completed_data(client, "get_metadata", refs))["result"].get("ranking") is None
