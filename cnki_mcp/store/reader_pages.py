"""The reader pages `read_online_html` read (DESIGN.md "Reading"): per paper, the complete body's
title, sections and coverage, and the SHA-256 of its text. The text itself is the paper's
`library_texts` row (kind `html`), so a body is kept once. A stored page is answered only with a
complete text whose SHA-256 is the one the page was read with: a text cut at `MAX_TEXT_CHARS`,
replaced, or gone from the store (the newest `TEXTS_KEPT` stay) is a miss, and the reader is
opened again. So is a page read by another parser version, one outside `READER_PAGES_KEPT` (or
stamped later than now: the wall clock was ahead when it was kept), and one this release's models
cannot read; such a row is deleted when it is asked for (a store that cannot write then keeps
it: a miss all the same)."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta

from cnki_mcp.errors import CnkiError
from cnki_mcp.models import ReaderPage
from cnki_mcp.store.db import StoreBase, fresh, from_ts, to_ts
from cnki_mcp.store.papers import _resolve
from cnki_mcp.stored import load_cached

# A stored complete body is reused as a stored detail page is (site-rules.md §3.8): read by the
# current parser version within 30 days.
READER_PAGES_KEPT = timedelta(days=30)

log = logging.getLogger(__name__)


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredReaderPage:
    page: ReaderPage
    observed_at: datetime
    parser_version: int


class ReaderPagesMixin(StoreBase):
    def save_reader_page(
        self, record_ref: str, page: ReaderPage, observed_at: datetime, *, parser_version: int
    ) -> None:
        """Keep `page` (a complete body; its text already saved with `save_fulltext`) without its
        text. Pages whose paper no longer has an HTML text, and pages past READER_PAGES_KEPT or
        stamped later than `observed_at`, leave with the same write."""
        data = page.model_dump_json(exclude={"text"})
        with self._write() as conn:
            ref = _resolve(conn, record_ref)
            conn.execute(
                "INSERT OR REPLACE INTO reader_pages (record_ref, data, sha256, parser_version, observed_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (ref, data, text_sha256(page.text), parser_version, to_ts(observed_at)),
            )
            conn.execute(
                "DELETE FROM reader_pages WHERE record_ref NOT IN"
                " (SELECT record_ref FROM library_texts WHERE kind = 'html' AND chars > 0)"
                " OR observed_at < ? OR observed_at > ?",
                (to_ts(observed_at - READER_PAGES_KEPT), to_ts(observed_at)),
            )

    def reader_page(self, record_ref: str, now: datetime, *, parser_version: int) -> StoredReaderPage | None:
        """The stored page with its text, when it was read by `parser_version` within
        READER_PAGES_KEPT before `now` and the stored complete text is the one it was read with.
        A row that fails any of these is deleted (a miss either way; the reader's next read replaces it)."""
        with self._read() as conn:
            ref = _resolve(conn, record_ref)
            row = conn.execute(
                "SELECT r.data, r.sha256, r.parser_version, r.observed_at, t.text FROM reader_pages r"
                " LEFT JOIN library_texts t ON t.record_ref = r.record_ref AND t.kind = 'html' AND t.complete = 1"
                " WHERE r.record_ref = ?",
                (ref,),
            ).fetchone()
        if row is None:
            return None
        data, sha, version, observed, text = row
        page = _usable(data, sha, version, observed, text, now, parser_version)
        if page is None:
            try:
                with self._write() as conn:
                    # only the row judged: a page another process kept meanwhile stays
                    conn.execute(
                        "DELETE FROM reader_pages WHERE record_ref = ? AND observed_at = ? AND sha256 = ?",
                        (ref, observed, sha),
                    )
            except (CnkiError, sqlite3.Error) as exc:
                # a read-only or full disk, a database locked: a miss all the same (it made the read
                # DATA_DIRECTORY_UNUSABLE / DATABASE_UNUSABLE); the next save or ask deletes the row
                log.warning("stale reader page not deleted: %s", exc)
            return None
        return StoredReaderPage(page, from_ts(observed), int(version))


def _usable(
    data: str, sha: str, version: int, observed: str, text: str | None, now: datetime, parser_version: int
) -> ReaderPage | None:
    """The page a row holds, or None: version and age are judged before the data is read, so a row
    of another version is never handed to this release's models."""
    try:
        if int(version) != parser_version or text is None or text_sha256(text) != sha:
            return None
        if not fresh(from_ts(observed), now, READER_PAGES_KEPT):
            return None
        return load_cached(ReaderPage, {**json.loads(data), "text": text})
    except (ValueError, TypeError):  # not a time, not JSON or not an object
        return None
