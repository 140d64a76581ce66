"""The simulator's request log: one entry per request, for tests and benchmarks."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class LogEntry:
    t: float  # server clock (monotonic) when the request arrived
    wall: float  # time.time() when the request arrived
    method: str
    host: str
    path: str
    params: dict[str, Any]  # key parameters (grid: query summary, pageNum, ...; detail: record id)
    status: int
    fault: str | None = None  # fault kind applied, if any
    client: str = ""  # the browser's Ecp_ClientId cookie ("" when it sent none)
    duration: float = 0.0  # seconds spent answering (latency injection included)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


class RequestLog:
    """Thread-safe list of entries with an optional JSONL file sink (appended, line-buffered)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: list[LogEntry] = []
        self._path = Path(path) if path else None

    def add(self, entry: LogEntry) -> None:
        with self._lock:
            self._entries.append(entry)
            if self._path is not None:
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(entry.to_json() + "\n")

    def entries(self) -> list[LogEntry]:
        with self._lock:
            return list(self._entries)

    def for_path(self, prefix: str, method: str | None = None) -> list[LogEntry]:
        return [
            e for e in self.entries() if e.path.startswith(prefix) and (method is None or e.method == method)
        ]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
