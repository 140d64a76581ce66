"""Operation records: kinds, statuses, budgets and their accounting, the final-status rules and
the `OperationSink` protocol the store implements (with `MemorySink`, the in-memory one). The
manager that runs operations is `jobs.JobManager`."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.clock import Clock
from cnki_mcp.errors import BudgetExhausted, CnkiError
from cnki_mcp.stored import load

KEEP_OPERATIONS = 200
# Key of a loaded checkpoint under which the entries appended since it was saved are listed
# (`OperationContext.checkpoint_append`); reserved in every checkpoint dict.
CHECKPOINT_LOG = "log"
INTERRUPTED_MESSAGE = (
    "服务重启前该操作未完成，已中断；检索（search、structured_search）与引文网络（citation_graph、"
    "find_citation_path）可用 operation_control continue 从检查点继续，其他操作请用相同参数重新调用原工具"
)
IDLE = "idle"


class OperationKind(StrEnum):
    SEARCH = "search"
    METADATA = "metadata"
    EXPORT = "export"
    LINKS = "links"
    VERIFY = "verify"
    READ = "read"
    DOWNLOAD = "download"
    LOGIN = "login"
    SESSION = "session"
    WATCH = "watch"
    CITATIONS = "citations"  # get_references, get_citing, citation_graph, find_citation_path


class OperationStatus(StrEnum):
    RUNNING = "running"
    AWAITING_USER = "awaiting_user"
    COMPLETED = "completed"
    PARTIAL = "partial"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def active(self) -> bool:
        return self in (OperationStatus.RUNNING, OperationStatus.AWAITING_USER)


OnVerification = Literal["wait", "skip"]


def finished_message(status: OperationStatus, item_errors: int) -> str | None:
    """The message of an operation that ended with its result, in place of its last progress
    message ("第 1 轮检索，已有候选 0 篇" would read as the outcome); None where the ending's own
    message (an error, a cancel, an interruption) says it."""
    if status is OperationStatus.COMPLETED:
        return "已完成"
    if status is OperationStatus.PARTIAL and item_errors:
        return f"已完成，{item_errors} 项出错（见 errors）"
    return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Progress(_Model):
    done: int = 0
    total: int | None = None
    unit: str | None = None


class BudgetSpec(_Model):
    max_requests: int = Field(ge=0)
    timeout_seconds: float = Field(ge=0)
    on_verification: OnVerification = "wait"


# Fixed budgets of the tools other than search (site-rules.md §3.9).
DEFAULT_BUDGETS: dict[OperationKind, BudgetSpec] = {
    OperationKind.READ: BudgetSpec(max_requests=60, timeout_seconds=900),
    OperationKind.DOWNLOAD: BudgetSpec(max_requests=30, timeout_seconds=1800),
    OperationKind.METADATA: BudgetSpec(max_requests=600, timeout_seconds=900),
    OperationKind.EXPORT: BudgetSpec(max_requests=300, timeout_seconds=900),
    OperationKind.LINKS: BudgetSpec(max_requests=200, timeout_seconds=900),
    OperationKind.VERIFY: BudgetSpec(max_requests=300, timeout_seconds=900),
    OperationKind.LOGIN: BudgetSpec(max_requests=20, timeout_seconds=1800),
    OperationKind.SESSION: BudgetSpec(max_requests=10, timeout_seconds=60),
    OperationKind.WATCH: BudgetSpec(max_requests=30, timeout_seconds=600),
    OperationKind.CITATIONS: BudgetSpec(max_requests=200, timeout_seconds=900),
}


class OperationErrorInfo(_Model):
    code: str
    message: str
    retryable: bool = False
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, error: CnkiError) -> OperationErrorInfo:
        return cls(code=error.code, message=error.message, retryable=error.retryable, details=error.details)


class OperationRecord(_Model):
    """What `operation_status` returns. `checkpoint` is stored (`to_storage`) but excluded from every
    dump, so it never reaches a client."""

    operation_id: str
    kind: OperationKind
    status: OperationStatus = OperationStatus.RUNNING
    stage: str = "starting"
    message: str = ""
    progress: Progress = Field(default_factory=Progress)
    requests: int = 0
    active_seconds: float = 0.0
    budget: BudgetSpec
    result: Any = None
    errors: list[OperationErrorInfo] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    checkpoint: Any = Field(default=None, exclude=True)
    # True when errors[0] is the error that ended the run (the rest are per-item errors).
    final_error: bool = Field(default=False, exclude=True)

    def to_storage(self, *, with_checkpoint: bool = True) -> dict[str, Any]:
        """JSON-ready dict including the stored-only fields (for the store only)."""
        data = self.model_dump(mode="json")
        if with_checkpoint:
            data["checkpoint"] = self.checkpoint
        data["final_error"] = self.final_error
        return data

    @classmethod
    def from_storage(cls, data: dict[str, Any]) -> OperationRecord:
        return load(cls, data)  # a field a newer release added is left out

    def public(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def with_log(checkpoint: Any, log: list[Any]) -> Any:
    """A stored checkpoint with the entries appended since it was saved (none: unchanged)."""
    if not log:
        return checkpoint
    base = dict(checkpoint) if isinstance(checkpoint, dict) else {}
    base[CHECKPOINT_LOG] = [*base.get(CHECKPOINT_LOG, []), *log]
    return base


def new_operation_id() -> str:
    return "op_" + secrets.token_hex(12)


def final_status(
    *, cancelled: bool, error: OperationErrorInfo | None, has_result: bool, item_errors: int
) -> OperationStatus:
    """site-rules.md §5, in order: cancelled; an error with a result or a retryable error -> partial;
    VERIFICATION_SKIPPED -> skipped; any other error -> failed; per-item errors -> partial; else
    completed."""
    if cancelled:
        return OperationStatus.CANCELLED
    if error is not None:
        if has_result or error.retryable:
            return OperationStatus.PARTIAL
        if error.code == "VERIFICATION_SKIPPED":
            return OperationStatus.SKIPPED
        return OperationStatus.FAILED
    if item_errors:
        return OperationStatus.PARTIAL
    return OperationStatus.COMPLETED


class Budget:
    """Request and active-time accounting. Active time runs only while the operation is running:
    `pause()` when it starts waiting for the person, `resume()` when it runs again."""

    def __init__(
        self,
        clock: Clock,
        max_requests: int,
        timeout_seconds: float,
        *,
        requests: int = 0,
        active: float = 0.0,
    ) -> None:
        self._clock = clock
        self.max_requests = max_requests
        self.timeout_seconds = timeout_seconds
        self.requests = requests
        self._active = active
        self._since: float | None = None  # start of the current running segment

    @property
    def running(self) -> bool:
        return self._since is not None

    @property
    def active_seconds(self) -> float:
        if self._since is None:
            return self._active
        return self._active + (self._clock.monotonic() - self._since)

    @property
    def exhausted(self) -> bool:
        return self.requests >= self.max_requests or self.active_seconds > self.timeout_seconds

    def resume(self) -> None:
        if self._since is None:
            self._since = self._clock.monotonic()

    def pause(self) -> None:
        if self._since is not None:
            self._active += self._clock.monotonic() - self._since
            self._since = None

    def charge(self) -> None:
        """Count one request, or raise BudgetExhausted without counting it."""
        if self.requests >= self.max_requests:
            raise BudgetExhausted(
                requests=self.requests, max_requests=self.max_requests, reason="max_requests"
            )
        if self.active_seconds > self.timeout_seconds:
            raise BudgetExhausted(
                active_seconds=round(self.active_seconds, 3),
                timeout_seconds=self.timeout_seconds,
                reason="timeout_seconds",
            )
        self.requests += 1


class OperationSink(Protocol):
    """Where operation records live between processes (the SQLite store implements this)."""

    def save(
        self, record: OperationRecord, *, keep: int = KEEP_OPERATIONS, with_checkpoint: bool = True
    ) -> None:
        """Upsert the record; with `with_checkpoint` its checkpoint too (which replaces the stored
        one and drops its appended entries), else the stored checkpoint stays as it is. Then drop
        the finished records beyond the `keep` updated last (never a running or awaiting_user one,
        nor one just continued however old)."""
        ...

    def append_checkpoint(self, operation_id: str, entry: Any) -> None:
        """Add one entry to the stored checkpoint of a saved operation (O(entry), not O(checkpoint)):
        a loaded dict checkpoint lists the entries, in order, under `CHECKPOINT_LOG`."""
        ...

    def load(self, operation_id: str) -> OperationRecord | None:
        """The stored record with its checkpoint, or None."""
        ...

    def list_recent(self, n: int) -> list[OperationRecord]:
        """The newest `n` records, newest first (by created_at)."""
        ...

    def mark_interrupted(self, message: str, at: datetime) -> list[str]:
        """Set every stored running/awaiting_user record to interrupted with `message` and
        updated_at `at`; return their ids."""
        ...


class MemorySink:
    """OperationSink in memory, copying records in and out like a real store would."""

    def __init__(self) -> None:
        self._records: dict[str, OperationRecord] = {}
        self._logs: dict[str, list[Any]] = {}
        self.saves = 0

    def save(
        self, record: OperationRecord, *, keep: int = KEEP_OPERATIONS, with_checkpoint: bool = True
    ) -> None:
        self.saves += 1
        prev = self._records.get(record.operation_id)
        if with_checkpoint:
            self._records[record.operation_id] = record.model_copy(deep=True)
            self._logs.pop(record.operation_id, None)
        else:  # the record without its checkpoint (not copied), which stays as stored
            copied = OperationRecord.from_storage(record.to_storage(with_checkpoint=False))
            copied.checkpoint = None if prev is None else prev.checkpoint
            self._records[record.operation_id] = copied
        finished = sorted(  # by the last update, as the store trims (store/operations.py)
            (r for r in self._records.values() if not r.status.active),
            key=lambda r: r.updated_at,
            reverse=True,
        )
        overflow = len(self._records) - keep
        for old in reversed(finished):
            if overflow <= 0:
                break
            del self._records[old.operation_id]
            self._logs.pop(old.operation_id, None)
            overflow -= 1

    def append_checkpoint(self, operation_id: str, entry: Any) -> None:
        if operation_id in self._records:
            self._logs.setdefault(operation_id, []).append(copy.deepcopy(entry))

    def _loaded(self, record: OperationRecord) -> OperationRecord:
        out = record.model_copy(deep=True)
        out.checkpoint = with_log(out.checkpoint, copy.deepcopy(self._logs.get(record.operation_id, [])))
        return out

    def load(self, operation_id: str) -> OperationRecord | None:
        record = self._records.get(operation_id)
        return self._loaded(record) if record else None

    def list_recent(self, n: int) -> list[OperationRecord]:
        ordered = sorted(self._records.values(), key=lambda r: r.created_at, reverse=True)
        return [self._loaded(r) for r in ordered[:n]]

    def mark_interrupted(self, message: str, at: datetime) -> list[str]:
        ids: list[str] = []
        for record in self._records.values():
            if record.status.active:
                record.status = OperationStatus.INTERRUPTED
                record.message = message
                record.updated_at = at
                ids.append(record.operation_id)
        return ids


class _StoredOperation(Protocol):
    @property
    def record(self) -> dict[str, Any]: ...

    @property
    def checkpoint(self) -> Any: ...


class OperationStore(Protocol):
    """The operations part of `store.Store` (its OperationsMixin)."""

    def save_operation(
        self,
        op_id: str,
        kind: str,
        status: str,
        record_json: dict[str, Any],
        checkpoint: Any,
        created_at: datetime,
        updated_at: datetime,
    ) -> None: ...

    def update_operation(
        self,
        op_id: str,
        kind: str,
        status: str,
        record_json: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
    ) -> None: ...

    def append_checkpoint(self, op_id: str, entry: Any) -> None: ...

    def load_operation(self, op_id: str) -> _StoredOperation | None: ...

    def list_operations(self, limit: int = 20) -> Sequence[_StoredOperation]: ...

    def mark_unfinished_interrupted(self, message: str, now: datetime | None = None) -> list[str]: ...


class StoreSink:
    """OperationSink on the SQLite store (which keeps the 200 updated last itself, never trimming
    an unfinished operation)."""

    def __init__(self, store: OperationStore) -> None:
        self._store = store

    def save(
        self, record: OperationRecord, *, keep: int = KEEP_OPERATIONS, with_checkpoint: bool = True
    ) -> None:
        data = record.to_storage(with_checkpoint=with_checkpoint)
        checkpoint = data.pop("checkpoint", None)
        args = (record.operation_id, record.kind.value, record.status.value, data)
        if with_checkpoint:
            self._store.save_operation(*args, checkpoint, record.created_at, record.updated_at)
        else:
            self._store.update_operation(*args, record.created_at, record.updated_at)

    def append_checkpoint(self, operation_id: str, entry: Any) -> None:
        self._store.append_checkpoint(operation_id, entry)

    def load(self, operation_id: str) -> OperationRecord | None:
        row = self._store.load_operation(operation_id)
        return _from_row(row) if row is not None else None

    def list_recent(self, n: int) -> list[OperationRecord]:
        return [_from_row(row) for row in self._store.list_operations(n)]

    def mark_interrupted(self, message: str, at: datetime) -> list[str]:
        return self._store.mark_unfinished_interrupted(message, at)


def _from_row(row: _StoredOperation) -> OperationRecord:
    return OperationRecord.from_storage({**row.record, "checkpoint": row.checkpoint})
