"""The e2e request comparison drops the AdvSearch page's own search click (the template capture),
which the simulator marks `page_form`, wherever it arrived: before the first replayed page, after
it, or after a one-box query's replay of the same shape (CI, stop 29: that replay was dropped in
the click's place by the positional filter this one replaced)."""

from __future__ import annotations

from typing import Any

from cnki_mcp.sim.reqlog import LogEntry
from tests.e2e.support import ADV_SEARCH, GRID, keyed, without_captures

FORM = [{"field": "SU", "logic": "AND", "operator": "TOPRANK", "value": "违约金"}]
ONE = [{"field": "SU", "logic": "AND", "operator": "TOPRANK", "value": "违约金 + 约定违约金 + 违约责任"}]


def entry(t: float, method: str, path: str, **params: Any) -> LogEntry:
    return LogEntry(t=t, wall=t, method=method, host="kns.cnki.net", path=path, params=params, status=200)


def grid(t: float, query: list[dict[str, str]], page: int = 1, **params: Any) -> LogEntry:
    return entry(t, "POST", GRID, query=query, pageNum=page, sortField="FFD", sortType="desc", **params)


def click(t: float) -> LogEntry:
    return grid(t, FORM, page_form=True)


def test_the_click_is_dropped_before_or_after_the_replay_and_the_replays_are_kept() -> None:
    replays = [grid(2.1, ONE), grid(3, ONE, page=2)]
    for log in (
        [entry(1, "GET", ADV_SEARCH), click(2), *replays],
        [entry(1, "GET", ADV_SEARCH), replays[0], click(2.5), replays[1]],
    ):
        assert keyed(without_captures(log)) == keyed(replays)
        assert [e.params.get("page_form") for e in without_captures(log) if e.path == GRID] == [None, None]


def test_each_new_session_drops_its_own_click_and_a_replay_of_the_forms_own_shape_stays() -> None:
    log = [
        entry(1, "GET", ADV_SEARCH),
        click(2),
        grid(3, ONE),
        entry(5, "GET", ADV_SEARCH),
        grid(6.1, FORM),  # a replay of a one-term query: the click's very shape, unmarked
        click(6.2),
    ]
    assert keyed(without_captures(log)) == keyed([grid(0, ONE), grid(0, FORM)])
    assert len(without_captures(log)) == 4  # both GETs kept
