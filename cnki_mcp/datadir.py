"""The data directory: its layout, and keeping it private (DESIGN.md "Data directory").

Everything the product keeps (database, browser profile, session cookies, downloads, exports)
lives in one directory that only its owner may read: the directory and every directory below
it 0700, every file 0600, whatever the umask. `prepare` runs once at start (creating the
directory, refusing what cannot be used, fixing the modes of an existing install); `ensure_dir`
and `checked_dir` run again before each use of a subdirectory.

A symlink in place of a directory (or file) the product writes or reads under the data
directory is refused (DATA_PATH_SYMLINK): it would carry the user's files, history or browser
profile to a place outside the private directory. The data directory itself may be a symlink
(Settings resolves it once). The browser profile's own files are Chromium's business; its
directory mode protects them, so `prepare` does not descend into it."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from cnki_mcp.errors import DatabaseUnusable, DataDirectoryUnusable, DataPathSymlink

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600

DB_FILE = "cnki.sqlite3"
LOCK_FILE = ".lock"
PROFILE_DIR = "browser-profile"
PROFILE_LOCK_FILE = "browser-profile.lock"
COOKIES_FILE = "session-cookies.json"
DOWNLOADS_DIR = "downloads"
INCOMING_DIR = "incoming"  # the browser's download directory
EXPORTS_DIR = "exports"

DIRECTORIES: tuple[str, ...] = (PROFILE_DIR, DOWNLOADS_DIR, INCOMING_DIR, EXPORTS_DIR)
FILES: tuple[str, ...] = (
    DB_FILE,
    f"{DB_FILE}-wal",
    f"{DB_FILE}-shm",
    LOCK_FILE,
    PROFILE_LOCK_FILE,
    COOKIES_FILE,
)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:  # e.g. a path component that is a file (ENOTDIR)
        raise DataDirectoryUnusable(path=str(path), reason=exc.strerror or type(exc).__name__) from exc


def _set_mode(path: Path, st: os.stat_result, mode: int) -> None:
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


def ensure_root(data_dir: Path) -> Path:
    """Create the data directory if needed and make it 0700 (DATA_DIRECTORY_UNUSABLE when it
    is not a directory, cannot be created or is not writable)."""
    data_dir = Path(data_dir)
    try:
        if not data_dir.exists():
            data_dir.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                data_dir.mkdir(mode=DIR_MODE)
        if not data_dir.is_dir():
            raise DataDirectoryUnusable(
                f"数据目录 {data_dir} 不是文件夹；用 CNKI_DATA_DIR 指向一个文件夹",
                path=str(data_dir),
                reason="not_a_directory",
            )
        os.chmod(data_dir, DIR_MODE)  # the umask may have removed bits; never more than 0700
    except DataDirectoryUnusable:
        raise
    except OSError as exc:
        raise other_owner(data_dir) or DataDirectoryUnusable(
            f"无法创建或设置数据目录 {data_dir}（{said_of(exc)}）", path=str(data_dir), reason=reason_of(exc)
        ) from exc
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise other_owner(data_dir) or DataDirectoryUnusable("数据目录不可写", path=str(data_dir), reason="not_writable")
    return data_dir


def checked_dir(data_dir: Path, name: str) -> Path:
    """`<data>/<name>`, which must not be a symlink (DATA_PATH_SYMLINK) nor anything but a
    directory when it exists (DATA_DIRECTORY_UNUSABLE). Creates nothing."""
    path = Path(data_dir) / name
    st = _lstat(path)
    if st is None:
        return path
    if stat.S_ISLNK(st.st_mode):
        raise DataPathSymlink(
            f"数据目录中的 {name} 是符号链接，为防止数据写到数据目录之外，拒绝使用", path=name
        )
    if not stat.S_ISDIR(st.st_mode):
        raise DataDirectoryUnusable(f"数据目录中的 {name} 不是文件夹", path=name, reason="not_a_directory")
    return path


def ensure_dir(data_dir: Path, name: str) -> Path:
    """`<data>/<name>` checked as in `checked_dir`, created if missing, mode 0700."""
    path = checked_dir(data_dir, name)
    try:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=DIR_MODE)
        path = checked_dir(data_dir, name)  # created by someone else meanwhile: check again
        _set_mode(path, path.lstat(), DIR_MODE)
    except OSError as exc:
        raise DataDirectoryUnusable(
            f"无法创建数据目录中的 {name}（{said_of(exc)}）", path=name, reason=reason_of(exc)
        ) from exc
    return path


def private_subdir(parent: Path, name: str) -> Path:
    """`parent/name` created (or kept) as a private directory: 0700, never a symlink
    (DATA_PATH_SYMLINK, naming it as `<parent folder>/<name>`)."""
    path = parent / name
    try:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=DIR_MODE)
        st = path.lstat()
    except OSError as exc:
        raise DataDirectoryUnusable(
            f"无法创建文件夹 {parent.name}/{name}（{said_of(exc)}）", path=f"{parent.name}/{name}", reason=reason_of(exc)
        ) from exc
    if stat.S_ISLNK(st.st_mode):
        raise DataPathSymlink(
            f"{parent.name}/{name} 是符号链接，为防止数据写到数据目录之外，拒绝使用",
            path=f"{parent.name}/{name}",
        )
    if not stat.S_ISDIR(st.st_mode):
        raise DataDirectoryUnusable(f"{parent.name}/{name} 不是文件夹", path=f"{parent.name}/{name}")
    _set_mode(path, st, DIR_MODE)
    return path


def clear_browser_leftovers(folder: Path) -> int:
    """Delete the files (not the folders) directly in the browser's download directory
    `incoming/`: with the profile lock held before a launch, each is a previous browser's
    leftover: a `<guid>.crdownload` partial file of a download that browser died in (a crash,
    an OOM kill, `kill -9` of the server; a graceful close or a failed download removes its own),
    or a finished download's `<guid>` copy never deleted. The product's own files live in
    `incoming/<op_id>/` and are reconciled by the next call, so they stay. Returns the count."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                continue
            os.unlink(entry.path)
            removed += 1
    if removed:
        log.info("removed %d leftover file(s) of an earlier browser from %s", removed, folder)
    return removed


