"""The Store: one SQLite database in the data directory, one process per directory."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from types import TracebackType

from filelock import FileLock

from cnki_mcp import datadir
from cnki_mcp.clock import Clock
from cnki_mcp.errors import CnkiError
from cnki_mcp.store.citations import CitationsMixin
from cnki_mcp.store.db import DB_NAME, acquire_lock, open_database
from cnki_mcp.store.downloads import DownloadsMixin
from cnki_mcp.store.journals import JournalsMixin
from cnki_mcp.store.library import LibraryMixin
from cnki_mcp.store.library_upkeep import IndexUpkeepMixin, upkeep_due
from cnki_mcp.store.misses import MissesMixin
from cnki_mcp.store.operations import OperationsMixin
from cnki_mcp.store.papers import PapersMixin
from cnki_mcp.store.reader_pages import ReaderPagesMixin
from cnki_mcp.store.searches import SearchesMixin
from cnki_mcp.store.searchlog import SearchLogMixin
from cnki_mcp.store.watches import WatchesMixin

log = logging.getLogger(__name__)

UPKEEP_RETRY_MIN = 1.0  # seconds before a refused upkeep step is tried again, doubling
UPKEEP_RETRY_MAX = 60.0  # ... up to this


class Store(
    PapersMixin, JournalsMixin, SearchesMixin, OperationsMixin, DownloadsMixin, LibraryMixin, IndexUpkeepMixin,
    SearchLogMixin, WatchesMixin, CitationsMixin, ReaderPagesMixin, MissesMixin,
):
    """Papers, journal quality, searches with evidence, operations, downloads and the library index.

    Every write method commits before it returns (see `store.db` for durability). Built by
    `Store.open`; `close()` releases the database and the directory lock."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        lock: FileLock,
        data_dir: Path,
        clock: Clock,
        notices: list[str],
    ) -> None:
        self._conn = conn
        self._dir_lock = lock
        self._mutex = threading.RLock()
        self._closed = False
        self.clock = clock
        self.data_dir = data_dir
        self.path = data_dir / DB_NAME
        st = os.stat(self.path)  # the file opened: a write checks it is still the one there
        self._file_id = (st.st_dev, st.st_ino)
        self.notices = notices  # things the person should know (e.g. a database set aside)
        with self._mutex:
            self._index_pending, self._compaction_pending = upkeep_due(conn)
        self._upkeep: threading.Thread | None = None
        self._upkeep_wake = threading.Event()  # set by close(): a pause between steps ends at once

    @classmethod
    def open(cls, data_dir: Path, clock: Clock, *, lock_timeout: float = 0.5, upkeep: bool = True) -> Store:
        """Create `data_dir` if needed and make it private (`datadir.prepare`: 0700/0600,
        symlinks refused), lock it (DATA_DIRECTORY_IN_USE when another process holds it) and
        open or create `cnki.sqlite3` in WAL mode (DATABASE_UNUSABLE when it cannot be).
        `upkeep=False` leaves a rebuild of the library index to `index_step` calls (tests)."""
        data_dir = datadir.prepare(Path(data_dir))
        lock = acquire_lock(data_dir, lock_timeout)
        notices: list[str] = []
        try:
            conn = open_database(data_dir / DB_NAME, clock, notices)
        except BaseException:
            lock.release()
            raise
        for notice in notices:
            # the server's log is what a client shows of it: without this line a database set
            # aside left an empty library and "not found" answers, told only by diagnostics
            log.warning("%s", notice)
        store = cls(conn, lock, data_dir, clock, notices)
        try:
            store.prune_misses(clock.now())  # what a draft's references asked is not kept much past a day
        except (CnkiError, sqlite3.Error) as exc:  # a read-only or full disk: pruned by a later open or write
            log.warning("lookup misses not pruned: %s", exc)
        if upkeep:
            store.start_upkeep()
        return store

    def start_upkeep(self) -> None:
        """Finish the library index rebuild or compaction the open left (a large library's) in
        a thread, step by step, while the server answers (DESIGN.md §Library search, "Rebuild")."""
        if (self._index_pending or self._compaction_pending) and self._upkeep is None:
            if self._index_pending:
                log.info("library index: rebuilding in the background; search_library answers when it is done")
            self._upkeep = threading.Thread(target=self._rebuild, name="cnki-library-index", daemon=True)
            self._upkeep.start()

    def _rebuild(self) -> None:
        """Steps until nothing is left or the store closes. A step refused (another program
        holding the database past the busy timeout, a full disk) is tried again after a pause
        that doubles from UPKEEP_RETRY_MIN up to UPKEEP_RETRY_MAX seconds, its reason said by search_library meanwhile
        (`upkeep_stalled`): ending the thread left search_library saying 稍后重试 for ever."""
        wait = 0.005  # a short pause between steps lets waiting calls in
        while not self._closed:
            try:
                if self.index_step():
                    break
                self.upkeep_stalled = None
                wait = 0.005
            except RuntimeError:  # closed between two steps: the next open goes on from there
                return
            except (CnkiError, sqlite3.Error) as exc:
                reason = exc.details.get("reason") if isinstance(exc, CnkiError) else None
                self.upkeep_stalled = str(reason or getattr(exc, "code", None) or type(exc).__name__)
                wait = min(max(wait * 2, UPKEEP_RETRY_MIN), UPKEEP_RETRY_MAX)
                log.warning("library index: a step was refused, tried again in %.0f s: %s", wait, exc)
            self._upkeep_wake.wait(wait)
        if not self._closed:
            log.info("library index: up to date")

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._mutex:  # waits for a rebuild step under way; the thread stops at the next
            if self._closed:
                return
            self._closed = True
            try:
                self._conn.close()
            finally:
                self._dir_lock.release()
        self._upkeep_wake.set()
        if self._upkeep is not None and self._upkeep is not threading.current_thread():
            self._upkeep.join()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
