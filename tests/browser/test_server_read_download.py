"""The feature tools of the server built by Services over the REAL CnkiSite and a headless Chromium
against the simulator, driven through the SDK's in-memory MCP Client: a structured search stores
papers, then read_online_html (sections, complete_article, the body cache), download_paper (a file
under downloads/ with its SHA-256, then a cache hit), read_pdf_text, export_citations of the
search and link_references locating an unknown corpus title on the simulator."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.cite import export
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.sim.server import SimServer
from tests.site_stack import sim_settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOUND = 240.0  # seconds: a hung test fails instead; never a timing assertion
READER_OPEN = "/reader"
DOWNLOAD_ORDER = "/bar/download/order"
GRID = "/kns8s/brief/grid"


class Session:
    """One in-memory client session on a server whose Services use the real site."""

    def __init__(self, client: Client, holder: dict[str, Services]) -> None:
        self.client = client
        self._holder = holder

    @property
    def services(self) -> Services:
        return self._holder["services"]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(name, args)
        data = result.structured_content
        assert data is not None, result.content
        assert not result.is_error, data
        return data

    async def finish(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Call an operation tool and long-poll until it is no longer running."""
        record = await self.call(name, args)
        while record["status"] in ("running", "awaiting_user"):
            record = await self.call(
                "operation_status", {"operation_id": record["operation_id"], "wait_seconds": 50}
            )
        assert record["status"] == "completed", record
        return record


@asynccontextmanager
async def serve(sim_server: SimServer, tmp_path: Path, browser_executable: str) -> AsyncIterator[Session]:
    """The server with production Services on the simulator (entered in the test's own task:
    the SDK's client must be opened and closed in one task)."""
    settings = sim_settings(
        tmp_path / "data", sim_server.origin, browser_executable, inline_wait_seconds=50.0
    )
    holder: dict[str, Services] = {}

    def open_services() -> Services:
        holder["services"] = Services.open(settings)
        return holder["services"]

    async with asyncio.timeout(BOUND), Client(build_server(open_services)) as client:
        yield Session(client, holder)
    assert holder["services"].closed


async def stored_by_title(s: Session, title: str) -> tuple[str, str]:
    """(search_id, record_ref) of a structured search for `title` (list only, no detail page)."""
    record = await s.finish(
        "structured_search", {"expression": {"field": "title", "value": title, "match": "exact"}, "limit": 10}
    )
    summary = record["result"]
    refs = [r["record_ref"] for r in summary["results"] if r["title"] == title]
    assert len(refs) == 1, summary["results"]
    return summary["search_id"], refs[0]


