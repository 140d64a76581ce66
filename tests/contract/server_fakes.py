"""Fakes for the server contract tests: a SiteBackend that must never be called for bad input,
and a pipeline with scripted behaviour (blocking, progress, paging)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cnki_mcp.clock import Clock, SystemClock
from cnki_mcp.errors import SearchNotFound
from cnki_mcp.models import HeaderIdentity, IdentityKind
from cnki_mcp.pipeline.models import (
    MetadataResult,
    PlanView,
    ResultItem,
    ResultsPage,
    SearchSummary,
)
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings


class FakeBackend:
    """Counts calls; identity answers an institution."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def grid(self, request: Any, op: Any = None, follow: Any = None) -> Any:
        self.calls.append("grid")
        raise AssertionError("grid is not used by the fake pipeline")

    async def detail(self, locator: str, op: Any = None) -> Any:
        self.calls.append("detail")
        raise AssertionError("detail is not used")

    async def journal(self, url: str, expected_source: str | None = None, op: Any = None) -> Any:
        self.calls.append("journal")
        raise AssertionError("journal is not used")

    async def identity(self, op: Any = None) -> HeaderIdentity:
        self.calls.append("identity")
        if op is not None:
            op.charge()
        return HeaderIdentity(ready=True, personal=IdentityKind.NOT_OBSERVED, institutions=["华东政法大学"])

    async def close(self) -> None:
        self.calls.append("close")


class FakePipeline:
    """Scripted research: progress 1/3, optionally block until released, then a summary."""

    def __init__(self) -> None:
        self.block = False
        self.continue_failure: Exception | None = None  # what `continue_search` raises, if set
        self.no_saved_results = False  # `results` answers SEARCH_NOT_FOUND for every id
        self.release = asyncio.Event()
        self.plans: list[Any] = []
        self.runs = 0  # searches run (`research` calls)
        self.started = asyncio.Event()
        self.items = [ResultItem(record_ref=f"rec_{i:024x}", title=f"题名{i}", url=None) for i in range(120)]

    def cached(self, inp: Any, plan: Any) -> SearchSummary | None:
        return None

    async def cached_async(self, inp: Any, plan: Any) -> SearchSummary | None:
        return self.cached(inp, plan)

    # the real keys (they read only the input and the plan): a join matches on what the server's does
    def research_key(self, inp: Any, plan: Any) -> str:
        return ResearchPipeline.research_key(self, inp, plan)  # type: ignore[arg-type]

    def structured_key(self, inp: Any) -> str:
        return ResearchPipeline.structured_key(self, inp)  # type: ignore[arg-type]

    segmenter_loaded = True  # `plan` below loads the process's dictionary itself when it cuts

    def plan(self, inp: Any, sampled_text: str | None = None) -> Any:
        """The real planning (concept_groups, sampling reply, segmented question), year 2026."""
        from cnki_mcp.pipeline.research import plan_search
        from cnki_mcp.query.segment import default_segmenter

        return plan_search(inp, sampled_text, now_year=2026, cut=default_segmenter())

    def _summary(self, search_id: str, plan: Any, limit: int) -> SearchSummary:
        return SearchSummary(
            search_id=search_id,
            status="completed",
            candidate_count=len(self.items),
            eligible_count=len(self.items),
            selected_count=len(self.items),
            plan=PlanView(method=str(plan.method), concepts=[list(g) for g in plan.groups]),
            results=self.items[:limit],
        )

    async def research(self, inp: Any, plan: Any, ctx: Any) -> SearchSummary:
        self.plans.append(plan)
        self.runs += 1
        ctx.set_stage("retrieval", "检索中")
        ctx.progress(1, 3, "pages")
        ctx.checkpoint({"phase": "retrieval"})
        self.started.set()
        if self.block:
            await self.release.wait()
        ctx.progress(3, 3, "pages")
        ctx.checkpoint({"phase": "done"})
        return self._summary(ctx.operation_id, plan, inp.limit)

    def cached_structured(self, inp: Any) -> SearchSummary | None:
        return None

    async def continue_search(self, ctx: Any) -> SearchSummary:
        if self.continue_failure is not None:
            raise self.continue_failure
        return SearchSummary(search_id=ctx.operation_id, status="completed", plan=PlanView(method="lexical"))

    async def structured(self, inp: Any, ctx: Any) -> SearchSummary:
        self.runs += 1
        if self.block:
            await self.release.wait()
        return SearchSummary(
            search_id=ctx.operation_id, status="completed", plan=PlanView(method="structured")
        )

    async def metadata(self, inp: Any, ctx: Any) -> MetadataResult:
        return MetadataResult(records=[{"record_ref": r, "title": "x"} for r in inp.record_refs])

    def results(self, inp: Any) -> ResultsPage:
        if self.no_saved_results:
            raise SearchNotFound(search_id=inp.search_id)
        chunk = self.items[inp.offset : inp.offset + inp.limit]
        nxt = inp.offset + inp.limit
        return ResultsPage(
            search_id=inp.search_id,
            status="completed",
            scope=inp.scope,
            total=len(self.items),
            offset=inp.offset,
            next_offset=nxt if nxt < len(self.items) else None,
            results=[{"record_ref": it.record_ref, "title": it.title, "url": it.url} for it in chunk],
        )


class Harness:
    """What a test gets: the server, its Services (once opened) and the fakes."""

    def __init__(self, data_dir: Path, inline_wait: float, clock: Clock | None = None) -> None:
        self.settings = Settings(data_dir=data_dir, inline_wait_seconds=inline_wait, request_interval_ms=0)
        self.clock = clock or SystemClock()
        self.backend = FakeBackend()
        self.pipeline = FakePipeline()
        self.services: Services | None = None

    def open(self) -> Services:
        self.services = Services.open(
            self.settings,
            clock=self.clock,
            backend=self.backend,
            pipeline_factory=lambda _s: self.pipeline,
        )
        return self.services


async def completed_data(client: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The structured result of a tool call through an MCP client (`mcp.Client`), asserted to be a
    completed operation record."""
    result = await client.call_tool(name, args)
    assert not result.is_error, (name, result.content)
    data = result.structured_content
    assert isinstance(data, dict) and data["status"] == "completed", data
    return data
