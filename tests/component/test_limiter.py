"""The request limiter on a fake clock: spacing, in-flight cap, priorities, hold/release, backoff,
budgets, cancellation and spacing under load."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import BudgetExhausted
from cnki_mcp.site.backend import Pacing
from cnki_mcp.site.limiter import LATENCY_SAMPLES, Limiter, Priority, min_start_gap


class CountingBudget:
    """A budget of `limit` requests that remembers what the limiter looked like at each charge."""

    def __init__(self, limiter: Limiter, limit: int = 1_000) -> None:
        self.limiter = limiter
        self.limit = limit
        self.charges = 0
        self.inflight_at_charge: list[int] = []

    def charge(self) -> None:
        self.inflight_at_charge.append(self.limiter.inflight)
        if self.charges >= self.limit:
            raise BudgetExhausted()
        self.charges += 1


async def request(limiter: Limiter, clock: FakeClock, starts: list[float], duration: float = 0.0) -> None:
    async with limiter.slot() as started:
        assert started == clock.monotonic()
        starts.append(started)
        if duration:
            await clock.sleep(duration)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_sequential_requests_start_exactly_one_interval_apart() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    starts: list[float] = []
    t0 = clock.monotonic()
    tasks = [asyncio.ensure_future(request(limiter, clock, starts)) for _ in range(5)]
    await settle()
    assert clock.pending == 1  # only the head of the queue sleeps towards its start (no herd)
    await clock.run_until_complete(*tasks)
    assert starts == [t0, t0 + 0.5, t0 + 1.0, t0 + 1.5, t0 + 2.0]
    assert limiter.started == 5
    assert limiter.inflight == 0


async def test_zero_interval_starts_everything_at_once() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.0, 6)
    starts: list[float] = []
    t0 = clock.monotonic()
    await clock.run_until_complete(*(request(limiter, clock, starts) for _ in range(10)))
    assert starts == [t0] * 10


async def test_inflight_never_exceeds_the_cap() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.0, 2)
    gate = asyncio.Event()
    entered: list[int] = []

    async def long_request() -> None:
        async with limiter.slot():
            entered.append(limiter.inflight)
            await gate.wait()

    tasks = [asyncio.ensure_future(long_request()) for _ in range(5)]
    await settle()
    assert limiter.inflight == 2
    assert limiter.waiting == 3
    assert len(entered) == 2
    gate.set()
    await asyncio.gather(*tasks)
    assert limiter.peak_inflight == 2
    assert max(entered) <= 2
    assert limiter.inflight == 0


async def test_hold_blocks_new_requests_and_release_pushes_the_next_start() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    starts: list[float] = []
    await clock.run_until_complete(request(limiter, clock, starts))
    limiter.hold()
    assert limiter.held
    blocked = asyncio.ensure_future(request(limiter, clock, starts))
    await clock.advance_settled(30.0)
    await settle()
    assert len(starts) == 1 and not blocked.done()
    released_at = clock.monotonic()
    limiter.release()
    assert not limiter.held
    await clock.run_until_complete(blocked)
    assert starts[1] == released_at + 0.5


async def test_hold_stops_a_request_that_already_took_its_slot() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 10.0, 6)
    starts: list[float] = []
    await clock.run_until_complete(request(limiter, clock, starts))
    second = asyncio.ensure_future(request(limiter, clock, starts))
    await settle()  # now sleeping until t0 + 10 with its slot taken
    limiter.hold()
    await clock.advance_settled(15.0)
    await settle()
    assert len(starts) == 1
    released_at = clock.monotonic()
    limiter.release()
    await clock.run_until_complete(second)
    assert starts[1] == released_at + 10.0


async def test_nested_holds_need_as_many_releases() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.0, 6)
    limiter.hold()
    limiter.hold()
    limiter.release()
    assert limiter.held
    limiter.release()
    assert not limiter.held
    limiter.release()  # an extra release is harmless
    assert not limiter.held


async def test_slow_and_fast_follow_the_backoff_rules() -> None:
    limiter = Limiter(FakeClock(), 0.5, 6)
    assert limiter.backoff == 1.0
    seen = []
    for _ in range(5):
        limiter.slow()
        seen.append(limiter.backoff)
    assert seen == [2.0, 4.0, 8.0, 8.0, 8.0]
    limiter.fast()
    assert limiter.backoff == pytest.approx(7.2)
    for _ in range(100):
        limiter.fast()
    assert limiter.backoff == 1.0
    limiter.fast()
    assert limiter.backoff == 1.0
    limiter.slow()
    limiter.fast()
    limiter.slow()  # 1.8 * 2
    assert limiter.backoff == pytest.approx(3.6)
    assert limiter.spacing == pytest.approx(1.8)


async def test_backoff_widens_the_gap_between_starts() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    starts: list[float] = []
    await clock.run_until_complete(request(limiter, clock, starts))
    limiter.slow()
    await clock.run_until_complete(request(limiter, clock, starts), request(limiter, clock, starts))
    assert [b - a for a, b in itertools.pairwise(starts)] == [1.0, 1.0]


async def test_slow_while_a_request_waits_moves_its_start_later() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 1.0, 6)
    starts: list[float] = []
    await clock.run_until_complete(request(limiter, clock, starts))
    waiting = asyncio.ensure_future(request(limiter, clock, starts))
    await settle()
    limiter.slow()
    limiter.slow()  # spacing 4 s while it sleeps towards +1 s
    await clock.run_until_complete(waiting)
    assert starts[1] - starts[0] == 4.0


async def test_budget_is_charged_before_the_slot_and_while_held() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    budget = CountingBudget(limiter)
    limiter.hold()
    starts: list[float] = []

    async def charged_request() -> None:
        async with limiter.slot(budget=budget) as started:
            starts.append(started)

    task = asyncio.ensure_future(charged_request())
    await settle()
    assert budget.charges == 1  # charged although the limiter holds it back
    assert starts == [] and limiter.inflight == 0
    limiter.release()
    await clock.run_until_complete(task)
    assert len(starts) == 1


async def test_exhausted_budget_never_takes_a_slot_or_waits() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 1)
    budget = CountingBudget(limiter, limit=0)
    holder_gate = asyncio.Event()

    async def holder() -> None:
        async with limiter.slot():
            await holder_gate.wait()

    held = asyncio.ensure_future(holder())
    await settle()
    limiter.hold()  # even held and full, the charge fails at once
    with pytest.raises(BudgetExhausted) as info:
        async with limiter.slot(budget=budget):
            pytest.fail("an exhausted budget must not enter the slot")
    assert info.value.code == "BUDGET_EXHAUSTED"
    assert limiter.waiting == 0
    assert limiter.inflight == 1
    assert limiter.started == 1
    limiter.release()
    holder_gate.set()
    await held


async def test_cancelled_slot_waiter_does_not_leak_its_slot() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.0, 1)
    release_first = asyncio.Event()
    order: list[str] = []

    async def named(name: str, gate: asyncio.Event | None = None) -> None:
        async with limiter.slot():
            order.append(name)
            if gate is not None:
                await gate.wait()

    first = asyncio.ensure_future(named("a", release_first))
    await settle()
    second = asyncio.ensure_future(named("b"))
    third = asyncio.ensure_future(named("c"))
    await settle()
    second.cancel()
    await settle()
    release_first.set()
    await clock.run_until_complete(first, third)
    assert second.cancelled()
    assert order == ["a", "c"]
    assert limiter.inflight == 0 and limiter.waiting == 0
    await clock.run_until_complete(named("d"))  # the slot is really free
    assert order[-1] == "d"


async def test_cancelled_start_waiter_does_not_push_back_the_next_one() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 10.0, 1)  # one slot: a leaked slot would block the next request forever
    starts: list[float] = []
    await clock.run_until_complete(request(limiter, clock, starts))
    t0 = starts[0]
    doomed = asyncio.ensure_future(request(limiter, clock, starts))
    await settle()
    await clock.advance_settled(1.0)
    doomed.cancel()
    await settle()
    await clock.run_until_complete(request(limiter, clock, starts))
    assert doomed.cancelled()
    assert starts == [t0, t0 + 10.0]  # inherits the cancelled request's start time, not t0 + 20
    assert limiter.inflight == 0 and limiter.waiting == 0


async def test_twenty_concurrent_requests_keep_the_spacing() -> None:
    clock = FakeClock()
    interval = 0.5
    limiter = Limiter(clock, interval, 6)
    starts: list[float] = []
    durations = [0.05, 2.5, 0.7, 4.0, 0.1, 1.3, 3.3, 0.2, 0.9, 5.0] * 2
    await clock.run_until_complete(*(request(limiter, clock, starts, d) for d in durations))
    assert len(starts) == 20
    gap = min_start_gap(starts)
    assert gap >= 0.95 * interval
    assert gap >= interval  # exact on a fake clock
    assert limiter.peak_inflight <= 6
    assert limiter.peak_inflight >= 2  # the load really overlapped
    assert limiter.inflight == 0


async def test_a_more_urgent_request_takes_the_next_start_before_earlier_waiters() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    order: list[tuple[str, float]] = []

    async def named(name: str, priority: Priority) -> None:
        async with limiter.slot(priority=priority) as started:
            order.append((name, started))

    await clock.run_until_complete(named("first", Priority.NORMAL))
    t0 = order[0][1]
    journals = [asyncio.ensure_future(named(f"j{i}", Priority.NORMAL)) for i in range(3)]
    await settle()  # j0 sleeps towards t0 + 0.5, j1 and j2 queue behind it
    export = asyncio.ensure_future(named("export", Priority.BATCH))
    await settle()
    page = asyncio.ensure_future(named("page", Priority.CHAIN))
    await settle()
    assert clock.pending == 1  # still one sleeper: the newcomers wait for their turn, not the clock
    await clock.run_until_complete(*journals, export, page)
    assert order[1:] == [
        ("page", t0 + 0.5),  # the sleeper handed the start it woke for to the more urgent head
        ("export", t0 + 1.0),
        ("j0", t0 + 1.5),
        ("j1", t0 + 2.0),
        ("j2", t0 + 2.5),
    ]
    assert limiter.inflight == 0 and limiter.waiting == 0


async def test_queued_requests_hold_no_slot_so_the_urgent_one_gets_the_next_free_one() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.0, 2)
    gates = [asyncio.Event(), asyncio.Event()]
    order: list[str] = []

    async def named(name: str, priority: Priority, gate: asyncio.Event | None = None) -> None:
        async with limiter.slot(priority=priority):
            order.append(name)
            if gate is not None:
                await gate.wait()

    running = [asyncio.ensure_future(named(f"r{i}", Priority.NORMAL, gates[i])) for i in range(2)]
    await settle()
    queued = [asyncio.ensure_future(named(f"q{i}", Priority.NORMAL)) for i in range(3)]
    await settle()
    urgent = asyncio.ensure_future(named("urgent", Priority.CHAIN))
    await settle()
    assert order == ["r0", "r1"] and limiter.inflight == 2 and limiter.waiting == 4
    gates[0].set()
    await clock.run_until_complete(running[0])
    assert order[2] == "urgent"
    gates[1].set()
    await clock.run_until_complete(running[1], urgent, *queued)
    assert order == ["r0", "r1", "urgent", "q0", "q1", "q2"]
    assert limiter.peak_inflight == 2
    assert limiter.inflight == 0 and limiter.waiting == 0


async def test_a_cancelled_urgent_head_gives_the_turn_back_to_the_waiter_behind_it() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 1.0, 6)
    starts: list[float] = []
    await clock.run_until_complete(request(limiter, clock, starts))
    t0 = starts[0]
    waiting = asyncio.ensure_future(request(limiter, clock, starts))
    await settle()

    async def urgent() -> None:
        async with limiter.slot(priority=Priority.CHAIN):
            pytest.fail("a cancelled request must not start")

    doomed = asyncio.ensure_future(urgent())
    await settle()
    doomed.cancel()
    await settle()
    await clock.run_until_complete(waiting)
    assert doomed.cancelled()
    assert starts == [t0, t0 + 1.0]
    assert limiter.inflight == 0 and limiter.waiting == 0


async def test_min_start_gap_of_unordered_starts() -> None:
    assert min_start_gap([3.0, 1.0, 2.5, 0.0]) == 0.5
    assert min_start_gap([1.0]) == math.inf
    assert min_start_gap([]) == math.inf


async def test_invalid_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        Limiter(FakeClock(), -1.0, 6)
    with pytest.raises(ValueError):
        Limiter(FakeClock(), 0.5, 0)


async def test_pacing_is_the_spacing_in_force_and_the_median_of_the_last_latencies_noted() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    assert limiter.pacing() is None  # nothing noted yet
    for seconds in (30.0, 0.6, 0.9, 0.7):
        limiter.note_latency(seconds)
    pacing = limiter.pacing()
    assert pacing is not None and pacing.interval == 0.5 and pacing.latency == pytest.approx(0.8)
    for _ in range(LATENCY_SAMPLES):
        limiter.note_latency(0.1)
    for _ in range(LATENCY_SAMPLES // 2 + 1):  # only the last LATENCY_SAMPLES count
        limiter.note_latency(1.0)
    assert limiter.pacing() == Pacing(0.5, 1.0)
    limiter.slow()
    assert limiter.pacing() == Pacing(1.0, 1.0)  # the backoff is in the spacing


async def test_a_short_call_beside_a_long_search_waits_for_one_of_its_starts_not_its_whole_chain() -> None:
    # one client, two calls at once: a search paging its subject channel (each page answered in
    # 0.3 s, under the 0.5 s spacing, so its next page always waits for the next start) with its
    # journal pages queued, and a get_metadata asking one detail page (DESIGN.md "Request priorities")
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    search, metadata = CountingBudget(limiter), CountingBudget(limiter)
    order: list[str] = []

    async def chain(pages: int) -> None:
        for page in range(pages):
            async with limiter.slot(budget=search, priority=Priority.CHAIN):
                order.append(f"page{page}")
                await clock.sleep(0.3)

    async def read(name: str, budget: CountingBudget) -> None:
        async with limiter.slot(budget=budget):
            order.append(name)

    pages = asyncio.ensure_future(chain(30))
    journals = [asyncio.ensure_future(read(f"journal{i}", search)) for i in range(10)]
    await clock.advance_settled(2.0)
    before = len(order)
    detail = asyncio.ensure_future(read("detail", metadata))
    await clock.run_until_complete(pages, *journals, detail)
    # at most the one start the search's waiter was already sleeping towards
    assert order[before:].index("detail") <= 1, order[before:]
    # the search keeps its own order: its pages before its journals, and loses one start only
    searched = [name for name in order if name != "detail"]
    assert searched == [f"page{i}" for i in range(30)] + [f"journal{i}" for i in range(10)]
    assert limiter.started == 41 and limiter.inflight == 0 and limiter.waiting == 0


async def test_operations_waiting_together_take_the_starts_in_turn() -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 1.0, 6)
    first, second = CountingBudget(limiter), CountingBudget(limiter)
    order: list[str] = []

    async def read(name: str, budget: CountingBudget, priority: Priority = Priority.NORMAL) -> None:
        async with limiter.slot(budget=budget, priority=priority):
            order.append(name)

    await clock.run_until_complete(read("a0", first))  # `first` was served last
    tasks = [asyncio.ensure_future(read(f"a{i}", first)) for i in range(1, 4)]
    await settle()
    tasks += [asyncio.ensure_future(read(f"b{i}", second)) for i in range(3)]
    await settle()
    tasks.append(asyncio.ensure_future(read("a-page", first, Priority.CHAIN)))
    await clock.run_until_complete(*tasks)
    # `second`, never served, takes the start a1 was sleeping towards; then turns alternate, and
    # within `first` its page goes before its reads
    assert order == ["a0", "b0", "a-page", "b1", "a1", "b2", "a2", "a3"], order


async def test_a_page_queued_during_a_hold_ahead_of_its_own_waiting_read_strands_no_operation() -> None:
    # Two operations not served yet wait behind a running request; during a human step's hold one
    # of them queues its page (CHAIN), whose earlier arrival no longer heads its queue, so the
    # other operation became the head without being woken: after the release nothing was in
    # flight and nobody started, until an unrelated request came (or the watchdog ended both)
    clock = FakeClock()
    limiter = Limiter(clock, 0.0, 1)
    running, journal, detail = (CountingBudget(limiter) for _ in range(3))
    answered = asyncio.Event()
    order: list[str] = []

    async def read(name: str, budget: CountingBudget, priority: Priority = Priority.NORMAL) -> None:
        async with limiter.slot(budget=budget, priority=priority):
            order.append(name)
            if name == "running":
                await answered.wait()

    tasks = [asyncio.ensure_future(read("running", running))]
    await settle()
    tasks.append(asyncio.ensure_future(read("g-journal", journal)))
    await settle()
    tasks.append(asyncio.ensure_future(read("h-detail", detail)))
    await settle()
    limiter.hold()
    tasks.append(asyncio.ensure_future(read("g-page", journal, Priority.CHAIN)))
    await settle()
    answered.set()
    await settle()
    limiter.release()
    await settle()
    assert all(t.done() for t in tasks), (order, limiter.inflight, limiter.waiting)
    assert order == ["running", "h-detail", "g-page", "g-journal"]