# errno of a write the file system refused -> details.reason, as the store names them
# (README "故障排查": disk_full / read_only / io_error)
_REFUSED_WRITES = {
    errno.ENOSPC: ("disk_full", "磁盘已满"),
    errno.EDQUOT: ("disk_full", "磁盘配额已满"),
    errno.EROFS: ("read_only", "文件系统只读"),
    errno.EACCES: ("read_only", "没有写权限"),
    errno.EPERM: ("read_only", "没有写权限"),
}


# errno of a folder the file system would not create -> details.reason: the store's names for a
# full, read-only or failing disk (README "故障排查"), which a client can act on; any other
# refusal keeps the system's own words
_DISK_REASONS = {
    errno.ENOSPC: ("disk_full", "磁盘已满，释放空间后重试"),
    errno.EDQUOT: ("disk_full", "磁盘配额已满，释放空间后重试"),
    errno.EROFS: ("read_only", "文件系统只读，恢复写权限后重试"),
    errno.EIO: ("io_error", "磁盘读写出错，检查磁盘后重试"),
}


def reason_of(exc: OSError) -> str:
    """`details.reason` of a data-directory error caused by `exc`: disk_full / read_only /
    io_error for a disk that refuses writes, else the system's text (`Not a directory`, ...)."""
    coded = _DISK_REASONS.get(exc.errno or 0)
    return coded[0] if coded else exc.strerror or type(exc).__name__


def said_of(exc: OSError) -> str:
    """The cause in words, with the next step for a disk that refuses writes."""
    coded = _DISK_REASONS.get(exc.errno or 0)
    text = exc.strerror or type(exc).__name__
    return f"{coded[1]}：{text}" if coded else text


