"""Upkeep of the library index (DESIGN.md §Library search, "Rebuild" and "compaction"): the
rebuild after a schema step or an analyzer change, and the compaction once enough rows were
rewritten. A small library gets both inside the open (`ensure_index`, run by `open_database`
after the migrations); a large one after it, in steps (`rebuild_step`, `compact_step`), run by
the store's upkeep thread through `IndexUpkeepMixin.index_step`, so the open (and the client's
handshake) never waits for them."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import ValidationError

from cnki_mcp.identity import Paper
from cnki_mcp.store.db import LIBRARY_FTS_TABLE, StoreBase
from cnki_mcp.store.library import ANALYZER_VERSION, _meta, _set_meta, index_paper
from cnki_mcp.stored import load

log = logging.getLogger(__name__)

# Rebuilding (DESIGN.md §Library search, "Rebuild"): a library of up to REBUILD_AT_OPEN papers is
# rebuilt inside the open, as before; a larger one after it, REBUILD_STEP papers per transaction
# (`Store.index_step`, run by the store's upkeep thread), so a start after an upgrade answers the
# client's handshake at once: 100,000 papers took 107-362 s to rebuild, past a client's 60 s
# handshake timeout, and a client that killed the server then restarted the rebuild from zero
# every time. `library_meta` keeps the rebuild's place: `rebuild_after` (the last `papers` rowid
# indexed) and `rebuilding` (the analyzer it uses), so a process killed mid-way goes on from there.
REBUILD_AT_OPEN = 2_000
REBUILD_STEP = 200
# A step also ends once it has analysed this many characters (at least one paper): a paper's
# stored full texts are up to 300,000 characters each, and 200 theses in one step held the store
# for about 40 s (4.1 s for 20 of them under load); this is about 0.2 s of analysis.
REBUILD_STEP_CHARS = 300_000


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on the open's bare connection (the Store's `_write` comes later)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _begin_rebuild(conn: sqlite3.Connection) -> None:
    """Empty the index and mark a rebuild from the first paper (one transaction). The FTS table
    is made again rather than emptied row by row (a DELETE reads and tokenizes every row)."""
    with _immediate(conn):
        conn.execute("DROP TABLE IF EXISTS library_fts")
        conn.execute(LIBRARY_FTS_TABLE)
        conn.execute("DELETE FROM library_docs")
        _set_meta(conn, "analyzer", None)
        _set_meta(conn, "rebuilding", ANALYZER_VERSION)
        _set_meta(conn, "rebuild_after", "0")
        _set_meta(conn, "rebuild_unread", "0")


def rebuild_step(conn: sqlite3.Connection, limit: int, chars: int | None = None) -> bool:
    """Index the next `limit` papers of a rebuild (inside the caller's transaction), or fewer
    once `chars` characters were analysed; True when the rebuild is finished, the analyzer
    marked and compaction left due. No rebuild under way: True."""
    after = _meta(conn, "rebuild_after")
    if after is None:
        return True
    rows = conn.execute(
        "SELECT rowid, data FROM papers WHERE rowid > ? ORDER BY rowid LIMIT ?", (int(after), limit)
    ).fetchall()
    unread = analysed = done = 0
    for _, data in rows:
        done += 1
        try:
            paper = load(Paper, data)
        except ValidationError:  # a value this release cannot read: the rest are indexed
            unread += 1
            continue
        analysed += index_paper(conn, paper)
        if chars is not None and analysed >= chars:
            break
    unread += int(_meta(conn, "rebuild_unread") or 0)
    if done < len(rows) or len(rows) == limit:
        _set_meta(conn, "rebuild_after", str(rows[done - 1][0]))
        _set_meta(conn, "rebuild_unread", str(unread))
        return False
    for key in ("rebuild_after", "rebuilding", "rebuild_unread", "stale"):  # no `stale`: compaction due
        _set_meta(conn, key, None)
    _set_meta(conn, "analyzer", ANALYZER_VERSION)
    if unread:
        # Failing here stopped every start (the rebuild stays due until it commits).
        log.warning("library index: %d stored paper(s) could not be read and are not searchable", unread)
    return True


def ensure_index(conn: sqlite3.Connection, *, force: bool = False) -> bool:
    """At open: start a rebuild when forced (the schema just migrated), when another analyzer
    built the index or is rebuilding it, or when it was never built; finish it here when the
    library is small (REBUILD_AT_OPEN), and compact the index when due (`compaction_due`) unless
    a rebuild is left under way. Returns whether a rebuild is left for `rebuild_step`."""
    rebuilding, analyzer = _meta(conn, "rebuilding"), _meta(conn, "analyzer")
    # Both marks: a release that knows no rebuild marks (an older one, run in between) rebuilt
    # the index with its own analyzer over the one under way; the place kept is not this one's.
    if force or (rebuilding is not None and analyzer is not None) or (rebuilding or analyzer) != ANALYZER_VERSION:
        _begin_rebuild(conn)
    if _meta(conn, "rebuild_after") is not None:
        papers = int(conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0])
        if papers > REBUILD_AT_OPEN:
            return True
        with _immediate(conn):
            rebuild_step(conn, papers + 1)
    if compaction_due(conn) and _indexed(conn) <= REBUILD_AT_OPEN:
        try:
            compact_index(conn)
        except sqlite3.OperationalError as exc:  # disk full, locked: the index is right, only slower
            if conn.in_transaction:  # the COMMIT itself failed
                conn.execute("ROLLBACK")
            log.warning("library index not compacted: %s", exc)
    return False


def _indexed(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM library_docs").fetchone()[0])


def upkeep_due(conn: sqlite3.Connection) -> tuple[bool, bool]:
    """(a rebuild, a compaction) the open left for the store's upkeep: a large library's."""
    if _meta(conn, "rebuild_after") is not None:
        return True, True
    return False, compaction_due(conn) and _indexed(conn) > REBUILD_AT_OPEN


# --- compaction ------------------------------------------------------------------------------
# FTS5 never rewrites a segment in place: a row deleted or written again leaves its old entries
# (and a delete marker per token) in the index, and every query reads through them until a
# merge reaches the oldest segment. The benchmark store, each paper written from a grid page
# and again with its abstract, held 55 % dead pages, which made every query pass about twice as
# slow (docs/benchmarks.md §Library search, "Compaction"). `library_meta.stale` counts the rows
# deleted or rewritten since the last compaction; the store compacts (at or after the open) when
# they reach COMPACT_STALE_SHARE of the indexed papers (and at least COMPACT_MIN_STALE), never on
# a write.
COMPACT_STALE_SHARE = 0.1
COMPACT_MIN_STALE = 500


def compaction_due(conn: sqlite3.Connection) -> bool:
    """Whether enough rows were rewritten since the last compaction. A store that never counted
    them (written by an earlier release) is compacted once."""
    stale = _meta(conn, "stale")
    if stale is None:
        return True
    return int(stale) >= max(COMPACT_MIN_STALE, COMPACT_STALE_SHARE * _indexed(conn))


# A large library is compacted after the open in steps (`compact_step`): FTS5's `merge` with a
# negative page count merges every segment, as `optimize` does, writing about that many pages per
# call. Measured at 20,000 papers with 4,000 rows rewritten: 34 steps of at most 0.18 s against
# one `optimize` of 1.9 s, the same index size (dead entries gone) and the same answers
# (docs/benchmarks.md "Library rebuild after the open").
COMPACT_PAGES = 500


def compact_step(conn: sqlite3.Connection) -> bool:
    """One step of a compaction (inside the caller's transaction); True when the merge had
    nothing left to do, the counter then reset. The merge's progress is kept in the index
    itself, so a process stopped mid-way goes on at its next open (the counter still due)."""
    before = conn.total_changes
    conn.execute("INSERT INTO library_fts (library_fts, rank) VALUES ('merge', ?)", (-COMPACT_PAGES,))
    if conn.total_changes - before >= 2:  # FTS5's own test: fewer changes, nothing was merged
        return False
    _set_meta(conn, "stale", "0")
    return True


def compact_index(conn: sqlite3.Connection) -> None:
    """Merge the FTS index into one segment without its dead entries (FTS5 `optimize`, one
    transaction), then give the write-ahead log's pages back (the merge rewrote the index)."""
    with _immediate(conn):
        conn.execute("INSERT INTO library_fts (library_fts) VALUES ('optimize')")
        _set_meta(conn, "stale", "0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class IndexUpkeepMixin(StoreBase):
    """The steps of the upkeep the open left; `_index_pending` (a rebuild: search_library waits
    for it, `LibraryMixin`) and `_compaction_pending` are set by `Store.__init__` (`upkeep_due`)."""

    _index_pending = False
    _compaction_pending = False  # a large library's compaction, after any rebuild

    def index_step(self) -> bool:
        """One step of the index upkeep the open left (one transaction, so other calls wait for
        at most one step): the rebuild's next REBUILD_STEP papers (fewer past REBUILD_STEP_CHARS
        characters analysed), then the compaction's next COMPACT_PAGES pages. True when there is
        nothing left to do."""
        if self._index_pending:
            with self._write() as conn:
                finished = rebuild_step(conn, REBUILD_STEP, REBUILD_STEP_CHARS)
            self._index_pending = not finished  # only once committed: a refused COMMIT left it due
            return False
        if not self._compaction_pending:
            return True
        with self._write() as conn:
            finished = compact_step(conn)
        self._compaction_pending = not finished
        if not finished:
            return False
        with self._read() as conn:  # the merge rewrote the index: the log's pages go back
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True

