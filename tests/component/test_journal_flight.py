"""The one journal request in flight per source (pipeline/enrich.py `Enricher._journal`): a flight
whose readers all left while their operation goes on ending (a search stopped by its deadline
lets the fetch land) still ends quietly when it fails."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any, cast

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.identity import Paper
from cnki_mcp.jobs import OperationContext
from cnki_mcp.models import JournalPage
from cnki_mcp.pipeline.enrich import Enricher
from cnki_mcp.site.backend import SiteBackend
from cnki_mcp.store import Store


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


async def test_a_journal_flight_failing_after_its_reader_was_cancelled_reports_no_unretrieved_error(
    tmp_path: Path,
) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    clock = FakeClock()
    store = Store.open(tmp_path, clock)
    try:
        site = FailingJournalSite()
        enricher = Enricher(cast(SiteBackend, site), store, clock)
        paper = Paper(record_ref="r1", title="违约金酌减", source="法学研究", source_url="https://x.test/j")
        reader = asyncio.ensure_future(enricher._journal(paper, cast(OperationContext, DeadlineStopped())))
        await site.started.wait()
        flight = next(iter(enricher._journal_flights.values())).task
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
        store.close()
