"""Searches and their per-record evidence; the completed-search cache (site-rules.md §3.8)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from cnki_mcp.store.db import StoreBase, from_ts, to_ts

SEARCHES_KEPT = 300
SEARCH_CACHE_TTL = timedelta(minutes=10)
COMPLETED = "completed"

Scope = Literal["selected", "excluded", "eligible", "all"]


@dataclass(frozen=True, slots=True)
class SearchRecord:
    search_id: str
    query: str
    params: dict[str, Any]
    fingerprint: str
    status: str
    created_at: datetime
    updated_at: datetime
    summary: dict[str, Any] | None = None

    @property
    def ranking(self) -> int:
        """Which ranking of the search its rows are: 1 for the first, one more for each
        `continue` that ranks them again (DESIGN.md "Tool results"); a summary saved before
        this was counted is the first."""
        value = (self.summary or {}).get("ranking", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1


@dataclass(frozen=True, slots=True)
class SearchEvidence:
    """Why one record is in a search: the channels that found it, its rank and score, the
    evidence behind the score, and whether it was selected (else why not)."""

    record_ref: str
    rank: int | None = None
    channels: tuple[str, ...] = ()
    score: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    selected: bool = False
    exclusion: str | None = None


@dataclass(frozen=True, slots=True)
class SearchPage:
    total: int
    items: list[SearchEvidence]


def _record(row: tuple[Any, ...]) -> SearchRecord:
    return SearchRecord(
        search_id=row[0],
        query=row[1],
        params=json.loads(row[2]),
        fingerprint=row[3],
        status=row[4],
        created_at=from_ts(row[5]),
        updated_at=from_ts(row[6]),
        summary=json.loads(row[7]) if row[7] else None,
    )


def _evidence(r: tuple[Any, ...]) -> SearchEvidence:
    return SearchEvidence(
        record_ref=r[0],
        rank=r[1],
        channels=tuple(json.loads(r[2])),
        score=r[3],
        evidence=json.loads(r[4]),
        selected=bool(r[5]),
        exclusion=r[6],
    )


_COLUMNS = "search_id, query, params, fingerprint, status, created_at, updated_at, summary"
# eligible: the evidence says so, or says nothing (`evidence.get("eligible", True)`)
_SCOPES: dict[str, str] = {
    "selected": "AND selected = 1",
    "excluded": "AND selected = 0",
    "eligible": "AND (json_type(evidence, '$.eligible') IS NULL OR json_extract(evidence, '$.eligible'))",
    "all": "",
}


class SearchesMixin(StoreBase):
    def save_search(
        self,
        search_id: str,
        query: str,
        params: dict[str, Any],
        fingerprint: str,
        status: str,
        created_at: datetime,
        *,
        updated_at: datetime | None = None,
        summary: dict[str, Any] | None = None,
        evidence: Sequence[SearchEvidence] = (),
    ) -> None:
        """Insert or update a search (status changes keep `created_at`), and its `evidence` rows
        in the same transaction: a ranking's rows and its summary (its `ranking` number) are
        never seen apart. Only the newest 300 searches are kept, with their evidence rows,
        besides those a watch was made from."""
        created = to_ts(created_at)
        updated = to_ts(updated_at or created_at)
        with self._write() as conn:
            _write_evidence(conn, search_id, evidence)
            conn.execute(
                f"INSERT INTO searches ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(search_id) DO UPDATE SET query = excluded.query, params = excluded.params,"
                " fingerprint = excluded.fingerprint, status = excluded.status,"
                " updated_at = excluded.updated_at, summary = COALESCE(excluded.summary, searches.summary)",
                (
                    search_id,
                    query,
                    json.dumps(params, ensure_ascii=False, sort_keys=True),
                    fingerprint,
                    status,
                    created,
                    updated,
                    json.dumps(summary, ensure_ascii=False) if summary is not None else None,
                ),
            )
            old = [
                r[0]
                for r in conn.execute(
                    # a search a watch was made from is the watch's (its results, its search log),
                    # kept while the watch is: it is not one of the 300 and does not push one out
                    "SELECT search_id FROM searches WHERE search_id NOT IN (SELECT search_id FROM watches)"
                    " ORDER BY created_at DESC, search_id DESC LIMIT -1 OFFSET ?",
                    (SEARCHES_KEPT,),
                )
            ]
            for sid in old:
                conn.execute("DELETE FROM search_results WHERE search_id = ?", (sid,))
                conn.execute("DELETE FROM search_log_pages WHERE search_id = ?", (sid,))
                conn.execute("DELETE FROM searches WHERE search_id = ?", (sid,))

    def save_evidence(self, search_id: str, rows: Sequence[SearchEvidence]) -> None:
        """Insert or replace evidence rows of a search (one transaction)."""
        with self._write() as conn:
            _write_evidence(conn, search_id, rows)

    def get_search(self, search_id: str) -> SearchRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM searches WHERE search_id = ?", (search_id,)
            ).fetchone()
        return _record(row) if row else None

    def search_results(
        self, search_id: str, scope: Scope = "selected", offset: int = 0, limit: int = 20
    ) -> SearchPage:
        """One page of a search's records in rank order (unranked last), with the total."""
        where = _SCOPES[scope]
        with self._read() as conn:
            total = int(
                conn.execute(
                    f"SELECT COUNT(*) FROM search_results WHERE search_id = ? {where}", (search_id,)
                ).fetchone()[0]
            )
            rows = conn.execute(
                "SELECT record_ref, rank, channels, score, evidence, selected, exclusion FROM search_results"
                f" WHERE search_id = ? {where} ORDER BY rank IS NULL, rank, record_ref LIMIT ? OFFSET ?",
                (search_id, max(0, limit), max(0, offset)),
            ).fetchall()
        return SearchPage(total=total, items=[_evidence(r) for r in rows])

    def evidence_for(self, search_id: str, refs: Sequence[str]) -> dict[str, SearchEvidence]:
        """The evidence rows of `refs` in a search (a page's rows, looked up by key, not the scope read whole)."""
        wanted = list(dict.fromkeys(refs))
        out: dict[str, SearchEvidence] = {}
        with self._read() as conn:
            for at in range(0, len(wanted), 500):
                part = wanted[at : at + 500]
                rows = conn.execute(
                    "SELECT record_ref, rank, channels, score, evidence, selected, exclusion FROM search_results"
                    f" WHERE search_id = ? AND record_ref IN ({','.join('?' * len(part))})",
                    (search_id, *part),
                ).fetchall()
                out.update((r[0], _evidence(r)) for r in rows)
        return out

    def cached_search(
        self, fingerprint: str, now: datetime, ttl: timedelta | float = SEARCH_CACHE_TTL
    ) -> SearchRecord | None:
        """The newest COMPLETED search with this fingerprint finished less than `ttl` ago."""
        span = ttl if isinstance(ttl, timedelta) else timedelta(seconds=ttl)
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM searches WHERE fingerprint = ? AND status = ? AND updated_at > ?"
                " AND updated_at <= ? ORDER BY updated_at DESC LIMIT 1",
                (fingerprint, COMPLETED, to_ts(now - span), to_ts(now)),
            ).fetchone()
        return _record(row) if row else None


def _write_evidence(conn: sqlite3.Connection, search_id: str, rows: Sequence[SearchEvidence]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO search_results"
        " (search_id, record_ref, channels, rank, score, evidence, selected, exclusion)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                search_id,
                e.record_ref,
                json.dumps(list(e.channels), ensure_ascii=False),
                e.rank,
                e.score,
                json.dumps(e.evidence, ensure_ascii=False, sort_keys=True),
                int(e.selected),
                e.exclusion,
            )
            for e in rows
        ],
    )
