"""Batch exports of one decision go out side by side under the one limiter (pipeline/enrich.py
`export_batches`, DESIGN.md "Reading abstracts by batch export"), each batch's answer lands in
order, and a fatal error is raised only after every other batch has landed."""

from __future__ import annotations

import asyncio
from typing import Any

from cnki_mcp.errors import AccessDenied, BudgetExhausted, CnkiError
from cnki_mcp.models import ExportRecord
from cnki_mcp.pipeline.enrich import EXPORT_BATCH, export_batches


class HeldExports:
    """Each export call waits until the test releases it; calls and in-flight peak recorded."""

    def __init__(self, fail: dict[int, CnkiError] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.in_flight = 0
        self.peak = 0
        self.fail = fail or {}

    async def export_records(self, export_ids: list[str], op: Any = None) -> list[ExportRecord]:
        n = len(self.calls)
        self.calls.append(list(export_ids))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.started.set()
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1
        if n in self.fail:
            raise self.fail[n]
        return [ExportRecord(ref_type="Journal Article", title=i, authors=[]) for i in export_ids]


def ids(n: int) -> list[str]:
    return [f"e{i}" for i in range(n)]


async def collect(backend: HeldExports, n: int) -> list[tuple[list[str], Any]]:
    out: list[tuple[list[str], Any]] = []
    async for batch, records in export_batches(backend, ids(n), object()):  # type: ignore[arg-type]
        out.append((batch, records))
    return out


async def test_the_batches_of_one_export_are_in_flight_together_and_land_in_order() -> None:
    backend = HeldExports()
    task = asyncio.ensure_future(collect(backend, 2 * EXPORT_BATCH + 5))

    async def three_asked() -> None:
        while len(backend.calls) < 3:
            backend.started.clear()
            await backend.started.wait()

    await asyncio.wait_for(three_asked(), 30)  # asked one after the other, this never happens
    assert backend.peak == 3  # every batch asked before the first answered
    backend.release.set()
    out = await task
    assert [batch for batch, _ in out] == [ids(45)[:20], ids(45)[20:40], ids(45)[40:]]
    assert [[r.title for r in records] for _, records in out] == [b for b, _ in out]


async def test_a_failed_batch_is_yielded_with_its_error_and_the_others_land() -> None:
    backend = HeldExports(fail={0: AccessDenied("没有权限")})
    backend.release.set()
    out = await collect(backend, 30)
    assert isinstance(out[0][1], CnkiError) and out[0][1].code == "ACCESS_DENIED"
    assert [r.title for r in out[1][1]] == ids(30)[20:]


async def test_a_fatal_error_is_raised_after_every_other_batch_has_landed() -> None:
    backend = HeldExports(fail={0: BudgetExhausted()})
    backend.release.set()
    landed: list[list[str]] = []
    try:
        async for batch, records in export_batches(backend, ids(50), object()):  # type: ignore[arg-type]
            assert not isinstance(records, CnkiError)
            landed.append(batch)
    except CnkiError as exc:
        assert exc.code == "BUDGET_EXHAUSTED"
    else:
        raise AssertionError("the fatal error was not raised")
    assert landed == [ids(50)[20:40], ids(50)[40:]]  # the batches that came back are not lost
