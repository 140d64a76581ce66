"""Fixtures of the component tests: a fake clock and a real store in a fresh data directory (a
module that needs another clock defines its own `clock`; `store` follows it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.store import Store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    s = Store.open(tmp_path / "data", clock)
    yield s
    s.close()
