"""A raw question's planning never stalls the event loop: the segmenter's dictionary (about 1.1 s
of CPU on its first use in a process) loads in a worker thread while other calls are answered
(DESIGN.md "Ranking cost"). The production stack: `Services` with its own research pipeline, on
the bundled corpus (`tests/corpus_backend.py`); only the segmenter's load is held back."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from mcp import Client

from cnki_mcp.query.segment import JiebaSegmenter
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from tests.contract.server_fakes import Harness
from tests.corpus_backend import CorpusBackend


class HeldSegmenter(JiebaSegmenter):
    """jieba's segmenter whose dictionary load waits until the test releases it (or 10 s pass),
    noting whether each load ran on the event loop's thread."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.loading = threading.Event()
        self.loads_on_loop_thread: list[bool] = []

    def _load(self) -> object:
        if self._tokenizer is None:
            self.loads_on_loop_thread.append(threading.current_thread() is threading.main_thread())
            self.loading.set()
            self.release.wait(10)
        return super()._load()


async def test_a_raw_question_is_planned_while_other_calls_are_answered(tmp_path: Path) -> None:
    settings = Harness(tmp_path / "data", inline_wait=30.0).settings
    segmenter = HeldSegmenter()
    opened: list[Services] = []

    def open_services() -> Services:
        services = Services.open(settings, backend=CorpusBackend())
        services.pipeline.segmenter = segmenter
        opened.append(services)
        return services

    async with Client(build_server(open_services)) as client:
        search = asyncio.ensure_future(client.call_tool("search", {"query": "自动驾驶汽车的产品责任"}))
        assert await asyncio.to_thread(segmenter.loading.wait, 10)  # the load has begun, wherever
        other = await client.call_tool("search_results", {"search_id": "s_other"})
        answered_while_loading = not segmenter.loaded
        segmenter.release.set()
        result = await search
    assert answered_while_loading, "another call waited for the dictionary load"
    assert other.is_error and (other.structured_content or {}).get("code") == "SEARCH_NOT_FOUND"
    assert not result.is_error, result.content
    data = result.structured_content or {}
    assert data["result"]["plan"]["method"] == "segmented" and data["result"]["candidate_count"] > 0
    assert segmenter.loads_on_loop_thread == [False]  # loaded once, in a worker thread
