"""Downloads (archived files with SHA-256 and size) and download clicks, recorded BEFORE a
click so that a click whose outcome never arrived is detected later, not replayed."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cnki_mcp.datadir import DOWNLOADS_DIR
from cnki_mcp.errors import InvalidInput
from cnki_mcp.store.db import StoreBase, from_ts, to_ts

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
DOWNLOADED = "downloaded"
# CNKI handled the order and delivered something that is not the file (an HTML page under a PDF
# name, a PDF without its end): whether it charged is unknown, so like a click without an outcome
# it is not clicked again without `retry` (site-rules.md §2.7).
INVALID_FILE = "invalid_file"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def located(stored: str, data_dir: Path) -> Path:
    """Where an archived file recorded as `stored` is in the data directory `data_dir`. The path is
    stored absolute (every release reads it as it is), so a data directory moved or copied to
    another place (a new disk or machine, a restored backup, another CNKI_DATA_DIR) recorded every
    file under its old location: there read_pdf_text refused it as outside downloads/, and
    download_paper answered FILE_EXISTS for the very file it had downloaded. A path outside
    `data_dir` names the file at the same place under this `downloads/` when one is there."""
    path = Path(stored)
    if path.is_relative_to(data_dir):
        return path
    parts = path.parts
    for i, part in enumerate(parts):
        if part == DOWNLOADS_DIR:
            here = data_dir.joinpath(DOWNLOADS_DIR, *parts[i + 1 :])
            if here.is_file():
                return here
    return path


@dataclass(frozen=True, slots=True)
class StoredDownload:
    record_ref: str
    format: str
    path: Path
    sha256: str
    size: int
    observed_at: datetime

    def intact(self) -> bool:
        """The archived file is still there with the recorded size and hash."""
        try:
            return self.path.stat().st_size == self.size and file_sha256(self.path) == self.sha256
        except OSError:
            return False


@dataclass(frozen=True, slots=True)
class DownloadClick:
    click_id: int
    record_ref: str
    format: str
    op_id: str | None
    clicked_at: datetime
    outcome: str | None  # None: the click happened and nothing is known about its result
    outcome_at: datetime | None
    detail: dict[str, Any] | None

    @property
    def uncertain(self) -> bool:
        return self.outcome is None


def _click(row: tuple[Any, ...]) -> DownloadClick:
    return DownloadClick(
        click_id=int(row[0]),
        record_ref=row[1],
        format=row[2],
        op_id=row[3],
        clicked_at=from_ts(row[4]),
        outcome=row[5],
        outcome_at=from_ts(row[6]) if row[6] else None,
        detail=json.loads(row[7]) if row[7] else None,
    )


_CLICK_COLUMNS = "click_id, record_ref, format, op_id, clicked_at, outcome, outcome_at, detail"


class DownloadsMixin(StoreBase):
    def record_download(
        self, record_ref: str, format: str, path: Path, sha256: str, size: int, observed_at: datetime
    ) -> StoredDownload:
        """Record an archived file. Clicks still waiting for an outcome for the same record
        and format are settled as `downloaded` (a late file reconciles its click)."""
        digest = sha256.lower()
        if not _SHA256.match(digest) or size < 0:
            raise InvalidInput("下载记录的 SHA-256 或大小无效", sha256=sha256, size=size)
        stamp = to_ts(observed_at)
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO downloads (record_ref, format, path, sha256, size, observed_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (record_ref, format, str(path), digest, size, stamp),
            )
            conn.execute(
                "UPDATE download_clicks SET outcome = ?, outcome_at = ?"
                " WHERE record_ref = ? AND format = ? AND outcome IS NULL",
                (DOWNLOADED, stamp, record_ref, format),
            )
        return StoredDownload(record_ref, format, Path(path), digest, size, from_ts(stamp))

    def download_for(self, record_ref: str, format: str) -> StoredDownload | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT path, sha256, size, observed_at FROM downloads WHERE record_ref = ? AND format = ?",
                (record_ref, format),
            ).fetchone()
        if row is None:
            return None
        path = located(row[0], self.path.parent)
        return StoredDownload(record_ref, format, path, row[1], int(row[2]), from_ts(row[3]))

    def record_click(self, record_ref: str, format: str, op_id: str | None, clicked_at: datetime) -> int:
        """Call BEFORE clicking a download entry (CNKI may charge for it); returns the click id."""
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO download_clicks (record_ref, format, op_id, clicked_at) VALUES (?, ?, ?, ?)",
                (record_ref, format, op_id, to_ts(clicked_at)),
            )
            return int(cur.lastrowid or 0)

    def click_outcome(
        self, click_id: int, outcome: str, at: datetime, detail: dict[str, Any] | None = None
    ) -> None:
        """Settle a click: e.g. `downloaded`, `refused`, `invalid_file`, `no_file`."""
        with self._write() as conn:
            conn.execute(
                "UPDATE download_clicks SET outcome = ?, outcome_at = ?, detail = ? WHERE click_id = ?",
                (outcome, to_ts(at), json.dumps(detail, ensure_ascii=False) if detail else None, click_id),
            )

    def uncertain_click(self, record_ref: str, format: str | None = None) -> DownloadClick | None:
        """The latest click on this record (and format) whose charge is unknown and still stops a
        call without `retry` (site-rules.md §2.7): its outcome never arrived, or CNKI delivered an
        invalid file for it (`invalid_file`), and no later click of that format has settled. A
        later click of the format is only ever made with `retry=true` (a call without it stops
        here), so the caller accepted this click's risk; once that click settled (downloaded,
        refused, `site_error`, `skipped`, `not_clicked`, ...) its own outcome is what the next call
        follows: one that said "无需 retry" is clicked again without it (it was still stopped by
        the older click). A later click that settled `invalid_file` is itself the one returned."""
        sql = (
            f"SELECT {_CLICK_COLUMNS} FROM download_clicks AS c WHERE record_ref = ?"
            " AND (outcome IS NULL OR outcome = ?) AND NOT EXISTS (SELECT 1 FROM download_clicks AS d"
            " WHERE d.record_ref = c.record_ref AND d.format = c.format AND d.outcome IS NOT NULL"
            " AND d.click_id > c.click_id)"
        )
        args: tuple[Any, ...] = (record_ref, INVALID_FILE)
        if format is not None:
            sql += " AND format = ?"
            args = (*args, format)
        with self._read() as conn:
            row = conn.execute(sql + " ORDER BY click_id DESC LIMIT 1", args).fetchone()
        return _click(row) if row else None

    def open_clicks(self, record_ref: str, format: str) -> list[DownloadClick]:
        """Every click of this record and format whose file may still turn up (its outcome never
        arrived, or `invalid_file`), newest first, whether or not a later click settled: a late
        file of one is archived, and one whose file is arriving is not clicked over, even after
        `uncertain_click` no longer stops calls for it."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_CLICK_COLUMNS} FROM download_clicks WHERE record_ref = ? AND format = ?"
                " AND (outcome IS NULL OR outcome = ?) ORDER BY click_id DESC",
                (record_ref, format, INVALID_FILE),
            ).fetchall()
        return [_click(r) for r in rows]

    def clicks_for(self, record_ref: str) -> list[DownloadClick]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_CLICK_COLUMNS} FROM download_clicks WHERE record_ref = ? ORDER BY click_id",
                (record_ref,),
            ).fetchall()
        return [_click(r) for r in rows]