def disk_refused(exc: BaseException) -> DataDirectoryUnusable | None:
    """DATA_DIRECTORY_UNUSABLE for an OSError only a full or read-only disk raises (ENOSPC,
    EDQUOT, EROFS) that reached a tool or an operation uncoded, else None. The last net under
    every write: each such error found so far (an export, a download's copy, the cookie file)
    had answered INTERNAL, a bug, where the person only needed to free space."""
    if not isinstance(exc, OSError) or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
        return None
    where = f" {exc.filename}" if isinstance(exc.filename, str) else ""
    return DataDirectoryUnusable(f"文件{where}未能写入（{said_of(exc)}）", reason=reason_of(exc))


def write_refused(exc: OSError, folder: str, path: str | None = None) -> DataDirectoryUnusable:
    """DATA_DIRECTORY_UNUSABLE for a file the disk would not take in `<data>/<folder>/`: full,
    read-only or failing (`details.reason` disk_full / read_only / io_error), with the next step;
    `details.path` is `path` (the file) when given, else the folder."""
    reason, said = _REFUSED_WRITES.get(exc.errno or 0, ("io_error", "磁盘读写出错"))
    return DataDirectoryUnusable(
        f"文件未能保存到数据目录的 {folder}/（{said}：{exc.strerror or type(exc).__name__}）；处理后用相同参数再调用",
        path=path or folder,
        reason=reason,
    )


def _utf8(codeset: str) -> bool:
    return codeset.lower().replace("-", "").replace("_", "") == "utf8"


def locale_codeset(environ: Mapping[str, str]) -> str | None:
    """The character set of the locale `environ` names for file names (LC_ALL, else LC_CTYPE,
    else LANG): `zh_CN.GB18030` -> GB18030; a name without one (`zh_CN`) is the language's legacy
    set (None); C, POSIX or nothing set -> UTF-8, which Python uses then and the browser is
    given (`utf8_file_names`)."""
    name = next((environ[k] for k in ("LC_ALL", "LC_CTYPE", "LANG") if environ.get(k)), "")
    if name in ("", "C", "POSIX"):
        return "UTF-8"
    base = name.split("@", 1)[0]
    return base.split(".", 1)[1] if "." in base else None


UTF8_LOCALE = "C.UTF-8"  # glibc ≥ 2.35 has it built in; Debian and Ubuntu always shipped it


def utf8_file_names(env: dict[str, str], *, platform: str = sys.platform) -> None:
    """Give the browser's environment `env` UTF-8 file names when its locale is C, POSIX or unset
    (LC_ALL=C in a script or cron line): Chromium then names files in ASCII, and with a data
    directory path beyond ASCII every download ended "canceled" (SIDE_EFFECT_UNCERTAIN) while the
    rest worked. Python itself reads file names as UTF-8 there (its C-locale coercion and UTF-8
    mode), so `check_browser_path_encoding` lets such a path through. LC_ALL=C is replaced by
    C.UTF-8, else LC_CTYPE is set; a named locale (zh_CN.GB18030) is left alone (refused above)."""
    if platform in ("darwin", "win32"):
        return
    name = next((env[k] for k in ("LC_ALL", "LC_CTYPE", "LANG") if env.get(k)), "")
    if name not in ("", "C", "POSIX"):
        return
    env["LC_ALL" if env.get("LC_ALL") else "LC_CTYPE"] = UTF8_LOCALE


