"""The citation tools through the MCP server in memory, on the simulator's citation API in process
(CorpusBackend): two clients asking for one list at once make each request once, because the
server gives all its operations one in-flight map (`Services.citation_flights`); a graph written
to a file (`filename`) answers its counts and the path, never replaces a file, and is refused in
read-only mode."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.jobs import OperationKind
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.operations import DEFAULT_BUDGETS
from cnki_mcp.parse.citations import CitationItem
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from cnki_mcp.site.backend import SiteOp
from tests.corpus_backend import CorpusBackend, CorpusLinks

LONG = "r0306"  # 25 papers cite it, 19 of them journal papers
NS = {"g": "http://graphml.graphdrawing.org/xmlns"}


class HeldCounts(CorpusBackend):
    """The first counts request waits until the test releases it, so a second operation asks for
    the same paper while the first one's request is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.asked = asyncio.Event()

    async def citation_metrics(self, detail_url: str, op: SiteOp | None = None) -> dict[str, int]:
        if not self.asked.is_set():
            self.asked.set()
            await self.release.wait()
        return await super().citation_metrics(detail_url, op)


async def _finished(client: Client, op_id: str) -> dict[str, Any]:
    while True:
        got = (await client.call_tool("operation_status", {"operation_id": op_id, "wait_seconds": 30})).structured_content
        if got["status"] != "running":
            return got


async def test_two_clients_asking_for_one_list_at_once_send_each_request_once(tmp_path: Path) -> None:
    backend = HeldCounts()
    settings = Settings(data_dir=tmp_path / "data", inline_wait_seconds=0.05, request_interval_ms=0)
    services = Services.open(settings, backend=backend)
    rec = backend.corpus.by_id[LONG]
    item = CitationItem(title=rec.title, filename=rec.native_filename, detail_url=CorpusLinks().detail(rec.id))
    services.store.save_citation_node(item, services.clock.now())
    args = {"paper": rec.native_filename, "types": ["journal"], "limit": 50}
    async with Client(build_server(lambda: services)) as client:
        first = (await client.call_tool("get_citing", args)).structured_content
        await backend.asked.wait()
        second = (await client.call_tool("get_citing", args)).structured_content
        assert first["status"] == second["status"] == "running"
        backend.release.set()
        done = [await _finished(client, first["operation_id"]), await _finished(client, second["operation_id"])]
    assert [d["status"] for d in done] == ["completed", "completed"]
    assert [d["result"]["total"] for d in done] == [19, 19]
    assert backend.requests["citation_metrics"] == 1
    assert max(Counter(backend.citation_calls).values()) == 1


def _open(tmp_path: Path, backend: CorpusBackend, **settings: Any) -> Services:
    services = Services.open(Settings(data_dir=tmp_path / "data", inline_wait_seconds=50, request_interval_ms=0,
                                      **settings), backend=backend)  # fmt: skip
    rec = backend.corpus.by_id[LONG]
    item = CitationItem(title=rec.title, filename=rec.native_filename, detail_url=CorpusLinks().detail(rec.id))
    services.store.save_citation_node(item, services.clock.now())
    return services


async def test_a_graph_written_to_a_file_answers_its_counts_and_the_path(tmp_path: Path) -> None:
    backend = CorpusBackend()
    services = _open(tmp_path, backend)
    seed = backend.corpus.by_id[LONG].native_filename
    args = {"seeds": [seed], "direction": "citing", "format": "graphml", "filename": "网络"}
    async with Client(build_server(lambda: services)) as client:
        done = (await client.call_tool("citation_graph", args)).structured_content
        assert done["status"] == "completed", done
        result = done["result"]
        path = Path(result["path"])
        assert path == tmp_path / "data" / "exports" / "网络.graphml"
        root = ET.fromstring(path.read_bytes())
        assert len(root.findall(".//g:node", NS)) == result["node_count"] == 26
        assert len(root.findall(".//g:edge", NS)) == result["edge_count"] == 25
        assert result["omitted"] is True and result["export"] is None and result["graph"]["edges"] == []
        again = await client.call_tool("citation_graph", args)  # the file is never replaced
        assert again.is_error and json.loads(again.content[0].text)["code"] == "FILE_EXISTS"
    # the 12 first pages and the journal list's second: the second call was refused before any request
    assert backend.requests["citation_list"] == 13


