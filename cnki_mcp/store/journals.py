"""Journal quality cache: one row per source key, with TTLs by state (site-rules.md §3.8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from cnki_mcp.identity import source_key as normalise_source
from cnki_mcp.models import JournalPage
from cnki_mcp.store.db import StoreBase, from_ts, to_ts

PRESENT = "present"
MISMATCH = "mismatch"  # the journal page found was another journal (identity unconfirmed)

TTL_PRESENT = timedelta(days=7)
TTL_MISMATCH = timedelta(hours=1)
TTL_OTHER = timedelta(days=1)  # unknown, absent, failed lookups


def journal_ttl(state: str) -> timedelta:
    if state == PRESENT:
        return TTL_PRESENT
    if state == MISMATCH:
        return TTL_MISMATCH
    return TTL_OTHER


@dataclass(frozen=True, slots=True)
class CachedJournal:
    source_key: str
    state: str
    page: JournalPage | None
    observed_at: datetime
    parser_version: int


class JournalsMixin(StoreBase):
    def save_journal(
        self,
        source_key: str,
        page: JournalPage | None,
        state: str,
        observed_at: datetime,
        *,
        parser_version: int = 0,
    ) -> None:
        """Remember what the journal lookup for `source_key` found: `present`, `mismatch`
        (remembered 1 h) or any other state such as `unknown` (1 day)."""
        key = normalise_source(source_key)
        if not key:
            raise ValueError("source_key is empty")
        data = page.model_dump_json() if page is not None else None
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO journals (source_key, state, data, observed_at, parser_version)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, str(state), data, to_ts(observed_at), parser_version),
            )

    def journal_quality(
        self, source_key: str, now: datetime, *, parser_version: int | None = None
    ) -> CachedJournal | None:
        """The cached lookup if still fresh at `now` (and made by `parser_version` when given)."""
        key = normalise_source(source_key)
        with self._read() as conn:
            row = conn.execute(
                "SELECT state, data, observed_at, parser_version FROM journals WHERE source_key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        state, data, observed, version = row[0], row[1], from_ts(row[2]), int(row[3])
        if parser_version is not None and version != parser_version:
            return None
        if now - observed >= journal_ttl(state):
            return None
        page = JournalPage.model_validate_json(data) if data else None
        return CachedJournal(key, state, page, observed, version)
