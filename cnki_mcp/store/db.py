"""The database file: directory lock, connection settings, schema migrations, and setting
an unreadable database aside.

Durability: WAL with `synchronous=FULL`. Every write method runs in one `BEGIN IMMEDIATE …
COMMIT`; FULL fsyncs the WAL at each commit, so a committed observation survives not only a
killed process (NORMAL would already do that: the WAL pages are written before COMMIT
returns) but also an OS crash or power loss. Writes are rare (one per observed page, paced
by the CNKI request limiter), so the fsync costs nothing that matters."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path

from filelock import FileLock, Timeout

from cnki_mcp import datadir
from cnki_mcp.clock import Clock
from cnki_mcp.errors import DatabaseUnusable, DataDirectoryInUse, DataDirectoryUnusable

DB_NAME = datadir.DB_FILE
LOCK_NAME = datadir.LOCK_FILE

_V1 = """
CREATE TABLE papers (
    record_ref TEXT PRIMARY KEY,
    title_key TEXT NOT NULL,
    native_key TEXT NOT NULL DEFAULT '',
    doi_key TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL,
    detail_confirmed INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX papers_title_key ON papers(title_key);
CREATE TABLE paper_keys (
    key TEXT NOT NULL,
    record_ref TEXT NOT NULL,
    PRIMARY KEY (key, record_ref)
) WITHOUT ROWID;
CREATE INDEX paper_keys_ref ON paper_keys(record_ref);
CREATE TABLE paper_aliases (old_ref TEXT PRIMARY KEY, record_ref TEXT NOT NULL);
CREATE TABLE details (
    record_ref TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    locator TEXT,
    observed_at TEXT NOT NULL,
    parser_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE journals (
    source_key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    data TEXT,
    observed_at TEXT NOT NULL,
    parser_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE searches (
    search_id TEXT PRIMARY KEY,
    query TEXT NOT NULL,
    params TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL,
    summary TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX searches_fingerprint ON searches(fingerprint, status, updated_at);
CREATE INDEX searches_created ON searches(created_at);
CREATE TABLE search_results (
    search_id TEXT NOT NULL,
    record_ref TEXT NOT NULL,
    channels TEXT NOT NULL,
    rank INTEGER,
    score REAL,
    evidence TEXT NOT NULL,
    selected INTEGER NOT NULL DEFAULT 0,
    exclusion TEXT,
    PRIMARY KEY (search_id, record_ref)
);
CREATE INDEX search_results_rank ON search_results(search_id, selected, rank);
CREATE TABLE operations (
    op_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    record TEXT NOT NULL,
    checkpoint TEXT
);
CREATE INDEX operations_created ON operations(created_at);
CREATE INDEX operations_status ON operations(status);
CREATE TABLE downloads (
    record_ref TEXT NOT NULL,
    format TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    observed_at TEXT NOT NULL,
    PRIMARY KEY (record_ref, format)
);
CREATE TABLE download_clicks (
    click_id INTEGER PRIMARY KEY AUTOINCREMENT,
    record_ref TEXT NOT NULL,
    format TEXT NOT NULL,
    op_id TEXT,
    clicked_at TEXT NOT NULL,
    outcome TEXT,
    outcome_at TEXT,
    detail TEXT
);
CREATE INDEX download_clicks_ref ON download_clicks(record_ref, format);
"""

# Version 2: the native index key is `native:<FILENAME>` (identity compares the database
# FAMILY separately: CNKI lists an online-first paper as CAPJ and shows CJFQ on its detail
# page). Version-1 keys `native:<DBCODE>:<FILENAME>` are rewritten; record refs never change.
_V2 = """
INSERT OR IGNORE INTO paper_keys (key, record_ref)
    SELECT 'native:' || substr(key, 8 + instr(substr(key, 8), ':')), record_ref
    FROM paper_keys WHERE key LIKE 'native:%:%';
DELETE FROM paper_keys WHERE key LIKE 'native:%:%';
"""

# Version 3: the library index (store/library.py, DESIGN.md §Library search): full texts
# read or downloaded, one row per indexed paper with its filter columns, the FTS5 table of
# analysed text, and the analyzer that built it. The FTS rows are filled by
# `library.ensure_index` after the migrations (the analyzer is Python, not SQL), which rebuilds
# the index after any migration. IF NOT EXISTS: a store whose version number was set back
# (tests do it) still migrates.
_V3 = """
CREATE TABLE IF NOT EXISTS library_texts (
    record_ref TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    sha256 TEXT NOT NULL DEFAULT '',
    complete INTEGER NOT NULL DEFAULT 1,
    chars INTEGER NOT NULL DEFAULT 0,
    observed_at TEXT NOT NULL,
    PRIMARY KEY (record_ref, kind)
);
CREATE INDEX IF NOT EXISTS library_texts_observed ON library_texts(observed_at);
CREATE INDEX IF NOT EXISTS library_texts_chars ON library_texts(chars);
CREATE TABLE IF NOT EXISTS library_docs (
    doc_id INTEGER PRIMARY KEY,
    record_ref TEXT NOT NULL UNIQUE,
    year INTEGER,
    doc_type TEXT NOT NULL DEFAULT '',
    source_key TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS library_docs_year ON library_docs(year);
CREATE VIRTUAL TABLE IF NOT EXISTS library_fts USING fts5(
    title, keywords, authors, institutions, source, abstract, fulltext,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS library_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

# The per-page search log (store/searchlog.py, DESIGN.md "Search log"): what each grid page of
# a search was asked and answered, for `export_search_log`.
_V_SEARCH_LOG = """
CREATE TABLE IF NOT EXISTS search_log_pages (
    search_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    lane INTEGER NOT NULL DEFAULT 0,
    page INTEGER NOT NULL,
    query TEXT NOT NULL,
    observed_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 1,
    rows INTEGER NOT NULL DEFAULT 0,
    kept INTEGER NOT NULL DEFAULT 0,
    total INTEGER,
    merged INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (search_id, channel, lane, page)
);
"""

# Saved searches (store/watches.py, DESIGN.md "Saved searches"): a watch keeps the plan of a
# search, the records it has seen (with what may change on them) and its checks' reports.
_V_WATCHES = """
CREATE TABLE IF NOT EXISTS watches (
    watch_id TEXT PRIMARY KEY,
    search_id TEXT NOT NULL,
    question TEXT NOT NULL,
    plan TEXT NOT NULL,
    created_at TEXT NOT NULL,
    horizon TEXT,
    last_check_at TEXT,
    checks INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS watch_known (
    watch_id TEXT NOT NULL,
    record_ref TEXT NOT NULL,
    cited INTEGER,
    online_first INTEGER NOT NULL DEFAULT 0,
    volume TEXT,
    issue TEXT,
    pages TEXT,
    first_seen_at TEXT NOT NULL,
    PRIMARY KEY (watch_id, record_ref)
);
CREATE TABLE IF NOT EXISTS watch_checks (
    check_id TEXT PRIMARY KEY,
    watch_id TEXT NOT NULL,
    checked_at TEXT NOT NULL,
    report TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS watch_checks_watch ON watch_checks(watch_id, checked_at);
"""

# Citation lists from the article page's JSON API (store/citations.py, docs/citation-api.md):
# one row per answered list page, the six counts per paper, and what a list said about a paper.
_V_CITATIONS = """
CREATE TABLE IF NOT EXISTS citation_pages (
    paper_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    type_code TEXT NOT NULL,
    start INTEGER NOT NULL,
    data TEXT NOT NULL,
    observed_at TEXT NOT NULL,
    PRIMARY KEY (paper_key, kind, type_code, start)
);
CREATE TABLE IF NOT EXISTS citation_metrics (
    paper_key TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    observed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS citation_nodes (
    paper_key TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    observed_at TEXT NOT NULL
);
"""

# The library index with a one-character prefix index (DESIGN.md §Library search): a query of
# one CJK character is a prefix query over every bigram starting with it, which without this
# index merges hundreds of doclists on every pass (docs/benchmarks.md §Library search). FTS5
# options cannot be altered: the table is made again, and `ensure_index` refills it (as after
# any migration).
# LIBRARY_FTS_TABLE is the table as the newest step made it (`library._begin_rebuild` makes it
# again to empty it): a later step that changes the table changes this constant with it.
LIBRARY_FTS_TABLE = """CREATE VIRTUAL TABLE library_fts USING fts5(
    title, keywords, authors, institutions, source, abstract, fulltext,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '1'
)"""
_V_LIBRARY_PREFIX = f"""
DROP TABLE IF EXISTS library_fts;
{LIBRARY_FTS_TABLE};
"""

# The checkpoint log (store/operations.py): entries appended to an operation's checkpoint, one row
# each, so a search's progress tick writes its new rows only, never the whole checkpoint again.
_V_CHECKPOINT_LOG = """
CREATE TABLE IF NOT EXISTS operation_log (
    op_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (op_id, seq)
) WITHOUT ROWID;
"""

# The reader pages read_online_html read (store/reader_pages.py, DESIGN.md "Reading"): a complete
# body's title, sections, coverage and the SHA-256 of its text, whose characters `library_texts`
# keeps; after a restart the body is paged from them instead of opening the reader again.
_V_READER_PAGES = """
CREATE TABLE IF NOT EXISTS reader_pages (
    record_ref TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    parser_version INTEGER NOT NULL,
    observed_at TEXT NOT NULL
);
"""

# The lookups CNKI answered with nothing (store/misses.py, DESIGN.md §References):
# verify_references' and link_references' misses, reused for 24 hours across restarts.
_V_LOOKUP_MISSES = """
CREATE TABLE IF NOT EXISTS lookup_misses (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    data TEXT NOT NULL,
    observed_at TEXT NOT NULL,
    PRIMARY KEY (kind, key)
);
"""

# Index i upgrades schema version i to i + 1. Append only; never edit a published step.
MIGRATIONS: tuple[str, ...] = (
    _V1,
    _V2,
    _V3,
    _V_SEARCH_LOG,
    _V_WATCHES,
    _V_CITATIONS,
    _V_LIBRARY_PREFIX,
    _V_CHECKPOINT_LOG,
    _V_READER_PAGES,
    _V_LOOKUP_MISSES,
)
SCHEMA_VERSION = len(MIGRATIONS)
# Steps that touch no table the library index reads: they do not call for its rebuild (a large
# library's rebuild keeps search_library waiting; DESIGN.md §Library search).
_INDEX_FREE = frozenset(MIGRATIONS.index(step) for step in (_V_READER_PAGES, _V_LOOKUP_MISSES))

# SQLite result codes that mean "this file is not a usable database" (as opposed to busy,
# I/O or permission failures, where moving the file aside would not help).
_UNREADABLE_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


class Unreadable(Exception):
    """The database file cannot be used as is and is to be set aside."""


def to_ts(value: datetime) -> str:
    """Stored time: UTC ISO-8601 with microseconds, so text order is time order.
    Naive datetimes are taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def from_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def fresh(observed: datetime, now: datetime, kept: timedelta) -> bool:
    """Whether something kept at `observed` is still answered at `now`: 0 <= age < `kept`, for
    every TTL'd cache (DESIGN.md "Freshness"). A stamp later than now is stale: the wall clock was
    ahead when it was kept and has been put right since; trusted, it would last until that time
    plus `kept`."""
    return timedelta(0) <= now - observed < kept


def acquire_lock(data_dir: Path, timeout: float) -> FileLock:
    """Take the directory lock or raise DATA_DIRECTORY_IN_USE. The OS drops the lock when
    the holding process dies, so a crash never leaves the directory locked."""
    lock = FileLock(str(data_dir / LOCK_NAME), timeout=timeout, thread_local=False, mode=datadir.FILE_MODE)
    try:
        lock.acquire()
    except Timeout as exc:
        raise DataDirectoryInUse(
            f"数据目录 {data_dir} 正被另一个 cnki-mcp 进程使用（例如 AI 客户端启动的服务）；"
            "先结束那个进程，或用 CNKI_DATA_DIR 指定另一个数据目录",
            data_dir=str(data_dir),
        ) from exc
    except OSError as exc:  # unwritable directory, a directory named .lock, another user's ...
        raise datadir.other_owner(data_dir) or DataDirectoryUnusable(
            f"无法在数据目录 {data_dir} 中创建锁文件", path=str(data_dir), reason=exc.strerror or type(exc).__name__
        ) from exc
    return lock


def _create_private(path: Path) -> None:
    """Create the database file 0600 before SQLite does (SQLite would use 0644 minus the umask;
    its -wal and -shm files copy the database file's mode), and keep an existing one 0600."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, datadir.FILE_MODE)
        try:
            os.fchmod(fd, datadir.FILE_MODE)
        finally:
            os.close(fd)
    except OSError as exc:  # a directory, a symlink, no permission
        raise DatabaseUnusable(path=str(path), reason=exc.strerror or type(exc).__name__) from exc
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.is_file() and not side.is_symlink():
            os.chmod(side, datadir.FILE_MODE)


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions; every write opens its own BEGIN.
    # check_same_thread=False: the Store serialises access with its own lock.
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=5.0)
    # Statement journals and sorts in memory, not in files under TMPDIR (/tmp): a full temp
    # directory failed a new database's tables and an upgrade's migration with SQLITE_FULL, said
    # as the data directory's disk being full while that disk had room (DESIGN.md "Data directory").
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


# From the step that creates `library_meta` on, every step also forgets which analyzer built the
# library index, in the step's own transaction: the rebuild a migration calls for (`ensure_index`,
# after the last step) is then still due at the next start when the process is killed before the
# rebuild commits. Kept only in memory, a kill in that window left the index emptied by
# `_V_LIBRARY_PREFIX` (or behind the papers) for good, behind an analyzer mark an older release wrote.
_LIBRARY_META_FROM = MIGRATIONS.index(_V3)
_INDEX_DUE = "DELETE FROM library_meta WHERE key = 'analyzer';"


def index_due_after(version: int) -> bool:
    """Whether the steps from `version` on call for the library index's rebuild."""
    return any(step not in _INDEX_FREE for step in range(version, SCHEMA_VERSION))


def _migrate(conn: sqlite3.Connection, version: int) -> None:
    for step in range(version, SCHEMA_VERSION):
        index_due = _INDEX_DUE if step >= _LIBRARY_META_FROM and step not in _INDEX_FREE else ""
        # One transaction per step: the new version number commits with its tables.
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{MIGRATIONS[step]}\n{index_due}\nPRAGMA user_version = {step + 1};\nCOMMIT;"
        )


def _error_name(exc: sqlite3.Error) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def _not_now(path: Path, exc: sqlite3.Error) -> DataDirectoryUnusable:
    """The coded start-up error for a healthy database that cannot be opened or migrated right now:
    the file is locked by another program, the disk is full, read-only or failing. Such a database
    is never set aside (only SQLITE_CORRUPT / SQLITE_NOTADB are): a start after the cause is gone
    opens or migrates it as it is."""
    if _locked(exc):
        return _locked_error("未能打开或升级；关闭那个程序后重新启动 cnki-mcp；该文件未改动", path)
    coded = _unwritable(exc)
    if coded is not None:
        return coded
    return DatabaseUnusable(path=str(path), reason=str(exc))


_MAGIC = b"SQLite format 3\x00"


def _looks_like_sqlite(path: Path) -> bool:
    """An absent or empty file is a new database; anything else must start with the magic."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_MAGIC))
    except FileNotFoundError:
        return True
    except OSError as exc:  # IsADirectoryError, PermissionError: not ours to move aside
        raise DatabaseUnusable(path=str(path), reason=exc.strerror or type(exc).__name__) from exc
    return head in (b"", _MAGIC)


def _open_checked(path: Path) -> sqlite3.Connection:
    # Checked before SQLite opens the file, so a foreign file and its -wal stay untouched.
    if not _looks_like_sqlite(path):
        raise Unreadable("file is not a database")
    _create_private(path)
    try:
        conn = _connect(path)
    except sqlite3.OperationalError as exc:  # unable to open database file
        raise DatabaseUnusable(path=str(path), reason=str(exc)) from exc
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            # A healthy file on a file system without the shared memory or locks WAL needs (some
            # network mounts): not damaged, never set aside (the library would vanish from view).
            raise DatabaseUnusable(
                f"数据库 {path} 所在的文件系统不支持 SQLite 的 WAL 模式（例如某些网络磁盘），未能打开；"
                "用 CNKI_DATA_DIR 把数据目录放到本机磁盘后重新启动；该文件未改动",
                path=str(path),
                reason="wal_unsupported",
                journal_mode=str(mode[0]) if mode else None,
            )
        conn.execute("PRAGMA synchronous=FULL")
        check = conn.execute("PRAGMA integrity_check").fetchall()
        if check != [("ok",)]:
            raise Unreadable("integrity_check: " + "; ".join(str(r[0]) for r in check[:5]))
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            # A newer cnki-mcp wrote it: healthy data this release cannot read. Never set aside
            # (the person's library would vanish from view); the fix is an upgrade.
            raise DatabaseUnusable(
                f"数据库 {path} 由更新版本的 cnki-mcp 写入（数据库版本 {version}，本程序只支持到 "
                f"{SCHEMA_VERSION}）：请升级 cnki-mcp 后再启动；该文件未改动",
                path=str(path),
                schema_version=version,
                supported=SCHEMA_VERSION,
            )
        try:
            _migrate(conn, version)
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if _error_name(exc) in _UNREADABLE_CODES:
                raise Unreadable(f"migration from version {version} failed: {exc}") from exc
            raise _not_now(path, exc) from exc
        from cnki_mcp.store.library_upkeep import ensure_index

        # The library index follows the schema (rebuilt after a step that is not index-free) and its analyzer.
        ensure_index(conn, force=index_due_after(version))
        return conn
    except (Unreadable, DataDirectoryUnusable):
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        if _error_name(exc) in _UNREADABLE_CODES:
            raise Unreadable(str(exc)) from exc
        raise _not_now(path, exc) from exc


def move_aside(path: Path, now: datetime) -> Path:
    """Rename the database (and its -wal/-shm) to `<name>.corrupt-<UTC stamp>`; never delete."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def open_database(path: Path, clock: Clock, notices: list[str]) -> sqlite3.Connection:
    """Open (creating or migrating) the database; an unreadable one is set aside and a fresh
    one started, with a line in `notices`."""
    try:
        return _open_checked(path)
    except Unreadable as exc:
        moved = move_aside(path, clock.now())
        notices.append(f"数据库无法读取（{exc}），已移到 {moved}，并新建了数据库")
    try:
        return _open_checked(path)
    except Unreadable as exc:  # the new, empty file: nothing of the person's is in it
        raise DatabaseUnusable(path=str(path), reason=str(exc)) from exc


class StoreBase:
    """Connection and lock shared by the store's table mixins.

    The store is used from one asyncio thread; every method still takes `_mutex` so that a
    call from a worker thread (e.g. `asyncio.to_thread`) cannot interleave with another."""

    _conn: sqlite3.Connection
    _mutex: threading.RLock
    clock: Clock
    _closed: bool
    path: Path
    _file_id: tuple[int, int] | None  # (device, inode) of the database file opened

    def _check_same_file(self) -> None:
        """DATA_DIRECTORY_UNUSABLE when `cnki.sqlite3` is no longer the file this store opened
        (deleted, the data directory removed or moved, another file put in its place): SQLite
        would go on writing into the unlinked file, every answer would say it was saved, and all
        of it would be gone when the process exits."""
        try:
            st = os.stat(self.path)
            same = (st.st_dev, st.st_ino) == self._file_id
        except OSError:
            same = False
        if not same:
            raise DataDirectoryUnusable(
                f"数据库文件 {self.path} 在服务运行中被删除、移走或替换，结果无法保存；"
                "重启 cnki-mcp（在 AI 客户端中重新连接或重启它）后再试",
                reason="database_replaced",
                path=str(self.path),
            )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction: everything inside is durable when the block exits. A disk
        that is full, read-only or failing is DATA_DIRECTORY_UNUSABLE, a database another program
        holds locked past the busy timeout DATABASE_UNUSABLE (reason `locked`); nothing is
        written, and neither is a crash."""
        with self._mutex:
            if self._closed:
                raise RuntimeError("store is closed")
            self._check_same_file()
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                coded = _unwritable(exc)
                if coded is None:
                    raise
                if self._conn.in_transaction:  # a COMMIT the disk refused
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise coded from exc

    def write_stamp(self) -> tuple[int, int]:
        """Changes whenever the database does: this connection's change counter and
        `data_version` (another connection's commit). What a cache of stored data is valid for."""
        with self._read() as conn:
            return conn.total_changes, int(conn.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            if self._closed:
                raise RuntimeError("store is closed")
            yield self._conn


# SQLite's words for a data directory that cannot take a write (their extended codes, SQLITE_FULL,
# SQLITE_READONLY_*, SQLITE_IOERR_*, are many; the words are what every variant says): the disk is
# full, the file or its folder is read-only, the disk fails.
_UNWRITABLE = {
    "database or disk is full": ("disk_full", "数据目录所在的磁盘已满，未能写入；释放空间后重试"),
    "readonly database": ("read_only", "数据目录或数据库文件只读，未能写入；恢复写权限后重试"),
    "disk i/o error": ("io_error", "数据目录所在的磁盘读写出错，未能写入；检查磁盘后重试"),
}


def _locked(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection (a SQLite browser, a backup tool) held the
    database past the 5 s busy timeout."""
    return _error_name(exc) in ("SQLITE_BUSY", "SQLITE_LOCKED") or "locked" in str(exc).lower()


# SQLite's extended code when it could not grow the -shm file; it says only "disk I/O error", and
# meets it first on a full disk: the start after the disk filled (the -shm is made anew for the
# first connection) said io_error, 检查磁盘, where freeing space was the fix
_FULL_NAMES = frozenset({"SQLITE_IOERR_SHMSIZE"})


def _unwritable(exc: sqlite3.Error) -> DataDirectoryUnusable | None:
    if _error_name(exc) in _FULL_NAMES:
        return DataDirectoryUnusable(_UNWRITABLE["database or disk is full"][1], reason="disk_full")
    text = str(exc).lower()
    for words, (reason, message) in _UNWRITABLE.items():
        if words in text:
            return DataDirectoryUnusable(message, reason=reason)
    if _locked(exc):
        return _locked_error("未能写入；关闭那个程序后重试")
    return None


def _locked_error(then: str, path: Path | None = None) -> DatabaseUnusable:
    """DATABASE_UNUSABLE `locked`: another program holds the database; `then` says what failed
    and what to do."""
    where = f"数据库 {path} " if path is not None else "数据库"
    extra = {"path": str(path)} if path is not None else {}
    return DatabaseUnusable(f"{where}正被另一个程序占用（例如打开着它的 SQLite 工具或备份程序），{then}", reason="locked", **extra)
