"""Lookups CNKI answered with nothing, kept across restarts (DESIGN.md §References): by `kind`
(`reference`: verify_references' searches of an entry; `link`: link_references' title lookups)
and key, with when and what was asked. A row is answered for MISSES_KEPT after it was kept, and
never when it is stamped later than now (the wall clock was ahead when it was kept) or cannot be
read. Rows out of that window, of either kind, leave with any write of a miss and when the store opens,
so what a draft's reference list asked is not kept much past a day."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from cnki_mcp.store.db import StoreBase, fresh, from_ts, to_ts

MissKind = Literal["reference", "link"]
MISSES_KEPT = timedelta(hours=24)  # the callers' MISS_REUSE


class MissesMixin(StoreBase):
    def lookup_miss(self, kind: MissKind, key: str, now: datetime) -> tuple[datetime, Any] | None:
        """When `key` was found missing and what was asked, if that was within MISSES_KEPT before `now`."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT observed_at, data FROM lookup_misses WHERE kind = ? AND key = ?", (kind, key)
            ).fetchone()
        if row is None:
            return None
        try:
            at = from_ts(row[0])
            if not fresh(at, now, MISSES_KEPT):
                return None
            return at, json.loads(row[1])
        except (ValueError, TypeError):  # not a time or not JSON: asked again, and replaced
            return None

    def keep_misses(self, kind: MissKind, misses: Mapping[str, Any], at: datetime, *, found: Iterable[str] = ()) -> None:
        """Remember `misses` (key -> what was asked) as of `at` and forget the keys `found`, in one write."""
        found = list(found)
        if not misses and not found:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO lookup_misses (kind, key, data, observed_at) VALUES (?, ?, ?, ?)",
                [(kind, key, json.dumps(data, ensure_ascii=False), to_ts(at)) for key, data in misses.items()],
            )
            conn.executemany("DELETE FROM lookup_misses WHERE kind = ? AND key = ?", [(kind, k) for k in found])
            _prune(conn, at)

    def prune_misses(self, now: datetime) -> None:
        """Forget the rows out of the window (`Store.open` calls it); writes only when there are some."""
        with self._read() as conn:
            stale = conn.execute(f"SELECT 1 FROM lookup_misses WHERE {_OUTSIDE} LIMIT 1", _bounds(now)).fetchone()
        if stale is not None:
            with self._write() as conn:
                _prune(conn, now)


_OUTSIDE = "observed_at < ? OR observed_at > ?"  # older than MISSES_KEPT, or stamped later than now


def _bounds(now: datetime) -> tuple[str, str]:
    return to_ts(now - MISSES_KEPT), to_ts(now)


def _prune(conn: sqlite3.Connection, now: datetime) -> None:
    conn.execute(f"DELETE FROM lookup_misses WHERE {_OUTSIDE}", _bounds(now))
