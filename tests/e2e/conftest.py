"""Fixtures of the end-to-end tests: one simulator per test module, and `cnki-mcp serve` over
stdio (real headless Chromium inside it) with a fresh data directory per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import StdioServer, serve_env


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    server = SimServer().start()
    yield server
    server.stop()


@pytest.fixture
async def served(sim: SimServer, tmp_path: Path, browser_executable: str) -> AsyncIterator[StdioServer]:
    sim.set_scenario(None)
    sim.reset()
    server = await StdioServer(serve_env(tmp_path / "data", sim.origin, browser_executable), tmp_path).start()
    try:
        yield server
    finally:
        await server.stop()
