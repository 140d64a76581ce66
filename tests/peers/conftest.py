"""Fixtures of the peers suite (tests/peers/support.py says what it does): one hosts-mode
simulator and one run of every public tool per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cnki_mcp.sim.server import SimServer
from tests.peers.support import RUNS, PeerRun, run_peers


@pytest.fixture(scope="session")
def peers_sim() -> Iterator[SimServer]:
    sim = SimServer(hosts_mode=True).start()
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def peer_runs(peers_sim: SimServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PeerRun]:
    return run_peers(peers_sim, {tool: tmp_path_factory.mktemp(f"home-{tool}") for tool in RUNS})
