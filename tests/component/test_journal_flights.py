"""Journal pages are read once per source in flight (`Enricher._journal`, pipeline/enrich.py) and
the read is shielded from one reader's cancellation, so another operation waiting for the same
page still gets it. Once nobody waits any more (the search was cancelled), the read stops: before,
the shielded reads queued behind the rate limiter went on sending journal requests after the
operation had ended `cancelled`. A flight whose readers all left while their operation goes on
ending (a search stopped by its deadline lets the fetch land) still ends quietly when it fails."""

from __future__ import annotations

import asyncio
import gc
from typing import Any, cast

from pipeline_fakes import SimSite, advance_until, start_research
from test_request_policy import PLAN, live, pipeline

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.identity import Paper
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationStatus
from cnki_mcp.models import JournalPage
from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.pipeline.policy import DEFAULT_POLICY
from cnki_mcp.site.backend import SiteBackend
from cnki_mcp.store import Store


class OneJournalAtATime(SimSite):
    """Journal pages go out one at a time, as the rate limiter sends them; the others queue."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, exports=True)
        self.gate = asyncio.Semaphore(1)

    async def journal(self, url: str, expected_source: str | None = None, op: Any = None) -> JournalPage:
        async with self.gate:
            return await super().journal(url, expected_source, op)


async def test_a_cancelled_search_sends_no_journal_request_after_the_cancel(clock: FakeClock, store: Store) -> None:
    site = OneJournalAtATime(clock)
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


async def test_a_journal_read_two_searches_wait_for_survives_one_of_them_being_cancelled(clock: FakeClock, store: Store) -> None:
    site = OneJournalAtATime(clock)
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


class DeadlineStopped:
    """The context of an operation its deadline stopped: not cancelled by anyone."""

    cancelled = False


class FailingJournalSite:
    """A site whose journal page fails with SiteUnavailable once `fail` is set."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.fail = asyncio.Event()
        self.raised = False

    async def journal(self, url: str, expected_source: str | None = None, op: Any = None) -> JournalPage:
        self.started.set()
        await self.fail.wait()
        self.raised = True
        raise SiteUnavailable("知网暂时不可用")


async def a_deadline_stopped_read(
    clock: FakeClock, store: Store
) -> tuple[FailingJournalSite, Enricher, asyncio.Future[None], asyncio.Task[None]]:
    """A journal read started by an operation its deadline stopped: the site, the enricher, the
    reader's future and the shared flight's task, once the site has the request."""
    site = FailingJournalSite()
    enricher = Enricher(cast(SiteBackend, site), store, clock)
    paper = Paper(record_ref="r1", title="违约金酌减", source="法学研究", source_url="https://x.test/j")
    reader = asyncio.ensure_future(enricher._journal(paper, cast(OperationContext, DeadlineStopped())))
    await site.started.wait()
    flight = next(iter(enricher._journal_flights.values())).task
    return site, enricher, reader, flight


async def test_a_journal_flight_failing_after_its_reader_was_cancelled_reports_no_unretrieved_error(
    clock: FakeClock, store: Store
) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        site, enricher, reader, flight = await a_deadline_stopped_read(clock, store)
        landed = asyncio.Event()
        flight.add_done_callback(lambda _t: landed.set())

        reader.cancel()
        site.fail.set()
        await landed.wait()
        assert reader.cancelled()
        assert site.raised and not flight.cancelled()  # the flight failed (not retrieved here)
        assert enricher._journal_flights == {}
        del flight, reader
        gc.collect()
        assert [c for c in reported if "never retrieved" in str(c.get("message", ""))] == []
    finally:
        loop.set_exception_handler(previous)


async def test_a_journal_read_its_search_left_behind_is_stopped_when_the_server_closes(
    clock: FakeClock, store: Store
) -> None:
    """A search stopped by its deadline lets its journal read land; at server exit that read ran
    on into the closing browser, and asyncio printed its error at shutdown."""
    site, enricher, reader, flight = await a_deadline_stopped_read(clock, store)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    assert not flight.done()  # left to land, as the deadline rule wants
    await enricher.close()
    assert flight.cancelled() and not site.raised
    assert enricher._journal_flights == {}