def check_browser_path_encoding(
    data_dir: Path, environ: Mapping[str, str], fs_encoding: str, *, platform: str = sys.platform
) -> None:
    """Refuse (DATA_DIRECTORY_UNUSABLE, `path_encoding`) a data directory whose path has
    characters beyond ASCII under a locale whose file names are not UTF-8 (LANG=zh_CN.GB18030):
    Python names it in that encoding, Playwright's driver in UTF-8 and Chromium in the locale's
    own again, so the browser profile and the downloads would land in other directories outside
    the data directory, and every download would fail. An ASCII path means the same bytes to all.
    Only where file names are bytes in the locale's encoding (Linux and the like): macOS names
    files in UTF-8 and Windows in UTF-16 whatever LANG says, and Python uses UTF-8 there; the
    launch was refused on them under LANG=zh_CN."""
    text = str(data_dir)
    if text.isascii() or platform in ("darwin", "win32"):
        return
    codeset = locale_codeset(environ)
    if _utf8(fs_encoding) and codeset is not None and _utf8(codeset):
        return
    raise DataDirectoryUnusable(
        f"数据目录 {text} 含非 ASCII 字符，而当前语言环境的文件名编码不是 UTF-8"
        f"（{codeset or environ.get('LANG') or fs_encoding}），浏览器会把资料与下载写到别处；"
        "请在 UTF-8 语言环境下运行（如 LANG=zh_CN.UTF-8），或用 CNKI_DATA_DIR 指向只含英文字母和数字的路径",
        path=text,
        reason="path_encoding",
    )


def _session_cookie_files(root: Path) -> list[Path]:
    """`session-cookies.json` and the temporaries of its atomic write (`.session-cookies.json.<pid>.tmp`,
    left by a process killed mid-write) that exist in `root`."""
    found = [root / COOKIES_FILE] if os.path.lexists(root / COOKIES_FILE) else []
    with contextlib.suppress(OSError):
        found += sorted(p for p in root.glob(f".{COOKIES_FILE}.*.tmp") if p.is_file() or p.is_symlink())
    return found


def clear_cookie_temporaries(root: Path, own_pid: int) -> int:
    """Delete the temporaries of the cookie file's atomic write that another process left (killed
    mid-write: each holds cookie values); this process's own may be in flight. Returns the count."""
    mine = f".{COOKIES_FILE}.{own_pid}.tmp"
    removed = 0
    for path in _session_cookie_files(root):
        if path.name.startswith(".") and path.name != mine:
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def forget_session_cookies(root: Path) -> list[str]:
    """Delete the saved session cookies (the file and its temporaries); the names removed. The
    cookies belong to the browser profile they were read from: once that profile is gone (deleted
    to sign out, or by `sign_out`), putting them into a new one would log the person in again."""
    removed: list[str] = []
    for path in _session_cookie_files(root):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.name)
    return removed


def sign_out(root: Path) -> list[str]:
    """Delete everything that keeps the CNKI login in the data directory `root`: the browser
    profile (its cookie store, cache, history and the password manager's records) and the saved
    session cookies. The library, downloads and exports stay. The caller holds the data
    directory's lock (no server runs on it). A symlinked profile is refused (DATA_PATH_SYMLINK),
    never followed. Returns the names removed."""
    profile = checked_dir(root, PROFILE_DIR)
    removed: list[str] = []
    if profile.exists():
        try:
            shutil.rmtree(profile)
        except OSError as exc:
            raise DataDirectoryUnusable(
                f"无法删除浏览器资料目录 {profile}（{exc.strerror or type(exc).__name__}）",
                path=PROFILE_DIR,
                reason=exc.strerror or type(exc).__name__,
            ) from exc
        removed.append(f"{PROFILE_DIR}/")
    return removed + forget_session_cookies(root)


def make_private(path: Path) -> None:
    """A file the product just wrote: 0600 (the umask decides nothing)."""
    os.chmod(path, FILE_MODE)


