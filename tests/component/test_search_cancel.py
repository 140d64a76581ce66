"""A search cancelled by its client keeps what it read (pipeline/engine.py `_keep_on_cancel`,
DESIGN.md "A cancelled search keeps what it read"): the record is `cancelled` and carries the
ranking of the candidates found so far, whose pages `search_results` serves."""

from __future__ import annotations

from pipeline_fakes import SimSite, advance_until, start_research
from test_request_policy import PLAN, live, pipeline

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationStatus
from cnki_mcp.pipeline.policy import DEFAULT_POLICY
from cnki_mcp.store import Store


async def test_a_cancelled_search_answers_and_saves_the_candidates_it_found(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock, exports=True)
    pipe = pipeline(clock, store, site, DEFAULT_POLICY, 20)
    jobs = JobManager(clock, MemorySink())
    job = start_research(jobs, pipe, live(), PLAN)
    await advance_until(clock, lambda: site.count("grid") >= 2)  # the first pages landed
    assert not job.finished
    [record] = await clock.run_until_complete(jobs.cancel(job.operation_id))
    assert record.status is OperationStatus.CANCELLED
    result = record.result
    assert result is not None and result["status"] == "partial"
    assert result["search_id"] == job.operation_id and result["candidate_count"] > 0
    assert result["results"]
    saved = store.search_results(job.operation_id, "all", 0, 500)
    assert len(saved.items) == result["candidate_count"]
    assert record.checkpoint is not None  # `continue` goes on from where it stopped
