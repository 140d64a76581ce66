"""Operations persistence: one row per operation with its record and checkpoint JSON, and the
entries appended to that checkpoint since (`operation_log`, one row each, so a progress tick
writes what is new, not the whole checkpoint). The 200 updated last are kept (by `updated_at`:
an old operation just continued is as new as its continue, not pruned the moment it ends because
200 others were created after it); unfinished ones are never trimmed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cnki_mcp.operations import with_log
from cnki_mcp.store.db import StoreBase, from_ts, to_ts

OPERATIONS_KEPT = 200
UNFINISHED = ("running", "awaiting_user")
INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class StoredOperation:
    op_id: str
    kind: str
    status: str
    created_at: datetime
    updated_at: datetime
    record: dict[str, Any]
    checkpoint: dict[str, Any] | None


_COLUMNS = "op_id, kind, status, created_at, updated_at, record, checkpoint"


def _op(conn: Any, row: tuple[Any, ...]) -> StoredOperation:
    log = [
        json.loads(r[0])
        for r in conn.execute("SELECT entry FROM operation_log WHERE op_id = ? ORDER BY seq", (row[0],))
    ]
    return StoredOperation(
        op_id=row[0],
        kind=row[1],
        status=row[2],
        created_at=from_ts(row[3]),
        updated_at=from_ts(row[4]),
        record=json.loads(row[5]),
        checkpoint=with_log(json.loads(row[6]) if row[6] is not None else None, log),
    )


class OperationsMixin(StoreBase):
    def save_operation(
        self,
        op_id: str,
        kind: str,
        status: str,
        record_json: dict[str, Any],
        checkpoint: dict[str, Any] | None,
        created_at: datetime,
        updated_at: datetime,
    ) -> None:
        """Insert or replace an operation; `checkpoint=None` stores no checkpoint. The entries
        appended to the previous checkpoint are dropped (the new one includes them)."""
        with self._write() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO operations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    op_id,
                    kind,
                    status,
                    to_ts(created_at),
                    to_ts(updated_at),
                    json.dumps(record_json, ensure_ascii=False),
                    json.dumps(checkpoint, ensure_ascii=False) if checkpoint is not None else None,
                ),
            )
            conn.execute("DELETE FROM operation_log WHERE op_id = ?", (op_id,))
            self._trim(conn)

    def update_operation(
        self,
        op_id: str,
        kind: str,
        status: str,
        record_json: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
    ) -> None:
        """Insert or update an operation's record, leaving its stored checkpoint and log as they are."""
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO operations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL)"
                " ON CONFLICT(op_id) DO UPDATE SET kind = excluded.kind, status = excluded.status,"
                " updated_at = excluded.updated_at, record = excluded.record",
                (
                    op_id,
                    kind,
                    status,
                    to_ts(created_at),
                    to_ts(updated_at),
                    json.dumps(record_json, ensure_ascii=False),
                ),
            )
            self._trim(conn)

    def append_checkpoint(self, op_id: str, entry: Any) -> None:
        """One entry added to the operation's checkpoint: one small row, whatever the checkpoint's size."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO operation_log (op_id, seq, entry) VALUES"
                " (?, COALESCE((SELECT MAX(seq) FROM operation_log WHERE op_id = ?), 0) + 1, ?)",
                (op_id, op_id, json.dumps(entry, ensure_ascii=False)),
            )

    @staticmethod
    def _trim(conn: Any) -> None:
        marks = ",".join("?" * len(UNFINISHED))
        gone = conn.execute(
            f"DELETE FROM operations WHERE status NOT IN ({marks}) AND op_id NOT IN"
            " (SELECT op_id FROM operations ORDER BY updated_at DESC, op_id DESC LIMIT ?)",
            (*UNFINISHED, OPERATIONS_KEPT),
        ).rowcount
        if gone:
            conn.execute("DELETE FROM operation_log WHERE op_id NOT IN (SELECT op_id FROM operations)")

    def load_operation(self, op_id: str) -> StoredOperation | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM operations WHERE op_id = ?", (op_id,)).fetchone()
            return _op(conn, row) if row else None

    def list_operations(self, limit: int = 20) -> list[StoredOperation]:
        """Newest first by creation time."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM operations ORDER BY created_at DESC, op_id DESC LIMIT ?",
                (max(0, limit),),
            ).fetchall()
            return [_op(conn, r) for r in rows]

    def mark_unfinished_interrupted(self, message: str, now: datetime | None = None) -> list[str]:
        """At start-up: operations a previous process left running/awaiting_user become
        `interrupted` (status column and the record's `status`/`message`/`updated_at`)."""
        stamp = to_ts(now or self.clock.now())
        marks = ",".join("?" * len(UNFINISHED))
        with self._write() as conn:
            rows = conn.execute(
                f"SELECT op_id, record FROM operations WHERE status IN ({marks})", UNFINISHED
            ).fetchall()
            for op_id, raw in rows:
                record = json.loads(raw)
                record.update(status=INTERRUPTED, message=message, updated_at=stamp)
                conn.execute(
                    "UPDATE operations SET status = ?, record = ?, updated_at = ? WHERE op_id = ?",
                    (INTERRUPTED, json.dumps(record, ensure_ascii=False), stamp, op_id),
                )
        return [r[0] for r in rows]
