"""Journal quality cache: one row per source key, with TTLs by state (site-rules.md §3.8)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from cnki_mcp.identity import source_key as normalise_source
from cnki_mcp.models import JournalPage
from cnki_mcp.store.db import StoreBase, fresh, from_ts, to_ts
from cnki_mcp.stored import load_cached

PRESENT = "present"
MISMATCH = "mismatch"  # the journal page found was another journal (identity unconfirmed)

TTL_PRESENT = timedelta(days=7)
TTL_MISMATCH = timedelta(hours=1)
TTL_OTHER = timedelta(days=1)  # unknown, absent, failed lookups
# Rows kept decoded in memory (DESIGN.md "Ranking cost": a ranking step looks up every source of
# its candidates, ~650 at 3,000 candidates, most of them never looked up on CNKI). The store's
# directory lock makes this process the only writer, and `save_journal` is the only write, so the
# memo is exact; emptied when it grows past this many sources.
MEMO_LIMIT = 8192


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
    _journal_memo: dict[str, CachedJournal | None]

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
            self._memo().pop(key, None)

    def _memo(self) -> dict[str, CachedJournal | None]:
        memo = self.__dict__.get("_journal_memo")
        if memo is None or len(memo) > MEMO_LIMIT:
            memo = self._journal_memo = {}
        return memo

    def journal_quality(
        self, source_key: str, now: datetime, *, parser_version: int | None = None
    ) -> CachedJournal | None:
        """The cached lookup if still fresh at `now` (and made by `parser_version` when given)."""
        key = normalise_source(source_key)
        memo = self._memo()
        if key in memo:
            cached = memo[key]
        else:
            with self._read() as conn:
                row = conn.execute(
                    "SELECT state, data, observed_at, parser_version FROM journals WHERE source_key = ?",
                    (key,),
                ).fetchone()
            cached = None
            page = load_cached(JournalPage, row[1]) if row is not None and row[1] else None
            if row is not None and (page is not None or not row[1]):  # a page this release cannot read: a miss
                cached = CachedJournal(key, row[0], page, from_ts(row[2]), int(row[3]))
            memo[key] = cached
        if cached is None:
            return None
        if parser_version is not None and cached.parser_version != parser_version:
            return None
        if not fresh(cached.observed_at, now, journal_ttl(cached.state)):
            return None
        return cached

    def journal_tiers(self, sources: Iterable[str | None]) -> dict[str, list[str]]:
        """The tiers each source's stored journal page lists (keyed by the source as given; a
        source with no page or no tiers left out), whatever the page's age: what the library's
        `source_tiers` filter reads (`library._tier_sources`), so a result it lets through shows
        the tiers it matched."""
        keys = {s: normalise_source(s) for s in sources if s and normalise_source(s)}
        found: dict[str, list[str]] = {}
        with self._read() as conn:
            for key in set(keys.values()):
                row = conn.execute("SELECT data FROM journals WHERE source_key = ? AND data IS NOT NULL", (key,)).fetchone()
                tiers = [str(t) for t in (json.loads(row[0]).get("tiers") or [])] if row else []
                if tiers:
                    found[key] = tiers
        return {source: found[key] for source, key in keys.items() if key in found}

    def stored_tiers(self) -> set[str]:
        """Every tier a stored journal page lists, whatever its age (what `source_tiers` can find
        beyond the known vocabulary: a navi tag the parser keeps unrecognised)."""
        found: set[str] = set()
        with self._read() as conn:
            for (data,) in conn.execute("SELECT data FROM journals WHERE data IS NOT NULL"):
                found.update(str(t) for t in (json.loads(data).get("tiers") or []))
        return found
