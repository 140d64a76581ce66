"""The citation-API in-flight map belongs to the server (`Services.citation_flights`), not to the
process: a server never waits for another one's request (its operations share one map:
test_citegraph.py `test_two_clients_asking_for_one_list_at_once_send_each_request_once`). Over the
simulator's citation API in process, each request taking a second on the fake clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_backend import CorpusBackend
from test_citegraph import remember
from test_citegraph_complete import hub
from test_citegraph_stops import SECONDS_PER_REQUEST, SlowCorpus

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.operations import OperationStatus
from cnki_mcp.parse.citations import CitationType
from cnki_mcp.pipeline.citations import CitationListInput, citation_list
from cnki_mcp.store import Store


def journals(store: Store, site: CorpusBackend, clock: FakeClock, paper: str, flights: KeyedLocks | None) -> Any:
    """`get_citing` for the journal list of `paper`, all of it."""

    async def runner(ctx: OperationContext) -> Any:
        inp = CitationListInput(paper=paper, types=[CitationType.JOURNAL], limit=50)
        if flights is None:  # the reader's own map: what a call without the server's gets
            return await citation_list(store, site, clock, inp, "citations", ctx)
        return await citation_list(store, site, clock, inp, "citations", ctx, flights=flights)

    return runner


async def test_a_server_never_waits_for_another_servers_request(clock: FakeClock, store: Store, tmp_path: Path) -> None:
    """Two servers in one process (two data directories): the one with a fast answer is not held
    behind the other's slow request for the same paper."""
    slow = SlowCorpus(hub(), clock)
    fast = CorpusBackend(hub())
    other = Store.open(tmp_path / "other", clock)
    try:
        seed = remember(store, slow.corpus, "s")
        remember(other, fast.corpus, "s")
        slow_job = JobManager(clock, MemorySink()).start(OperationKind.CITATIONS,
                                                         journals(store, slow, clock, seed, None))  # fmt: skip
        fast_job = JobManager(clock, MemorySink()).start(OperationKind.CITATIONS,
                                                         journals(other, fast, clock, seed, None))  # fmt: skip
        started = clock.monotonic()
        [fast_record] = await clock.run_until_complete(fast_job.finish())
        assert fast_record.status is OperationStatus.COMPLETED
        assert clock.monotonic() - started < SECONDS_PER_REQUEST  # no wait for the slow server's page
        assert not slow_job.finished
        [slow_record] = await clock.run_until_complete(slow_job.finish())
        assert slow_record.status is OperationStatus.COMPLETED
    finally:
        other.close()
