"""The citation tools through the MCP server in memory, on the simulator's citation API in process
(CorpusBackend): two clients asking for one list at once make each request once, because the
server gives all its operations one in-flight map (`Services.citation_flights`)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from mcp import Client

from cnki_mcp.parse.citations import CitationItem
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from cnki_mcp.site.backend import SiteOp
from tests.corpus_backend import CorpusBackend, CorpusLinks

LONG = "r0306"  # 25 papers cite it, 19 of them journal papers


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
