"""The year a question's time phrases (今年, 去年, 近五年) count from is the person's, on this
machine's clock in its time zone, not UTC's: for eight hours after midnight on 1 January in China
the UTC year is still the old one, and on 31 December evening in California it is already the new.
TZ is set as a POSIX rule (CST-8 is UTC+8), so no time zone database is needed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    def set_zone(rule: str) -> None:
        monkeypatch.setenv("TZ", rule)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("rule", "wall", "year"),
    [
        ("CST-8", datetime(2026, 12, 31, 18, 30, tzinfo=UTC), 2027),  # 02:30 on 1 January in Beijing
        ("PST8", datetime(2027, 1, 1, 4, 0, tzinfo=UTC), 2026),  # 20:00 on 31 December in California
        ("UTC0", datetime(2026, 12, 31, 18, 30, tzinfo=UTC), 2026),
    ],
)
async def test_the_search_pipeline_counts_years_from_the_local_year(
    tmp_path: Path, zone: Callable[[str], None], rule: str, wall: datetime, year: int
) -> None:
    zone(rule)
    services = Services.open(Settings(data_dir=tmp_path), clock=FakeClock(wall=wall), environ={})
    try:
        assert services.pipeline.now_year() == year
    finally:
        await services.close()