async def test_read_download_pdf_text_and_export_through_the_mcp_client(
    sim_server: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with serve(sim_server, tmp_path, browser_executable) as session:
        await read_download_export(session, sim_server)


async def read_download_export(session: Session, sim_server: SimServer) -> None:
    rec = sim_server.corpus.by_id["r0001"]
    search_id, ref = await stored_by_title(session, rec.title)
    assert session.services.host.started

    read = await session.finish("read_online_html", {"record_ref": ref})
    body = read["result"]
    assert read["kind"] == "read" and read["budget"]["max_requests"] == 60
    assert body["record_ref"] == ref and body["source"] == "reader" and body["trial"] is False
    assert body["complete_article"] is None  # complete as far as can be seen, never "proven"
    assert read["next_step"] is None
    assert len(body["sections"]) >= 2 and body["text"] and body["coverage"]["missing_catalog_headings"] == []
    assert "invoice" not in json.dumps(read, ensure_ascii=False)
    second = body["sections"][1]
    part = await session.finish("read_online_html", {"record_ref": ref, "section": second["title"]})
    assert part["result"]["source"] == "cache" and part["requests"] == 0
    assert part["result"]["section"]["title"] == second["title"]
    assert part["result"]["text"] == body["text"][second["offset"] : second["offset"] + second["length"]][:20_000]

    got = await session.finish("download_paper", {"record_ref": ref})
    file = got["result"]
    path = Path(file["path"])
    downloads = session.services.settings.data_dir / "downloads"
    assert got["kind"] == "download" and got["budget"]["max_requests"] == 30
    assert file["source"] == "download" and file["format"] == "pdf" and path.parent == downloads
    assert hashlib.sha256(path.read_bytes()).hexdigest() == file["sha256"] and file["bytes"] == path.stat().st_size
    # the read's HTML阅读 entry goes through the order endpoint too (type html), as on the site
    clicks = [e.params["type"] for e in sim_server.requests_for(DOWNLOAD_ORDER, "GET")]
    assert clicks == ["html", "pdf"]

    text = await session.call("read_pdf_text", {"record_ref": ref, "pages": "1"})
    assert text["pages_returned"] == [1] and rec.title in text["text"].replace("\n", "")

    again = await session.finish("download_paper", {"record_ref": ref})
    assert again["result"]["source"] == "cache" and again["result"]["path"] == file["path"]
    assert again["requests"] == 0 and len(sim_server.requests_for(DOWNLOAD_ORDER, "GET")) == len(clicks)

    grids = len(sim_server.requests_for(GRID))
    exported = await session.call("export_citations", {"search_id": search_id, "format": "gbt7714"})
    view = exported["result"]
    assert exported["operation_id"] is None and len(sim_server.requests_for(GRID)) == grids  # local
    paper = session.services.store.get(ref)
    assert paper is not None
    expected = export(
        [{"record_ref": ref, "title": paper.title, "authors": paper.author_names(), "source": paper.source,
          "year": paper.year, "date": paper.date, "doc_type": paper.doc_type, "url": None,
          "volume": paper.volume, "issue": paper.issue, "pages": paper.pages, "doi": paper.doi}],
        "gbt7714",
    )  # fmt: skip
    assert view["count"] == 1 and view["text"] == expected.text and rec.title in view["text"]
    assert "v=" not in view["text"]  # the detail link's token expires: never in a reference list

    trial_rec = sim_server.corpus.by_id["r0002"]  # not stored yet: located by title
    assert session.services.store.find_by_title_key(trial_rec.title) == []
    sim_server.set_scenario({"faults": [{"path": "/bar/htmlread", "kind": "trial_reader"}]})
    trial = await session.finish("read_online_html", {"title": trial_rec.title})
    assert trial["result"]["trial"] is True and trial["result"]["complete_article"] is False
    # a trial read says how to get the whole text: log in, or the file and its text
    assert all(call in (trial["next_step"] or "") for call in ("login", "download_paper", "read_pdf_text"))
    (located,) = session.services.store.find_by_title_key(trial_rec.title)
    assert trial["result"]["record_ref"] == located.record_ref and len(sim_server.requests_for(GRID)) == grids + 1


async def test_link_references_looks_up_a_corpus_title_only_when_asked(
    sim_server: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    async with serve(sim_server, tmp_path, browser_executable) as session:
        await link_with_lookup(session, sim_server)


async def link_with_lookup(session: Session, sim_server: SimServer) -> None:
    rec = sim_server.corpus.by_id["r0002"]
    text = f"参见《{rec.title}》。"
    local = await session.call("link_references", {"text": text})
    assert local["result"]["references"][0]["status"] == "unresolved"
    assert not sim_server.requests_for(GRID) and not session.services.host.started

    looked = await session.finish("link_references", {"text": text, "lookup_missing": True})
    assert looked["kind"] == "links" and looked["budget"]["max_requests"] == 200
    (reference,) = looked["result"]["references"]
    assert reference["status"] == "linked" and len(reference["record_refs"]) == 1
    assert f"[《{rec.title}》]({reference['url']})" in looked["result"]["text"]
    assert looked["requests"] >= 1 and len(sim_server.requests_for(GRID)) >= 1
    stored = session.services.store.get(reference["record_refs"][0])
    assert stored is not None and stored.title == rec.title
