"""A raw question's planning never stalls the event loop: the segmenter's dictionary (about 1.1 s
of CPU on its first use in a process) loads in a worker thread while other calls are answered
(DESIGN.md "Ranking cost")."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from mcp import Client

from cnki_mcp.pipeline.research import ResearchPipeline, plan_search
from cnki_mcp.server.app import build_server
from tests.contract.server_fakes import FakePipeline, Harness


class SlowSegmenter:
    """A segmenter whose dictionary load waits until the test releases it (or 10 s pass)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.loading = threading.Event()
        self.on_loop_thread: list[bool] = []  # per cut: did it run on the event loop's thread
        self._lock = threading.Lock()
        self._loaded = False

    @property
    def loaded(self) -> bool:
        return self._loaded

    def warm(self) -> None:
        with self._lock:
            if not self._loaded:
                self.loading.set()
                self.release.wait(10)
                self._loaded = True

    def __call__(self, text: str) -> list[str]:
        self.on_loop_thread.append(threading.current_thread() is threading.main_thread())
        self.warm()
        return [text]


class PlanningPipeline(FakePipeline):
    """The scripted pipeline with the real `segmenter_loaded` and a planning that cuts."""

    segmenter_loaded = ResearchPipeline.segmenter_loaded  # type: ignore[assignment]

    def __init__(self, segmenter: SlowSegmenter) -> None:
        super().__init__()
        self.segmenter = segmenter

    def plan(self, inp: Any, sampled_text: str | None = None) -> Any:
        return plan_search(inp, sampled_text, now_year=2026, cut=self.segmenter)


async def test_a_raw_question_is_planned_while_other_calls_are_answered(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data", inline_wait=5.0)
    segmenter = SlowSegmenter()
    h.pipeline = PlanningPipeline(segmenter)
    async with Client(build_server(h.open)) as client:
        search = asyncio.ensure_future(client.call_tool("search", {"query": "深度学习医学影像"}))
        assert await asyncio.to_thread(segmenter.loading.wait, 10)  # the load has begun, wherever
        other = await client.call_tool("search_results", {"search_id": "s_other"})
        answered_while_loading = not segmenter.loaded
        segmenter.release.set()
        result = await search
    assert answered_while_loading, "another call waited for the dictionary load"
    assert not other.is_error, other
    assert not result.is_error, result
    assert segmenter.on_loop_thread and not any(segmenter.on_loop_thread)  # cut (and loaded) off the loop
