"""The chaos tier's exact rule for grid pages (tests/chaos/browser_support.py): a page may be asked
again unless the product received the earlier content answer before asking, whatever the position
of the crash in the simulator's log."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from cnki_mcp.sim.reqlog import LogEntry
from tests.chaos.browser_support import GridReceipts, repeat_failures
from tests.e2e.support import GRID, request_key

QUERY = [{"field": "TI", "logic": "AND", "operator": "FUZZY", "value": "违约金"}]


def grid(t: float, page: int = 1, status: int = 200, fault: str | None = None) -> LogEntry:
    params: dict[str, Any] = {"query": QUERY, "pageNum": str(page), "sortField": "FFD", "sortType": "desc"}
    return LogEntry(
        t=t, wall=t, method="POST", host="kns.cnki.net", path=GRID, params=params, status=status, fault=fault
    )


def receipts(*seen: tuple[LogEntry, int]) -> GridReceipts:
    r = GridReceipts(SimpleNamespace(_page_fetch=None), SimpleNamespace(requests=[]))
    r.seen = [(k, logged) for e, logged in seen if (k := request_key(e)) is not None]
    return r


def test_a_page_whose_answer_never_reached_the_product_may_be_asked_again() -> None:
    # the crash began with the log empty; page 1, already sent, was logged (#0) after it and its
    # answer never reached the product; the new browser asked again (#2)
    log = [grid(1), grid(2, page=2), grid(3)]
    assert repeat_failures(log, [0], receipts((log[1], 2), (log[2], 3))) == []
    assert len(repeat_failures(log, [0])) == 1  # what the window rule alone said (CI, seed 5)


def test_a_page_asked_again_after_its_answer_arrived_fails_even_inside_the_crash_window() -> None:
    log = [grid(1), grid(2, page=2), grid(3)]
    # received when the log held 1 entry (after #0, before #2): the product had it and asked again
    failures = repeat_failures(log, [2], receipts((log[0], 1), (log[1], 2), (log[2], 3)))
    assert len(failures) == 1 and "asked again" in failures[0]
    # the old window rule alone would have let it pass (#0 lies within MAX_INFLIGHT of the cut)
    assert repeat_failures(log, [2]) == []


def test_a_fault_answer_received_then_asked_again_is_allowed() -> None:
    log = [grid(1, status=200, fault="temporarily_empty"), grid(2)]
    assert repeat_failures(log, [], receipts((log[0], 1), (log[1], 2))) == []


def test_a_crash_cut_reaches_past_requests_that_arrived_before_the_kill_but_were_logged_after() -> None:
    from tests.chaos.browser_support import crash_cut

    log = [grid(1.0), grid(2.0, page=2), grid(3.5, page=3), grid(5.0)]  # killed at 4.0 with 2 logged
    assert crash_cut(log, 2, 4.0) == 3  # page 3 arrived at 3.5, before the kill
    assert crash_cut(log, 2, 1.5) == 2  # nothing arrived late: the logged count stands
