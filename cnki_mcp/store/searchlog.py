"""The per-page search log (`search_log_pages`): one row per grid page a search read, with the
query as sent, when, how many rows CNKI listed, how many stayed inside the year range, CNKI's
reported total and whether the page was merged into the search (DESIGN.md "Search log").
Rows leave with their search (`searches.SEARCHES_KEPT`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cnki_mcp.store.db import StoreBase, from_ts, to_ts


@dataclass(frozen=True, slots=True)
class LoggedPage:
    search_id: str
    channel: str
    lane: int
    page: int
    query: dict[str, Any]  # {"subject": QueryJson group, "year_from", "year_to", "sort", "page_size"}
    observed_at: datetime
    attempts: int
    rows: int
    kept: int
    total: int | None
    merged: bool


_COLUMNS = "search_id, channel, lane, page, query, observed_at, attempts, rows, kept, total, merged"


class SearchLogMixin(StoreBase):
    def log_search_page(
        self,
        search_id: str,
        channel: str,
        lane: int,
        page: int,
        query: dict[str, Any],
        *,
        observed_at: datetime,
        rows: int,
        kept: int,
        total: int | None,
        merged: bool,
    ) -> None:
        """Record an observed page (`merged=False`: one more attempt) or its merge into the search
        (`merged=True`: counts of the page actually merged; the attempt was counted already)."""
        text = json.dumps(query, ensure_ascii=False, sort_keys=True)
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO search_log_pages ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)"
                " ON CONFLICT(search_id, channel, lane, page) DO UPDATE SET query = excluded.query,"
                " rows = excluded.rows, kept = excluded.kept, total = excluded.total,"
                " merged = MAX(search_log_pages.merged, excluded.merged),"
                " observed_at = CASE WHEN excluded.merged THEN search_log_pages.observed_at"
                " ELSE excluded.observed_at END,"
                " attempts = search_log_pages.attempts + (1 - excluded.merged)",
                (search_id, channel, lane, page, text, to_ts(observed_at), rows, kept, total, int(merged)),
            )

    def search_log_pages(self, search_id: str) -> list[LoggedPage]:
        """Every logged page of a search, by channel, query (lane) and page."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM search_log_pages WHERE search_id = ?"
                " ORDER BY observed_at, channel, lane, page",
                (search_id,),
            ).fetchall()
        return [
            LoggedPage(
                search_id=r[0],
                channel=r[1],
                lane=int(r[2]),
                page=int(r[3]),
                query=json.loads(r[4]),
                observed_at=from_ts(r[5]),
                attempts=int(r[6]),
                rows=int(r[7]),
                kept=int(r[8]),
                total=None if r[9] is None else int(r[9]),
                merged=bool(r[10]),
            )
            for r in rows
        ]
