"""Saved searches (DESIGN.md "Saved searches"): `watches` (the plan of a stored search and the
date horizon its last check read down to), `watch_known` (every record a watch has seen, with the
fields a later check compares: citations, online-first state, volume/issue/pages) and
`watch_checks` (each check's report, newest kept per watch)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cnki_mcp.store.db import StoreBase, from_ts, to_ts

CHECKS_KEPT = 50  # per watch


@dataclass(frozen=True, slots=True)
class StoredWatch:
    watch_id: str
    search_id: str
    question: str
    plan: dict[str, Any]
    created_at: datetime
    horizon: str | None
    last_check_at: datetime | None
    checks: int


@dataclass(frozen=True, slots=True)
class KnownRecord:
    record_ref: str
    cited: int | None = None
    online_first: bool = False
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None


_W = "watch_id, search_id, question, plan, created_at, horizon, last_check_at, checks"


def _watch(r: tuple[Any, ...]) -> StoredWatch:
    return StoredWatch(
        watch_id=r[0],
        search_id=r[1],
        question=r[2],
        plan=json.loads(r[3]),
        created_at=from_ts(r[4]),
        horizon=r[5],
        last_check_at=from_ts(r[6]) if r[6] else None,
        checks=int(r[7]),
    )


class WatchesMixin(StoreBase):
    def create_watch(
        self,
        watch_id: str,
        search_id: str,
        question: str,
        plan: dict[str, Any],
        created_at: datetime,
        horizon: str | None,
        known: Iterable[KnownRecord],
    ) -> None:
        """A new watch with the records it starts from (one transaction)."""
        now = to_ts(created_at)
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO watches ({_W}) VALUES (?, ?, ?, ?, ?, ?, NULL, 0)",
                (watch_id, search_id, question, json.dumps(plan, ensure_ascii=False), now, horizon),
            )
            _put_known(conn, watch_id, known, now)

    def get_watch(self, watch_id: str) -> StoredWatch | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT {_W} FROM watches WHERE watch_id = ?", (watch_id,)).fetchone()
        return _watch(row) if row else None

    def list_watches(self) -> list[StoredWatch]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_W} FROM watches ORDER BY created_at, watch_id").fetchall()
        return [_watch(r) for r in rows]

    def watch_for_search(self, search_id: str) -> StoredWatch | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_W} FROM watches WHERE search_id = ? ORDER BY created_at LIMIT 1", (search_id,)
            ).fetchone()
        return _watch(row) if row else None

    def known_records(self, watch_id: str, refs: Iterable[str] | None = None) -> dict[str, KnownRecord]:
        """The records a watch has seen (all, or those of `refs`)."""
        sql = "SELECT record_ref, cited, online_first, volume, issue, pages FROM watch_known WHERE watch_id = ?"
        with self._read() as conn:
            rows = conn.execute(sql, (watch_id,)).fetchall()
        wanted = set(refs) if refs is not None else None
        return {
            r[0]: KnownRecord(r[0], r[1], bool(r[2]), r[3], r[4], r[5])
            for r in rows
            if wanted is None or r[0] in wanted
        }

    def known_counts(self, watch_ids: Iterable[str]) -> dict[str, int]:
        """How many records each watch has seen, counted in the index (never loaded)."""
        ids = list(dict.fromkeys(watch_ids))
        out: dict[str, int] = {}
        with self._read() as conn:
            for at in range(0, len(ids), 500):
                part = ids[at : at + 500]
                marks = ",".join("?" * len(part))
                out.update(
                    conn.execute(
                        f"SELECT watch_id, COUNT(*) FROM watch_known WHERE watch_id IN ({marks}) GROUP BY watch_id",
                        part,
                    ).fetchall()
                )
        return out

    def first_seen(self, watch_id: str, at: datetime) -> list[str]:
        """The records a watch first saw at the check made at `at` (its new records and the
        older unseen ones it counted), in the order they were recorded."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT record_ref FROM watch_known WHERE watch_id = ? AND first_seen_at = ? ORDER BY rowid",
                (watch_id, to_ts(at)),
            ).fetchall()
        return [r[0] for r in rows]

    def save_watch_check(
        self,
        watch_id: str,
        check_id: str,
        checked_at: datetime,
        horizon: str | None,
        known: Iterable[KnownRecord],
        report: dict[str, Any],
    ) -> None:
        """A finished check: its report, the records seen (inserted or updated) and the new
        horizon, in one transaction, so the next check diffs against exactly this one."""
        now = to_ts(checked_at)
        with self._write() as conn:
            _put_known(conn, watch_id, known, now)
            conn.execute(
                "UPDATE watches SET horizon = ?, last_check_at = ?, checks = checks + 1 WHERE watch_id = ?",
                (horizon, now, watch_id),
            )
            conn.execute(
                "INSERT INTO watch_checks (check_id, watch_id, checked_at, report) VALUES (?, ?, ?, ?)",
                (check_id, watch_id, now, json.dumps(report, ensure_ascii=False)),
            )
            conn.execute(
                "DELETE FROM watch_checks WHERE watch_id = ? AND check_id NOT IN (SELECT check_id FROM"
                " watch_checks WHERE watch_id = ? ORDER BY rowid DESC LIMIT ?)",
                (watch_id, watch_id, CHECKS_KEPT),
            )

    def delete_watch(self, watch_id: str) -> bool:
        """Remove a watch with the records it has seen and its check reports (one transaction);
        False when there was none."""
        with self._write() as conn:
            gone = conn.execute("DELETE FROM watches WHERE watch_id = ?", (watch_id,)).rowcount
            conn.execute("DELETE FROM watch_known WHERE watch_id = ?", (watch_id,))
            conn.execute("DELETE FROM watch_checks WHERE watch_id = ?", (watch_id,))
        return bool(gone)

    def watch_checks(self, watch_id: str, limit: int = 10) -> list[dict[str, Any]]:
        """The newest check reports of a watch, newest first: in the order they were made (rowid),
        not by `checked_at`, which a wall clock put back (NTP after a resume) would reorder."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT report FROM watch_checks WHERE watch_id = ? ORDER BY rowid DESC LIMIT ?",
                (watch_id, max(0, limit)),
            ).fetchall()
        return [json.loads(r[0]) for r in rows]


def _put_known(conn: Any, watch_id: str, known: Iterable[KnownRecord], now: str) -> None:
    conn.executemany(
        "INSERT INTO watch_known (watch_id, record_ref, cited, online_first, volume, issue, pages, first_seen_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(watch_id, record_ref) DO UPDATE SET"
        " cited = excluded.cited, online_first = excluded.online_first, volume = excluded.volume,"
        " issue = excluded.issue, pages = excluded.pages",
        [
            (watch_id, k.record_ref, k.cited, int(k.online_first), k.volume, k.issue, k.pages, now)
            for k in known
        ],
    )
