"""The chaos suite's browser tier: seeded simulator scenarios (faults on grid, detail and journal
pages, latency) and the invariants read from the simulator's request log and the store.

"The same CNKI request" is `tests/e2e/support.request_key`. A request may be sent again only when
its first answer was never observed: the earlier one was a fault (non-content) answer, or it was
among the requests still in flight when the run was cut (at most CNKI_MAX_INFLIGHT, the last ones
the simulator answered before the cut). In the in-process runs grid pages are judged exactly: the
test records which answers reached the product (`GridReceipts`)."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from cnki_mcp.jobs import WATCHDOG_GRACE_SECONDS
from cnki_mcp.sim.query import parse_query_json
from cnki_mcp.sim.reqlog import LogEntry
from tests.e2e.support import request_key, without_captures

GRID = "/kns8s/brief/grid"
ARTICLE = "/kcms2/article"
JOURNAL = "/knavi/"
SLACK_SECONDS = WATCHDOG_GRACE_SECONDS + 1.0
MAX_INFLIGHT = 3

_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (GRID, ("429", "500", "503", "verification", "login_required", "temporarily_empty")),
    (ARTICLE, ("429", "502", "verification", "login_required", "script_rendered_detail")),
    (JOURNAL, ("429", "503", "verification", "login_required")),
)
QUERIES = (
    {"query": "违约金过高时法院如何酌减", "concept_groups": [["违约金", "约定违约金"], ["酌减", "调整"]]},
    {"query": "数据合规与个人信息保护", "concept_groups": [["数据合规"], ["个人信息"]]},
    {"query": "人工智能侵权责任", "concept_groups": [["人工智能"], ["侵权责任"]]},
)


def draw_scenario(seed: int) -> dict[str, Any]:
    rng = random.Random(seed * 6151 + 3)
    faults: list[dict[str, Any]] = []
    for path, kinds in _KINDS:
        for kind in rng.sample(kinds, rng.randint(0, 2)):
            faults.append({"path": path, "kind": kind, "probability": rng.choice((0.05, 0.1, 0.3))})
    latency = [{"path": ARTICLE, "ms": rng.choice((0, 100, 300)), "jitter": 0.3}]
    return {"seed": seed, "faults": faults, "latency": latency}


def draw_search(seed: int) -> dict[str, Any]:
    rng = random.Random(seed * 31 + 7)
    query = rng.choice(QUERIES)
    options = {
        "max_pages": rng.choice((1, 2)),
        "candidate_target": 60,
        "freshness": "live",
        "on_verification": "skip",  # headless: no person; the fast tier covers `ask`
        "timeout_seconds": rng.choice((6, 12, 30, 90)),
        "max_requests": rng.choice((25, 80, 400)),
    }
    return {**query, "year_to": 2025, "limit": 10, "options": options}


def budget_failures(record: dict[str, Any]) -> list[str]:
    out = []
    if record["status"] in ("running", "awaiting_user"):
        out.append(f"operation still {record['status']}")
    limit = float(record["budget"]["timeout_seconds"]) + SLACK_SECONDS
    if float(record["active_seconds"]) > limit:
        out.append(
            f"active_seconds {record['active_seconds']} > {record['budget']['timeout_seconds']} + slack"
        )
    return out


def repeat_failures(
    entries: list[LogEntry], cuts: list[int | tuple[int, int]], receipts: GridReceipts | None = None
) -> list[str]:
    """Keys asked again after a content answer, except answers in flight at a cut. `cuts`: log
    positions where a run was cut (a watchdog stop, a browser crash), or (kill, restart) position
    pairs: after a SIGKILL the dead server's browser may still send what it was told to until the
    new server starts, and no such answer is ever observed.

    With `receipts` (in-process runs), grid pages are judged exactly instead: asking a page again
    fails only if the product received the earlier content answer before it asked again. The
    window above is a guess: the simulator logs an answer as it sends it, so a request in flight
    at a crash can be logged after the crash point, or long before it under load (both seen in
    CI)."""
    log = without_captures(entries)
    raw = {id(e): n for n, e in enumerate(entries)}
    in_flight: set[int] = set()
    for cut in cuts:
        start, end = cut if isinstance(cut, tuple) else (cut, cut)
        in_flight.update(range(max(0, start - MAX_INFLIGHT), end))
    answered: dict[Any, int] = {}
    out: list[str] = []
    for index, entry in enumerate(log):
        key = request_key(entry)
        if key is None:
            continue
        if receipts is not None and entry.path.startswith(GRID):
            if key in answered and receipts.received(key, raw[id(log[answered[key]])], raw[id(entry)]):
                out.append(_asked_again(log, key, answered[key], index))
            if entry.status == 200 and entry.fault is None:
                answered[key] = index
            continue
        if key in answered:
            out.append(_asked_again(log, key, answered[key], index))
            continue
        if entry.status == 200 and entry.fault is None and index not in in_flight:
            answered[key] = index
    return out


def _asked_again(log: list[LogEntry], key: Any, first: int, again: int) -> str:
    history = [(i, e.method, e.status, e.fault) for i, e in enumerate(log) if request_key(e) == key]
    return f"{key} asked again (first answered at #{first}, again at #{again}): {history}"


def grid_key(body: str) -> tuple[Any, ...]:
    """`request_key` of the grid POST whose urlencoded form is `body`, as the simulator logs it
    (`Query.log_params`, the fields routes.py copies from the form)."""
    form = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
    params = {
        **parse_query_json(form.get("QueryJson", "")).log_params(),
        **{k: form[k] for k in ("pageNum", "sortField", "sortType") if k in form},
    }
    entry = LogEntry(t=0.0, wall=0.0, method="POST", host="", path=GRID, params=params, status=200)
    key = request_key(entry)
    assert key is not None
    return key


class GridReceipts:
    """The grid answers the product received (its in-page fetch returned a 200 to Python), kept by
    wrapping `CnkiSite._page_fetch`: each with the simulator's log length when it arrived."""

    def __init__(self, site: Any, sim: Any) -> None:
        self.seen: list[tuple[tuple[Any, ...], int]] = []
        original = site._page_fetch

        async def spy(page: Any, url: str, body: str, op: Any, priority: Any) -> Any:
            fetched = await original(page, url, body, op, priority)
            if GRID in url and fetched.status == 200:
                self.seen.append((grid_key(body), len(sim.requests)))
            return fetched

        site._page_fetch = spy

    def received(self, key: tuple[Any, ...], first: int, again: int) -> bool:
        """Whether an answer to `key` reached the product after raw log entry `first` was logged
        (its answer leaves after that) and before entry `again` was (asked only after the
        receipt, so logged after it)."""
        return any(k == key and first < logged <= again for k, logged in self.seen)

    def missing(self, entries: list[LogEntry]) -> list[str]:
        """For a run nothing cut: every grid content answer the simulator logged must have been
        received under the same key (checks `grid_key` against the simulator's own log)."""
        keys = {k for k, _ in self.seen}
        lost = [
            request_key(e)
            for e in without_captures(entries)
            if e.path.startswith(GRID) and e.status == 200 and e.fault is None and request_key(e) not in keys
        ]
        return [f"grid answers logged but never received: {lost[:2]}"] if lost else []

    def reset(self) -> None:
        self.seen.clear()


