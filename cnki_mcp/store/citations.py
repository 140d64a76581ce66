"""Citation lists kept from the article page's JSON API (docs/citation-api.md): each answered
list page, the six counts and the last list entry seen for each paper, so a second call for the
same page costs no request. Keyed by CNKI's file name (`CitationItem.key`)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

from cnki_mcp.identity import detail_token
from cnki_mcp.parse.citations import CitationItem, CitationListPage
from cnki_mcp.store.db import StoreBase, fresh, from_ts, to_ts
from cnki_mcp.stored import load_cached

# Lists change when new papers cite one; a month matches the detail page reuse (site-rules.md §3.8).
CITATION_TTL = timedelta(days=30)


class CitationsMixin(StoreBase):
    def save_citation_page(self, paper_key: str, kind: str, page: CitationListPage, observed_at: datetime) -> None:
        """Keep one answered list page and the entries it names (one transaction)."""
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO citation_pages (paper_key, kind, type_code, start, data, observed_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (paper_key, kind, page.type_code, page.start, page.model_dump_json(), to_ts(observed_at)),
            )
            for item in page.items:
                if item.filename and item.detail_url:
                    conn.execute(
                        "INSERT OR REPLACE INTO citation_nodes (paper_key, data, observed_at) VALUES (?, ?, ?)",
                        (item.key, item.model_dump_json(), to_ts(observed_at)),
                    )

    def citation_page(
        self, paper_key: str, kind: str, type_code: str, start: int, now: datetime
    ) -> CitationListPage | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT data, observed_at FROM citation_pages"
                " WHERE paper_key = ? AND kind = ? AND type_code = ? AND start = ?",
                (paper_key, kind, type_code, start),
            ).fetchone()
        if row is None or not fresh(from_ts(row[1]), now, CITATION_TTL):
            return None
        return load_cached(CitationListPage, row[0])

    def save_citation_metrics(self, paper_key: str, counts: dict[str, int], observed_at: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO citation_metrics (paper_key, data, observed_at) VALUES (?, ?, ?)",
                (paper_key, json.dumps(counts, sort_keys=True), to_ts(observed_at)),
            )

    def citation_metrics(self, paper_key: str, now: datetime) -> dict[str, int] | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT data, observed_at FROM citation_metrics WHERE paper_key = ?", (paper_key,)
            ).fetchone()
        if row is None or not fresh(from_ts(row[1]), now, CITATION_TTL):
            return None
        try:
            return {str(k): int(v) for k, v in json.loads(row[0]).items()}
        except (ValueError, TypeError, AttributeError):  # not the counts this release keeps: asked again
            return None

    def citation_node(self, paper_key: str) -> CitationItem | None:
        """The last list entry seen for a paper (its title, type and detail link)."""
        with self._read() as conn:
            row = conn.execute("SELECT data FROM citation_nodes WHERE paper_key = ?", (paper_key,)).fetchone()
        return load_cached(CitationItem, row[0]) if row else None

    def save_citation_node(self, item: CitationItem, observed_at: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO citation_nodes (paper_key, data, observed_at) VALUES (?, ?, ?)",
                (item.key, item.model_dump_json(), to_ts(observed_at)),
            )

    def citation_nodes_by_detail_token(self, token: str) -> list[CitationItem]:
        """The list entries whose detail link carries the `v` token `token` (the `url` a
        citation list showed for them); one scan, as `find_by_detail_token`."""
        if not token:
            return []
        probe = max(re.findall(r"[A-Za-z0-9]+", token), key=len, default="")
        with self._read() as conn:
            rows = conn.execute("SELECT data FROM citation_nodes WHERE data LIKE ?", (f"%{probe}%",)).fetchall()
        items = [i for r in rows if (i := load_cached(CitationItem, r[0])) is not None]
        return [i for i in items if detail_token(i.detail_url) == token]
