"""The e2e request comparison drops the AdvSearch page's own search click (the template capture),
also when the first replayed page arrives at the simulator before the click's POST."""

from __future__ import annotations

from typing import Any

from cnki_mcp.sim.reqlog import LogEntry
from tests.e2e.support import ADV_SEARCH, GRID, keyed, without_captures

FORM = [{"field": "SU", "logic": "AND", "operator": "TOPRANK", "value": "违约金"}]
REAL = [
    {"field": "SU", "logic": "AND", "operator": "TOPRANK", "value": "违约金 + 约定违约金"},
    {"field": "SU", "logic": "AND", "operator": "TOPRANK", "value": "酌减 + 调整"},
]


def entry(t: float, method: str, path: str, **params: Any) -> LogEntry:
    return LogEntry(t=t, wall=t, method=method, host="kns.cnki.net", path=path, params=params, status=200)


def grid(t: float, query: list[dict[str, str]], page: int = 1, years: Any = None) -> LogEntry:
    return entry(t, "POST", GRID, query=query, pageNum=page, years=years, sortField="FFD", sortType="desc")


def test_the_click_is_dropped_when_it_arrives_first() -> None:
    log = [entry(1, "GET", ADV_SEARCH), grid(2, FORM), grid(3, REAL, years=[None, 2025])]
    assert keyed(without_captures(log)) == keyed([grid(3, REAL, years=[None, 2025])])


def test_the_click_is_dropped_when_the_replay_overtakes_it() -> None:
    log = [entry(1, "GET", ADV_SEARCH), grid(2.5, FORM), grid(2.1, REAL, years=[None, 2025])]
    assert keyed(without_captures(log)) == keyed([grid(3, REAL, years=[None, 2025])])


def test_each_new_session_drops_its_own_click_and_keeps_later_pages() -> None:
    log = [
        entry(1, "GET", ADV_SEARCH),
        grid(2, FORM),
        grid(3, REAL),
        grid(4, REAL, page=2),
        entry(5, "GET", ADV_SEARCH),
        grid(6.2, FORM),
        grid(6.1, REAL, page=3),
    ]
    kept = keyed(without_captures(log))
    assert kept == keyed([grid(0, REAL), grid(0, REAL, page=2), grid(0, REAL, page=3)])


def test_a_one_condition_replay_that_overtakes_the_click_is_kept() -> None:
    # the replay of a one-box query is form-shaped too (page 1, one condition, no years): the click
    # is the one whose value is the anchor, the first term of the replay's (CI, stop 29: the
    # replay of q1's page 1 arrived first and was dropped in its place)
    one = [{"field": "SU", "logic": "AND", "operator": "TOPRANK", "value": "违约金 + 约定违约金 + 违约责任"}]
    log = [entry(1, "GET", ADV_SEARCH), grid(2.5, FORM), grid(2.1, one), grid(3, one, page=2)]
    assert keyed(without_captures(log)) == keyed([grid(0, one), grid(0, one, page=2)])
