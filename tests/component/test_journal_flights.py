"""Journal pages are read once per source in flight (`Enricher._journal`, pipeline/enrich.py) and
the read is shielded from one reader's cancellation, so another operation waiting for the same
page still gets it. Once nobody waits any more (the search was cancelled), the read stops: before,
the shielded reads queued behind the rate limiter went on sending journal requests after the
operation had ended `cancelled` (explore5/transport D2)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pipeline_fakes import SimSite, advance_until, start_research
from test_request_policy import PLAN, live, pipeline

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationStatus
from cnki_mcp.models import JournalPage
from cnki_mcp.pipeline.policy import DEFAULT_POLICY
from cnki_mcp.store import Store


class OneJournalAtATime(SimSite):
    """Journal pages go out one at a time, as the rate limiter sends them; the others queue."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, exports=True)
        self.gate = asyncio.Semaphore(1)

    async def journal(self, url: str, expected_source: str | None = None, op: Any = None) -> JournalPage:
        async with self.gate:
            return await super().journal(url, expected_source, op)


async def test_a_cancelled_search_sends_no_journal_request_after_the_cancel(tmp_path: Path) -> None:
    clock = FakeClock()
    site = OneJournalAtATime(clock)
    store = Store.open(tmp_path, clock)
    try:
        pipe = pipeline(clock, store, site, DEFAULT_POLICY, 20)
        jobs = JobManager(clock, MemorySink())
        job = start_research(jobs, pipe, live(), PLAN)
        await advance_until(clock, lambda: site.count("journal") >= 1)
        [record] = await clock.run_until_complete(jobs.cancel(job.operation_id))
        assert record.status is OperationStatus.CANCELLED
        sent = site.count("journal")
        await clock.run_until_idle()
        assert site.count("journal") == sent
        assert not pipe.enricher._journal_flights
    finally:
        store.close()


async def test_a_journal_read_two_searches_wait_for_survives_one_of_them_being_cancelled(tmp_path: Path) -> None:
    clock = FakeClock()
    site = OneJournalAtATime(clock)
    store = Store.open(tmp_path, clock)
    try:
        pipe = pipeline(clock, store, site, DEFAULT_POLICY, 20)
        jobs = JobManager(clock, MemorySink())
        first = start_research(jobs, pipe, live(), PLAN)
        await advance_until(clock, lambda: site.count("journal") >= 1)
        second = start_research(jobs, pipe, live(), PLAN)
        await advance_until(clock, lambda: any(f.readers > 1 for f in pipe.enricher._journal_flights.values()))
        [cancelled] = await clock.run_until_complete(jobs.cancel(first.operation_id))
        assert cancelled.status is OperationStatus.CANCELLED
        [finished] = await clock.run_until_complete(second.finish())
        assert finished.status is OperationStatus.COMPLETED, finished.errors
        journals = [key for key in site.log if key[0] == "journal"]
        assert len(journals) == len(set(journals))  # no page read twice: the shared reads landed
    finally:
        store.close()
