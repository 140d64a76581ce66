"""`tasks.all_done`: coroutines run together, every one to its end, the first failure raised after."""

from __future__ import annotations

import asyncio

import pytest

from cnki_mcp.tasks import all_done


async def test_every_task_runs_to_its_end_before_the_first_failure_is_raised() -> None:
    ended: list[str] = []
    second_may_end = asyncio.Event()

    async def fails(name: str) -> None:
        ended.append(name)
        raise LookupError(name)

    async def slow() -> None:
        await second_may_end.wait()  # still running when both failures have happened
        ended.append("slow")

    async def opens() -> None:
        await asyncio.sleep(0)
        second_may_end.set()

    with pytest.raises(LookupError) as info:
        await all_done([fails("first"), slow(), fails("second"), opens()])
    assert info.value.args == ("first",)  # the first in the order given
    assert sorted(ended) == ["first", "second", "slow"]


async def test_tasks_that_all_succeed_return_nothing_and_none_is_fine() -> None:
    done: list[int] = []

    async def one(n: int) -> None:
        done.append(n)

    assert await all_done(one(n) for n in range(3)) is None
    assert sorted(done) == [0, 1, 2]
    await all_done([])