def prepare(data_dir: Path) -> Path:
    """At start: create the data directory (0700), refuse symlinked or misplaced entries the
    product uses (DATA_PATH_SYMLINK, DATA_DIRECTORY_UNUSABLE, DATABASE_UNUSABLE when
    `cnki.sqlite3` is not a file) and fix the modes of an existing install: directories 0700
    and files 0600, everywhere but inside the browser profile."""
    root = ensure_root(data_dir)
    check_entries(root)
    _fix_modes(root)
    return root


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def other_owner(root: Path, *, euid: int | None = None) -> DataDirectoryUnusable | None:
    """DATA_DIRECTORY_UNUSABLE (`other_owner`) when the data directory, an entry the product keeps
    in it, or one a level below (two in the browser profile: its `Default/` holds the cookies)
    belongs to another user and this one cannot read and write it, for a process that is not root. `sudo cnki-mcp …` keeping HOME left
    them root's, 0600/0700: the person's own runs then met "Operation not permitted", a lock file
    that "could not be created", a database doctor called corrupt, or a lock doctor said another
    process held. The message names the owner and the `chown` that gives them back."""
    if euid is None:
        if not hasattr(os, "geteuid"):
            return None  # Windows: no owner ids to compare
        euid = os.geteuid()
    if euid == 0:
        return None
    foreign: list[tuple[Path, int]] = []

    def look(path: Path, depth: int) -> None:
        try:
            st = path.lstat()
        except OSError:
            return
        wanted = os.R_OK | os.W_OK | (os.X_OK if stat.S_ISDIR(st.st_mode) else 0)
        if st.st_uid != euid and not os.access(path, wanted, follow_symlinks=False):
            foreign.append((path, st.st_uid))  # usable all the same (a squashing NFS, an ACL): kept
        elif depth and stat.S_ISDIR(st.st_mode):
            with contextlib.suppress(OSError), os.scandir(path) as entries:
                for entry in entries:
                    look(Path(entry.path), depth - 1)

    look(root, 0)
    if not foreign:
        # The profile two levels down (`Default/` holds the cookies); downloads/, incoming/ and
        # exports/ themselves only: a file another user saved in them (a download made under sudo)
        # costs that one file, not every start (it refused serve, watch and logout alike).
        for name in (*DIRECTORIES, *FILES):
            look(root / name, 2 if name == PROFILE_DIR else 0)
    if not foreign:
        return None
    owner, me = _user_name(foreign[0][1]), _user_name(euid)
    # `chown -R 4242: …` is "invalid spec" for a user with no name (a container's numeric uid)
    chown_to = f"{me}:" if not me.isdigit() else f"{euid}:{os.getegid() if hasattr(os, 'getegid') else euid}"
    shown = [str(p.relative_to(root)) for p, _uid in foreign if p != root][:5]
    what = f"数据目录 {root}" + (f" 中的 {'、'.join(shown)}{' 等' if len(foreign) > 5 else ''}" if shown else "")
    return DataDirectoryUnusable(
        f"{what} 属于用户 {owner}，当前用户 {me} 无法使用（多半是曾用 sudo 或以 root 运行过 cnki-mcp）。"
        f"改回当前用户：sudo chown -R {chown_to} '{root}'，然后重试",
        path=str(root), reason="other_owner", owner=owner, user=me, chown_to=chown_to, paths=[str(p) for p, _uid in foreign[:5]],
    )  # fmt: skip


def check_entries(root: Path) -> None:
    """The entries `prepare` refuses, without changing anything (`doctor` runs it)."""
    if (foreign := other_owner(root)) is not None:
        raise foreign
    for name in DIRECTORIES:
        checked_dir(root, name)
    for name in FILES:
        st = _lstat(root / name)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise DataPathSymlink(f"数据目录中的 {name} 是符号链接，拒绝使用", path=name)
        if not stat.S_ISREG(st.st_mode):
            if name.startswith(DB_FILE):
                raise DatabaseUnusable(f"数据库路径 {name} 不是文件（可能是文件夹）", path=str(root / name))
            raise DataDirectoryUnusable(f"数据目录中的 {name} 不是文件", path=name, reason="not_a_file")


def _fix_modes(root: Path) -> None:
    for top, dirs, files in os.walk(root):  # never follows symlinks
        here = Path(top)
        if here == root:
            dirs[:] = [d for d in dirs if d != PROFILE_DIR]  # Chromium's files: only the dir mode
            _fix(root / PROFILE_DIR, DIR_MODE)
        for name in dirs:
            _fix(here / name, DIR_MODE)
        for name in files:
            _fix(here / name, FILE_MODE)


def _fix(path: Path, mode: int) -> None:
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            return  # chmod would follow a symlink; sockets and pipes are left alone
        _set_mode(path, st, mode)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("could not make %s private: %s", path, exc.strerror or exc)