async def test_read_only_mode_refuses_a_graph_file(tmp_path: Path) -> None:
    services = _open(tmp_path, CorpusBackend(), read_only=True)
    seed = CorpusBackend().corpus.by_id[LONG].native_filename
    async with Client(build_server(lambda: services)) as client:
        refused = await client.call_tool("citation_graph", {"seeds": [seed], "filename": "g"})
    assert refused.is_error and json.loads(refused.content[0].text)["code"] == "READ_ONLY_MODE"


async def test_a_partial_graph_writes_its_file_when_continue_finishes_it(tmp_path: Path) -> None:
    backend = CorpusBackend()
    services = _open(tmp_path, backend)
    seed = backend.corpus.by_id[LONG].native_filename
    args = {"seeds": [seed], "direction": "citing", "filename": "g", "max_requests": 5}
    async with Client(build_server(lambda: services)) as client:
        first = (await client.call_tool("citation_graph", args)).structured_content
        assert first["status"] == "partial" and first["result"]["path"] is None
        assert not (tmp_path / "data" / "exports" / "g.json").exists() and first["result"]["warnings"]
        op = {"action": "continue", "operation_id": first["operation_id"], "additional_requests": 50}
        done = (await client.call_tool("operation_control", op)).structured_content["operation"]
    assert done["status"] == "completed" and done["result"]["path"] == str(tmp_path / "data" / "exports" / "g.json")
    written = json.loads((tmp_path / "data" / "exports" / "g.json").read_text(encoding="utf-8"))
    assert len(written["nodes"]) == done["result"]["node_count"] == 26


async def test_a_list_longer_than_the_budget_is_read_by_calling_again_as_next_step_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = DEFAULT_BUDGETS[OperationKind.CITATIONS].model_copy(update={"max_requests": 5})
    monkeypatch.setitem(DEFAULT_BUDGETS, OperationKind.CITATIONS, small)
    backend = CorpusBackend()
    services = _open(tmp_path, backend)
    args = {"paper": backend.corpus.by_id[LONG].native_filename, "offset": 10, "limit": 10}
    async with Client(build_server(lambda: services)) as client:
        calls = [(await client.call_tool("get_citing", args)).structured_content]
        assert calls[0]["status"] == "partial" and calls[0]["errors"][0]["code"] == "BUDGET_EXHAUSTED"
        assert "get_citing" in (calls[0]["next_step"] or "")  # no checkpoint: not `continue`
        while calls[-1]["status"] == "partial" and len(calls) < 5:
            calls.append((await client.call_tool("get_citing", args)).structured_content)
    done = calls[-1]
    assert done["status"] == "completed" and done["result"]["total"] == 25 and len(done["result"]["items"]) == 10
    assert max(Counter(backend.citation_calls).values()) == 1  # each call went on where the last stopped


async def test_a_listed_paper_already_stored_carries_the_record_ref_the_other_tools_take(tmp_path: Path) -> None:
    backend = CorpusBackend()
    services = _open(tmp_path, backend)
    citing = backend.corpus.citing(LONG)
    known = citing[0]
    row = GridRow(
        title=known.title, authors=[a.name for a in known.authors], source=known.source, year=known.year,
        doc_type=known.type, native=NativeId(dbname=known.db, filename=known.native_filename),
        detail_url=CorpusLinks().detail(known.id),
    )  # fmt: skip
    [paper] = services.store.upsert_from_grid([row], services.clock.now())
    args = {"paper": backend.corpus.by_id[LONG].native_filename, "limit": 50}
    async with Client(build_server(lambda: services)) as client:
        listed = (await client.call_tool("get_citing", args)).structured_content
        assert listed["status"] == "completed", listed
        items = {i["filename"]: i for i in listed["result"]["items"]}
        assert items[known.native_filename]["record_ref"] == paper.record_ref
        assert sum(1 for i in items.values() if i["record_ref"] is None) == len(citing) - 1
        # the listed record_ref goes on as it stands
        ref = items[known.native_filename]["record_ref"]
        meta = (await client.call_tool("get_metadata", {"record_refs": [ref], "local_only": True})).structured_content
        assert meta["status"] == "completed" and meta["result"]["records"][0]["title"] == known.title
        exported = await client.call_tool("export_citations", {"record_refs": [ref]})
        assert not exported.is_error and exported.structured_content["result"]["count"] == 1


