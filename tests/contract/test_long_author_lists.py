"""A collaboration paper with thousands of authors (physics papers in CNKI's foreign databases
list ~3,000): a list of papers names its first ten, get_metadata every one (the real pipeline
on the corpus backend)."""

from __future__ import annotations

from pathlib import Path

from mcp import Client

from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.sim.corpus import Corpus
from tests.contract.server_fakes import Harness, completed_data
from tests.corpus_backend import CorpusBackend

AUTHORS = 3000
LISTED_AUTHORS = 10  # pipeline/readout.LISTED_AUTHORS, as the citation lists name
KEYWORD = "协作组测试"


def _corpus() -> Corpus:
    corpus = Corpus.load()
    for k in range(3):
        corpus.add_record({
            "id": f"big{k}", "db": "WWJD", "type": "外文期刊", "filename": f"SJES1301150999{k}",
            "title": f"Observation {k} of a new boson at the Large Hadron Collider", "source": "Physics Letters B",
            "year": 2012, "keywords": [KEYWORD], "language": "en",
            "authors": [{"name": f"Author{i}, A."} for i in range(AUTHORS)],
        })  # fmt: skip
    return corpus



async def test_lists_of_papers_name_ten_authors_and_get_metadata_all(tmp_path: Path) -> None:
    settings = Harness(tmp_path / "data", inline_wait=50.0).settings
    backend = CorpusBackend(_corpus())
    async with Client(build_server(lambda: Services.open(settings, backend=backend))) as client:
        expression = {"field": "keywords", "value": KEYWORD, "match": "exact"}
        search = await completed_data(client, "structured_search", {"expression": expression, "limit": 10})
        results = search["result"]["results"]
        assert len(results) == 3
        assert all(r["authors"] == [f"Author{i}, A." for i in range(LISTED_AUTHORS)] for r in results)
        search_id = search["result"]["search_id"]
        page = await completed_data(client, "search_results", {"search_id": search_id, "view": "compact"})
        assert [len(r["authors"]) for r in page["results"]] == [LISTED_AUTHORS] * 3
        meta = await completed_data(client, "get_metadata", {"search_id": search_id, "local_only": True, "limit": 1})
        assert len(meta["result"]["records"][0]["authors"]) == AUTHORS
