"""The search-log and watch tables: a store written at schema 3 (the previous release) migrates
and keeps its data; page log upserts count attempts and merges; a trimmed search leaves with its
page log; a watch's checks are kept per watch."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from cnki_mcp.clock import FakeClock
from cnki_mcp.store import Store
from cnki_mcp.store.db import _V_SEARCH_LOG, _V_WATCHES, MIGRATIONS, SCHEMA_VERSION
from cnki_mcp.store.searches import SEARCHES_KEPT
from cnki_mcp.store.watches import CHECKS_KEPT, KnownRecord

QUERY = {"subject": {"Key": "Subject"}, "sort": "relevance"}


def test_a_schema_3_store_migrates_to_the_new_tables(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        for step in MIGRATIONS[:3]:
            conn.executescript(step)
        conn.execute("PRAGMA user_version = 3")
        conn.execute(
            "INSERT INTO searches VALUES ('sch_old', 'q', '{}', 'f', 'completed', NULL, ?, ?)",
            ("2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00"),
        )
    assert MIGRATIONS.index(_V_SEARCH_LOG) >= 3 and MIGRATIONS.index(_V_WATCHES) >= 3
    with Store.open(data, clock) as store:
        assert store.notices == []
        assert store.get_search("sch_old") is not None
        store.log_search_page("sch_old", "q1", 0, 1, QUERY, observed_at=clock.now(), rows=2, kept=2, total=9, merged=False)
        store.create_watch("wat_1", "sch_old", "q", {"channels": []}, clock.now(), None, [KnownRecord("rec_a")])
        assert [p.page for p in store.search_log_pages("sch_old")] == [1]
        assert set(store.known_records("wat_1")) == {"rec_a"}
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_page_log_counts_attempts_and_keeps_the_first_observation_time(store: Store, clock: FakeClock) -> None:
    t0 = clock.now()
    store.log_search_page("s", "q1", 0, 2, QUERY, observed_at=t0, rows=0, kept=0, total=90, merged=False)
    store.log_search_page("s", "q1", 0, 2, QUERY, observed_at=t0 + timedelta(seconds=20), rows=50, kept=48, total=90, merged=False)
    store.log_search_page("s", "q1", 0, 2, QUERY, observed_at=t0 + timedelta(seconds=30), rows=50, kept=48, total=90, merged=True)
    [page] = store.search_log_pages("s")
    assert (page.attempts, page.rows, page.kept, page.merged) == (2, 50, 48, True)
    assert page.observed_at == t0 + timedelta(seconds=20)


def test_trimmed_search_takes_its_page_log_along(store: Store, clock: FakeClock) -> None:
    store.save_search("s0", "q", {}, "f", "completed", clock.now())
    store.log_search_page("s0", "q1", 0, 1, QUERY, observed_at=clock.now(), rows=1, kept=1, total=1, merged=True)
    for n in range(1, SEARCHES_KEPT + 1):
        store.save_search(f"s{n}", "q", {}, "f", "completed", clock.now() + timedelta(seconds=n))
    assert store.get_search("s0") is None and store.search_log_pages("s0") == []


def test_a_search_a_watch_was_made_from_is_kept_past_the_newest_300(store: Store, clock: FakeClock) -> None:
    """A year of use trimmed the search a watch came from: the watch went on checking, but its
    search's results and search log answered SEARCH_NOT_FOUND."""
    store.save_search("s0", "q", {}, "f", "completed", clock.now())
    store.log_search_page("s0", "q1", 0, 1, QUERY, observed_at=clock.now(), rows=1, kept=1, total=1, merged=True)
    store.create_watch("w", "s0", "q", {"channels": []}, clock.now(), None, [])
    for n in range(1, SEARCHES_KEPT + 2):
        store.save_search(f"s{n}", "q", {}, "f", "completed", clock.now() + timedelta(seconds=n))
    assert store.get_search("s0") is not None and len(store.search_log_pages("s0")) == 1
    assert store.get_search("s1") is None and store.get_search("s2") is not None  # 300 besides the watched one


def test_watch_checks_are_kept_per_watch(store: Store, clock: FakeClock) -> None:
    store.create_watch("w", "s", "q", {"channels": []}, clock.now(), "2026-01-01", [])
    for n in range(CHECKS_KEPT + 2):
        store.save_watch_check("w", f"c{n}", clock.now() + timedelta(seconds=n), "2026-01-02", [KnownRecord("r", cited=n)], {"n": n})
    assert store.watch_checks("w", 1) == [{"n": CHECKS_KEPT + 1}]
    assert len(store.watch_checks("w", 100)) == CHECKS_KEPT
    assert store.known_records("w")["r"].cited == CHECKS_KEPT + 1
    watch = store.get_watch("w")
    assert watch is not None and watch.checks == CHECKS_KEPT + 2 and watch.horizon == "2026-01-02"


def test_watch_checks_keep_the_order_they_were_made_when_the_wall_clock_was_put_back(
    store: Store, clock: FakeClock
) -> None:
    """Checks made while the wall clock ran a day fast, then one after it was put right (NTP after
    a resume): the last check made is the newest report, and pruning never drops it."""
    store.create_watch("w", "s", "q", {"channels": []}, clock.now(), "2026-01-01", [])
    fast = clock.now() + timedelta(days=1)
    for n in range(CHECKS_KEPT):
        store.save_watch_check("w", f"c{n}", fast + timedelta(seconds=n), None, [], {"n": n})
    store.save_watch_check("w", "last", clock.now(), None, [], {"n": "last"})
    assert store.watch_checks("w", 1) == [{"n": "last"}]
    assert len(store.watch_checks("w", 100)) == CHECKS_KEPT