async def test_the_citation_tools_take_a_paper_by_the_url_or_title_the_other_tools_showed(tmp_path: Path) -> None:
    backend = CorpusBackend()
    services = _open(tmp_path, backend)
    rec = backend.corpus.by_id[LONG]
    row = GridRow(
        title=rec.title, authors=[a.name for a in rec.authors], source=rec.source, year=rec.year, doc_type=rec.type,
        native=NativeId(dbname=rec.db, filename=rec.native_filename), detail_url=CorpusLinks().detail(rec.id),
    )  # fmt: skip
    [paper] = services.store.upsert_from_grid([row], services.clock.now())
    assert paper.public_url
    async with Client(build_server(lambda: services)) as client:
        totals = []
        for form in (paper.record_ref, paper.public_url, rec.title, f"《{rec.title}》"):
            done = (await client.call_tool("get_citing", {"paper": form, "limit": 1})).structured_content
            assert done["status"] == "completed", (form, done)
            totals.append((done["result"]["paper"]["record_ref"], done["result"]["total"]))
        assert totals == [(paper.record_ref, 25)] * 4
        # a listed entry's url goes on as well, stored or not
        listed = (await client.call_tool("get_citing", {"paper": paper.record_ref, "limit": 1})).structured_content
        entry = listed["result"]["items"][0]
        refs = (await client.call_tool("get_references", {"paper": entry["url"]})).structured_content
        assert refs["status"] == "completed" and refs["result"]["paper"]["filename"] == entry["filename"]
        graph = {"seeds": [paper.public_url], "direction": "citing", "max_nodes": 5}
        assert (await client.call_tool("citation_graph", graph)).structured_content["status"] == "completed"
        path = {"source": f"《{rec.title}》", "target": entry["url"], "direction": "citing", "max_depth": 1}
        found = (await client.call_tool("find_citation_path", path)).structured_content
        assert found["status"] == "completed" and found["result"]["found"] is True
        before = sum(backend.requests.values())
        unknown = await client.call_tool("get_citing", {"paper": "《没有保存过的一篇文献》"})
    error = json.loads(unknown.content[0].text)
    assert unknown.is_error and error["code"] == "DOCUMENT_NOT_FOUND"
    assert error["details"]["next_step"] == "get_metadata(titles=['没有保存过的一篇文献'])"
    assert sum(backend.requests.values()) == before


@pytest.mark.parametrize(
    "handle", ["rec_0123456789abcdef01234567", "FXYJ201906001", "https://doi.org/10.1000/xyz", "10.1000/xyz"]
)
async def test_an_unknown_handle_is_not_sent_to_a_title_search(tmp_path: Path, handle: str) -> None:
    # a record_ref, file name, link or DOI the store does not hold was answered with next_step
    # get_metadata(titles=['rec_…']): a request that can never find the paper
    services = _open(tmp_path, CorpusBackend())
    async with Client(build_server(lambda: services)) as client:
        unknown = await client.call_tool("get_citing", {"paper": handle})
    error = json.loads(unknown.content[0].text)
    assert unknown.is_error and error["code"] == "DOCUMENT_NOT_FOUND"
    assert "next_step" not in error["details"]


async def test_a_graph_node_id_given_as_a_paper_is_refused_naming_the_nodes_filename(tmp_path: Path) -> None:
    backend = CorpusBackend()
    services = _open(tmp_path, backend)
    seed = backend.corpus.by_id[LONG].native_filename
    async with Client(build_server(lambda: services)) as client:
        before = await client.call_tool("find_citation_path", {"source": "n2", "target": seed})
        graph = (await client.call_tool("citation_graph", {"seeds": [seed], "direction": "citing"})).structured_content
        node = next(n for n in graph["result"]["graph"]["nodes"] if n["id"] == "n2")
        refused = await client.call_tool("find_citation_path", {"source": "n2", "target": seed, "max_depth": 1})
        error = json.loads(refused.content[0].text)
        assert refused.is_error and error["code"] == "DOCUMENT_NOT_FOUND"
        assert error["details"]["filename"] == node["filename"]
        assert error["details"]["graph_operation_id"] == graph["operation_id"]
        step = f"find_citation_path(source='{node['filename']}', target='{seed}', direction='both', max_depth=1)"
        assert error["details"]["next_step"] == step
        sent = {"source": node["filename"], "target": seed, "direction": "both", "max_depth": 1}
        found = (await client.call_tool("find_citation_path", sent)).structured_content
    assert found["status"] == "completed" and found["result"]["found"] is True
    # before any graph: no filename to name, the message still says what to send
    first = json.loads(before.content[0].text)
    assert before.is_error and first["code"] == "DOCUMENT_NOT_FOUND" and "filename" not in first["details"]