def crash_cut(entries: list[LogEntry], logged: int, killed_at: float) -> int:
    """The raw log position of a browser crash: past the `logged` entries there at the kill and
    every request that had arrived before it. The simulator logs a request when it answers, so one
    in flight at the kill can be logged after it; its answer never reached the product."""
    arrived = [n + 1 for n, e in enumerate(entries) if e.t <= killed_at]
    return max([logged, *arrived])


def position(entries: list[LogEntry], raw_index: int) -> int:
    """The index in `without_captures(entries)` of the raw log position `raw_index`."""
    return len(without_captures(entries[:raw_index]))


def integrity_failures(db: Path) -> list[str]:
    conn = sqlite3.connect(str(db), timeout=10.0)
    try:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    return [] if result == ["ok"] else [f"integrity_check: {result[:3]}"]


def stored_details(db: Path) -> set[str]:
    """CNKI filenames of the papers whose detail page the store holds."""
    import json

    conn = sqlite3.connect(str(db), timeout=10.0)
    try:
        rows = conn.execute(
            "SELECT p.data FROM details d JOIN papers p ON p.record_ref = d.record_ref"
        ).fetchall()
    finally:
        conn.close()
    return {str((json.loads(data).get("native") or {}).get("filename") or "") for (data,) in rows}


def outside_failures(root: Path, data_dir: Path) -> list[str]:
    stray = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and data_dir not in p.parents]
    return [f"files written outside the data directory: {stray[:5]}"] if stray else []


def fault_counts(entries: list[LogEntry]) -> Counter[str]:
    return Counter(e.fault for e in entries if e.fault)
