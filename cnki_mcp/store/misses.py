"""Lookups CNKI answered with nothing, kept across restarts (DESIGN.md §References): by `kind`
(`reference`: verify_references' searches of an entry; `link`: link_references' title lookups)
and key, with when and what was asked. The callers reuse them for 24 hours; older rows leave
with the next write of their kind."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from cnki_mcp.store.db import StoreBase, from_ts, to_ts

MissKind = Literal["reference", "link"]
MISSES_KEPT = timedelta(hours=24)  # the callers' MISS_REUSE; a row older than this is never asked for


class MissesMixin(StoreBase):
    def lookup_miss(self, kind: MissKind, key: str) -> tuple[datetime, Any] | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT observed_at, data FROM lookup_misses WHERE kind = ? AND key = ?", (kind, key)
            ).fetchone()
        return None if row is None else (from_ts(row[0]), json.loads(row[1]))

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
            conn.execute(
                "DELETE FROM lookup_misses WHERE kind = ? AND observed_at < ?", (kind, to_ts(at - MISSES_KEPT))
            )
