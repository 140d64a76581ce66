"""SQLite (WAL) store in the data directory, one process per directory (`Store.open`)."""

from __future__ import annotations

from cnki_mcp.store.core import Store
from cnki_mcp.store.downloads import INVALID_FILE, DownloadClick, StoredDownload, file_sha256
from cnki_mcp.store.journals import MISMATCH, PRESENT, CachedJournal, journal_ttl
from cnki_mcp.store.library import LibraryFilters, LibraryHit, LibraryPage, PendingPdf
from cnki_mcp.store.operations import OPERATIONS_KEPT, StoredOperation
from cnki_mcp.store.papers import StoredDetail
from cnki_mcp.store.searches import SearchEvidence, SearchPage, SearchRecord

__all__ = [
    "INVALID_FILE",
    "MISMATCH",
    "OPERATIONS_KEPT",
    "PRESENT",
    "CachedJournal",
    "DownloadClick",
    "LibraryFilters",
    "LibraryHit",
    "LibraryPage",
    "PendingPdf",
    "SearchEvidence",
    "SearchPage",
    "SearchRecord",
    "Store",
    "StoredDetail",
    "StoredDownload",
    "StoredOperation",
    "file_sha256",
    "journal_ttl",
]
