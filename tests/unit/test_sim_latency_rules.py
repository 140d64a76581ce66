"""Simulator latency rules (docs/simulator.md "Latency"): the first rule whose path prefixes the
request delays it; a rule with `at` delays only the n-th requests under its path."""

from __future__ import annotations

import threading

import pytest

from cnki_mcp.sim.scenario import FaultSchedule, Scenario, answer_delay

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


def test_the_simulators_own_work_counts_towards_a_latency_rule() -> None:
    assert answer_delay(0.7, 0.25) == pytest.approx(0.45)  # evaluated in 0.25 s: 0.45 s still to wait
    assert answer_delay(0.7, 1.2) == 0.0  # slower than the rule: answered at once, never earlier
    assert answer_delay(0.0, 0.1) == 0.0  # no rule


CLICK = {"QueryJson": '{"Key":"input[data-tipid=gradetxt-1]","Value":"违约金"}', "pageNum": "1"}
REPLAY = {"QueryJson": '{"Key":"mcp","Value":"违约金"}', "pageNum": "1"}


def test_form_filters_narrow_a_latency_rule_and_only_matching_requests_count() -> None:
    schedule = FaultSchedule(
        Scenario.from_obj({"latency": [{"path": GRID, "ms": 2000, "at": [1], "form_contains": "data-tipid"}]})
    )
    # the replay arriving first neither is delayed nor uses up the rule's first position
    assert schedule.latency_for(GRID, REPLAY) == 0.0
    assert schedule.latency_for(GRID, CLICK) == pytest.approx(2.0)
    assert schedule.latency_for(GRID, CLICK) == 0.0  # the second matching request


def test_a_fault_rule_with_form_lacks_fires_on_the_first_request_without_that_text() -> None:
    schedule = FaultSchedule(
        Scenario.from_obj(
            {"faults": [{"path": GRID, "kind": "verification", "at": [1], "form_lacks": "data-tipid"}]}
        )
    )
    assert schedule.fault_for("POST", GRID, None, CLICK) is None
    fired = schedule.fault_for("POST", GRID, None, REPLAY)
    assert fired is not None and fired.kind == "verification"
    assert schedule.fault_for("POST", GRID, None, REPLAY) is None
    # a form the rule does not name at all (a GET without a body) never matches `form_contains`
    contains = FaultSchedule(
        Scenario.from_obj({"faults": [{"path": GRID, "kind": "429", "form_contains": "data-tipid"}]})
    )
    assert contains.fault_for("GET", GRID, None, None) is None
    assert contains.fault_for("POST", GRID, None, CLICK) is not None


def test_an_answer_held_until_more_requests_arrived_goes_when_the_last_of_them_arrives() -> None:
    # `until_arrived`: requests that must be in flight together are, however late the client sends
    # the last of them; the rule's `ms` (an hour here) only bounds the wait
    schedule = FaultSchedule(
        Scenario.from_obj({"latency": [{"path": GRID, "ms": 3_600_000, "at": [1, 2], "until_arrived": 3}]})
    )
    answered: list[int] = []

    def request(n: int) -> None:
        assert schedule.hold_answer(GRID, None, 0.0) == 0.0  # nothing left to wait
        answered.append(n)

    # whichever two arrive first wait; the third is answered at once, and the first two with it
    calls = [threading.Thread(target=request, args=(n,), daemon=True) for n in range(3)]
    for thread in calls:
        thread.start()
    for thread in calls:
        thread.join(timeout=30)
    assert sorted(answered) == [0, 1, 2]
