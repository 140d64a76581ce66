"""Simulator latency rules (docs/simulator.md "Latency"): the first rule whose path prefixes the
request delays it; a rule with `at` delays only the n-th requests under its path."""

from __future__ import annotations

import pytest

from cnki_mcp.sim.scenario import FaultSchedule, Scenario

GRID = "/kns8s/brief/grid"


def test_a_rule_with_at_delays_only_the_requests_it_names_and_the_next_rule_takes_the_rest() -> None:
    schedule = FaultSchedule(
        Scenario.from_obj(
            {"latency": [{"path": GRID, "ms": 2000, "at": [1, 3]}, {"path": "/kns8s/", "ms": 100}]}
        )
    )
    delays = [schedule.latency_for(GRID) for _ in range(4)]
    assert delays == pytest.approx([2.0, 0.1, 2.0, 0.1])
    assert schedule.latency_for("/kcms2/article/abstract") == 0.0
    schedule.reset()  # counts start again
    assert schedule.latency_for(GRID) == pytest.approx(2.0)


def test_a_rule_without_at_delays_every_request_under_its_path() -> None:
    schedule = FaultSchedule(Scenario.from_obj({"latency": [{"path": GRID, "ms": 700}]}))
    assert [schedule.latency_for(GRID) for _ in range(3)] == pytest.approx([0.7, 0.7, 0.7])
