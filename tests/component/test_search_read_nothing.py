"""A search in which no channel read a single page (every channel failed on page 1, or an error
stopped the search before any page answered) found nothing, and says so by its error: it ended
`partial` with a result of 0 papers (`candidate_count: 0`, `results: []`; for channel errors the
message 已完成，3 项出错), which an agent reads as "no papers on this topic" (DESIGN.md "A search
that read nothing"). Runs through `tests/corpus_backend.py` (no browser)."""

from __future__ import annotations

from typing import Any

import pytest
from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import AccessDenied, CnkiError, SiteUnavailable
from cnki_mcp.jobs import JobManager, MemorySink, OperationRecord
from cnki_mcp.parse.gate import error_page
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.store import Store
from tests.pipeline_fakes import start_research


class FailingBackend(CorpusBackend):
    """Every grid page of a channel whose field is in `failing` (all when None) fails with `error`."""

    def __init__(self, error: CnkiError, failing: set[str] | None = None) -> None:
        super().__init__()
        self.error = error
        self.failing = failing

    async def grid(self, request: GridRequest, op: Any = None, follow: Any = None) -> Any:
        if self.failing is None or any(field in str(request.subject) for field in self.failing):
            raise self.error
        return await super().grid(request, op)


async def searched(clock: FakeClock, store: Store, backend: CorpusBackend) -> OperationRecord:
    inp = SearchInput(query="违约金", concept_groups=[["违约金"]], options=SearchOptions(freshness="live"))
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    job = start_research(JobManager(clock, MemorySink()), pipe, inp, pipe.plan(inp))
    [record] = await clock.run_until_complete(job.finish())
    return record


CDN_REFUSED = error_page(418, "这次访问", "")


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (CDN_REFUSED, "failed", "SITE_UNAVAILABLE"),  # fatal: stops the search at the first page
        (AccessDenied(evidence="status 403"), "failed", "ACCESS_DENIED"),  # each channel's own error
        (SiteUnavailable(evidence="status 503"), "partial", "SITE_UNAVAILABLE"),  # retryable: site-rules.md §5
    ],
    ids=["cdn-refused", "every-channel-denied", "site-down"],
)
async def test_a_search_that_read_no_page_has_no_result_of_zero_papers(
    clock: FakeClock, store: Store, error: CnkiError, status: str, code: str
) -> None:
    record = await searched(clock, store, FailingBackend(error))
    assert (record.status.value, record.result, record.errors[0].code) == (status, None, code)
    channels = [e.details.get("channel") for e in record.errors]
    assert len(channels) == len(set(channels))  # the first channel's error is not told twice


async def test_a_search_with_one_channel_read_keeps_its_result(clock: FakeClock, store: Store) -> None:
    """Only where no page at all was read: a search one of whose channels answered is `partial`
    with its papers and the other channels' errors, as before."""
    record = await searched(clock, store, FailingBackend(AccessDenied(evidence="status 403"), {"SU"}))
    assert record.status.value == "partial" and record.result is not None
    assert record.result["candidate_count"] > 0
    assert {e.code for e in record.errors} == {"ACCESS_DENIED"}
