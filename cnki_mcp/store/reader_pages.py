"""The reader pages `read_online_html` read (DESIGN.md "Reading"): per paper, the complete body's
title, sections and coverage, and the SHA-256 of its text. The text itself is the paper's
`library_texts` row (kind `html`), so a body is kept once. A stored page is answered only with a
complete text whose SHA-256 is the one the page was read with: a text cut at `MAX_TEXT_CHARS`,
replaced, or gone from the store (the newest `TEXTS_KEPT` stay) is a miss, and the reader is
opened again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from cnki_mcp.models import ReaderPage
from cnki_mcp.store.db import StoreBase, from_ts, to_ts
from cnki_mcp.store.papers import _resolve


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
        text. Pages whose paper no longer has an HTML text leave with the same write."""
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
            )

    def reader_page(self, record_ref: str) -> StoredReaderPage | None:
        """The stored page with its text, when the stored complete text is the one it was read with."""
        with self._read() as conn:
            ref = _resolve(conn, record_ref)
            row = conn.execute(
                "SELECT r.data, r.sha256, r.parser_version, r.observed_at, t.text FROM reader_pages r"
                " JOIN library_texts t ON t.record_ref = r.record_ref AND t.kind = 'html' AND t.complete = 1"
                " WHERE r.record_ref = ?",
                (ref,),
            ).fetchone()
        if row is None:
            return None
        data, sha, version, observed, text = row
        if text_sha256(text) != sha:
            return None
        page = ReaderPage.model_validate({**json.loads(data), "text": text})
        return StoredReaderPage(page, from_ts(observed), int(version))
