"""KeyedLocks: one holder per key, other keys independent, no lock kept once nobody needs it."""

from __future__ import annotations

import asyncio

import pytest

from cnki_mcp.keyed_lock import KeyedLocks


async def test_one_holder_per_key_in_arrival_order_and_other_keys_go_on() -> None:
    locks = KeyedLocks()
    order: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        async with locks.hold("rec_a"):
            order.append("first in")
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with locks.hold("rec_a"):
            order.append("second in")

    async def other() -> None:
        async with locks.hold("rec_b"):
            order.append("other in")

    one = asyncio.create_task(first())
    await asyncio.sleep(0)
    two = asyncio.create_task(second())
    three = asyncio.create_task(other())
    await three  # another paper never waits
    assert order == ["first in", "other in"]
    assert locks.busy("rec_a") and not locks.busy("rec_b")
    release.set()
    await asyncio.gather(one, two)
    assert order == ["first in", "other in", "first out", "second in"]
    assert len(locks) == 0


async def test_a_holder_that_fails_or_a_waiter_cancelled_leaves_no_lock_behind() -> None:
    locks = KeyedLocks()
    held = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            held.set()
            await release.wait()
            raise RuntimeError("boom")

    task = asyncio.create_task(holder())
    await held.wait()

    async def waiter() -> None:
        async with locks.hold("k"):
            pass

    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert locks.busy("k")
    release.set()
    with pytest.raises(RuntimeError):
        await task
    assert len(locks) == 0 and not locks.busy("k")
    async with locks.hold("k"):  # usable again
        assert locks.busy("k")
    assert len(locks) == 0
