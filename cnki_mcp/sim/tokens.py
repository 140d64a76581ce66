"""Opaque, expiring tokens: detail `v` tokens, reader `invoice`/`nonce` pairs, download order ids.

CNKI's `v` tokens are ~100 url-safe characters and stop working after a while (the page then
answers 404); reader parameters are short-lived secrets. Time comes from an injectable clock."""

from __future__ import annotations

import base64
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["detail", "reader", "download", "author", "entry", "journal", "file"]


def opaque(nbytes: int = 60) -> str:
    """URL-safe random text in CNKI's style (base64url without padding)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(nbytes)).decode("ascii").rstrip("=")


@dataclass(frozen=True, slots=True)
class Grant:
    kind: Kind
    value: str  # record id (or author name / payload)
    issued: float
    extra: str = ""  # download format, reader nonce, ...


class TokenStore:
    """Thread-safe token table. `ttl` None means tokens never expire."""

    def __init__(self, clock: Callable[[], float], ttl: float | None = None) -> None:
        self._clock = clock
        self.ttl = ttl
        self._lock = threading.Lock()
        self._table: dict[str, Grant] = {}

    def issue(self, kind: Kind, value: str, extra: str = "", nbytes: int = 60) -> str:
        token = opaque(nbytes)
        with self._lock:
            self._table[token] = Grant(kind, value, self._clock(), extra)
        return token

    def lookup(self, kind: Kind, token: str, *, expires: bool = True) -> Grant | None:
        """The grant for a token of that kind, or None when unknown or expired."""
        with self._lock:
            grant = self._table.get(token)
        if grant is None or grant.kind != kind:
            return None
        if expires and self.ttl is not None and self._clock() - grant.issued > self.ttl:
            return None
        return grant

    def reader_pair(self, record_id: str) -> tuple[str, str]:
        """A reader `invoice` and its matching `nonce`."""
        nonce = opaque(12)
        invoice = self.issue("reader", record_id, extra=nonce, nbytes=90)
        return invoice, nonce

    def check_reader(self, invoice: str, nonce: str) -> Grant | None:
        grant = self.lookup("reader", invoice)
        if grant is None or not secrets.compare_digest(grant.extra, nonce):
            return None
        return grant

    def clear(self) -> None:
        with self._lock:
            self._table.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._table)
