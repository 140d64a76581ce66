"""The data directory is private (0700 directories, 0600 files, whatever the umask), symlinked
entries are refused, and what cannot be used is a coded error at start (DESIGN.md "Data directory")."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp import datadir
from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.store import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o000)  # the most permissive umask: nothing may depend on it
    try:
        yield
    finally:
        os.umask(old)


def open_store(data: Path) -> Store:
    return Store.open(data, FakeClock(wall=T0))


def code_of_open(data: Path) -> str:
    with pytest.raises(CnkiError) as info:
        open_store(data).close()
    return info.value.code


def test_a_new_data_directory_and_database_are_owner_only(tmp_path: Path, loose_umask: None) -> None:
    data = tmp_path / "data"
    store = open_store(data)
    try:
        store.record_click("rec_x", "pdf", None, T0)  # a write: the WAL and its index exist now
        assert mode(data) == 0o700
        for name in ("cnki.sqlite3", "cnki.sqlite3-wal", "cnki.sqlite3-shm", ".lock"):
            assert (data / name).exists(), name
            assert mode(data / name) == 0o600, name
    finally:
        store.close()


def test_an_existing_install_is_made_private_at_start_but_the_profile_is_left_to_chromium(
    tmp_path: Path, loose_umask: None
) -> None:
    data = tmp_path / "data"
    for folder in ("downloads/sub", "incoming/op1", "exports", "browser-profile/Default"):
        (data / folder).mkdir(parents=True)
    files = [
        data / "cnki.sqlite3",
        data / "session-cookies.json",
        data / "cnki.sqlite3.corrupt-20260101T000000Z",
        data / "downloads" / "sub" / "a.pdf",
        data / "incoming" / "op1" / "x.pdf",
        data / "exports" / "refs.bib",
    ]
    for path in files:
        path.write_bytes(b"")
    chromium_file = data / "browser-profile" / "Default" / "Preferences"
    chromium_file.write_text("{}")
    for top, dirs, names in os.walk(data):
        for name in (*dirs, *names):
            os.chmod(Path(top) / name, 0o755 if name in dirs else 0o644)
    os.chmod(data, 0o755)

    open_store(data).close()

    assert mode(data) == 0o700
    for folder in ("downloads", "downloads/sub", "incoming", "incoming/op1", "exports", "browser-profile"):
        assert mode(data / folder) == 0o700, folder
    for path in files:
        assert mode(path) == 0o600, path
    assert mode(chromium_file) == 0o644  # inside the profile: Chromium's business, the dir protects it


@pytest.mark.parametrize("name", ["downloads", "incoming", "exports", "browser-profile"])
def test_a_symlinked_directory_under_the_data_directory_is_refused_at_start(
    tmp_path: Path, name: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / name).symlink_to(outside)
    assert code_of_open(data) == "DATA_PATH_SYMLINK"
    assert list(outside.iterdir()) == []


def test_a_symlinked_database_file_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cnki.sqlite3").symlink_to(tmp_path / "elsewhere.sqlite3")
    assert code_of_open(data) == "DATA_PATH_SYMLINK"
    assert not (tmp_path / "elsewhere.sqlite3").exists()


def test_a_database_path_that_is_a_directory_is_database_unusable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "cnki.sqlite3").mkdir(parents=True)
    assert code_of_open(data) == "DATABASE_UNUSABLE"
    assert (data / "cnki.sqlite3").is_dir()  # never moved aside or deleted


def test_a_data_directory_that_is_a_file_or_under_a_file_is_unusable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert code_of_open(blocker) == "DATA_DIRECTORY_UNUSABLE"
    assert code_of_open(blocker / "data") == "DATA_DIRECTORY_UNUSABLE"


def test_ensure_dir_creates_private_and_refuses_a_symlink_before_each_use(tmp_path: Path) -> None:
    data = datadir.ensure_root(tmp_path / "data")
    made = datadir.ensure_dir(data, "incoming")
    assert made.is_dir() and mode(made) == 0o700
    made.rmdir()
    (data / "incoming").symlink_to(tmp_path)
    with pytest.raises(CnkiError) as info:
        datadir.ensure_dir(data, "incoming")
    assert info.value.code == "DATA_PATH_SYMLINK"


def test_private_subdir_refuses_a_symlink_and_is_0700(tmp_path: Path, loose_umask: None) -> None:
    parent = tmp_path / "incoming"
    parent.mkdir()
    assert mode(datadir.private_subdir(parent, "op")) == 0o700
    (parent / "link").symlink_to(tmp_path)
    with pytest.raises(CnkiError) as info:
        datadir.private_subdir(parent, "link")
    assert info.value.code == "DATA_PATH_SYMLINK"


# --- a data directory the browser side would name otherwise ---------------------------

CHINESE_DIR = Path("/home/张三/.local/share/cnki_mcp")


@pytest.mark.parametrize(
    ("environ", "fs_encoding"),
    [
        ({"LANG": "zh_CN.GB18030"}, "gb18030"),
        ({"LANG": "zh_CN.GBK"}, "gbk"),
        ({"LANG": "zh_CN"}, "gb2312"),  # no character set named: the language's legacy one
        ({"LANG": "zh_CN.GB18030"}, "utf-8"),  # PYTHONUTF8=1: Chromium still uses GB18030
        ({"LC_ALL": "zh_CN.GB18030", "LANG": "zh_CN.UTF-8"}, "utf-8"),
    ],
)
def test_a_non_ascii_data_directory_under_a_non_utf8_locale_is_refused_for_the_browser(
    environ: dict[str, str], fs_encoding: str
) -> None:
    with pytest.raises(CnkiError) as info:
        datadir.check_browser_path_encoding(CHINESE_DIR, environ, fs_encoding)
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "path_encoding"


@pytest.mark.parametrize(
    ("path", "environ", "fs_encoding"),
    [
        (CHINESE_DIR, {"LANG": "zh_CN.UTF-8"}, "utf-8"),
        (CHINESE_DIR, {"LC_CTYPE": "zh_CN.utf8"}, "utf-8"),
        (CHINESE_DIR, {}, "utf-8"),  # no locale: C, Python uses UTF-8 and the browser is given it
        (CHINESE_DIR, {"LANG": "C"}, "utf-8"),
        (Path("/home/zhang/.local/share/cnki_mcp"), {"LANG": "zh_CN.GB18030"}, "gb18030"),
    ],
)
def test_a_data_directory_every_side_names_alike_is_accepted(
    path: Path, environ: dict[str, str], fs_encoding: str
) -> None:
    datadir.check_browser_path_encoding(path, environ, fs_encoding)


def _file_name_locale(env: dict[str, str]) -> str:
    return next((env[k] for k in ("LC_ALL", "LC_CTYPE", "LANG") if env.get(k)), "")


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="file names are bytes in the locale's encoding")
@pytest.mark.parametrize(
    "environ", [{"LC_ALL": "C"}, {"LC_ALL": "POSIX", "LANG": "zh_CN.UTF-8"}, {"LANG": "C"}, {}]
)
def test_the_browser_names_files_in_utf8_under_a_c_or_posix_locale(environ: dict[str, str]) -> None:
    """LC_ALL=C (a script, a cron line) with a data directory path beyond ASCII: Python names it in
    UTF-8 and let it through, Chromium named it in ASCII, and every download ended "canceled"
    (SIDE_EFFECT_UNCERTAIN) or was saved outside the data directory. The browser gets C.UTF-8."""
    from cnki_mcp.site.browser import private_browser_env

    env = private_browser_env(environ, CHINESE_DIR / "ChromeConfigHome", headless=True)
    assert datadir.locale_codeset(env) == "UTF-8" and _file_name_locale(env) == "C.UTF-8"
    assert {k: v for k, v in environ.items() if k != "LC_ALL"}.items() <= env.items()


@pytest.mark.parametrize("environ", [{"LANG": "zh_CN.UTF-8"}, {"LC_ALL": "zh_CN.GB18030"}, {"LC_CTYPE": "C.UTF-8"}])
def test_a_named_locale_is_left_to_the_browser_as_it_is(environ: dict[str, str]) -> None:
    env = dict(environ)
    datadir.utf8_file_names(env, platform="linux")
    assert env == environ
    c_env = {"LC_ALL": "C"}
    datadir.utf8_file_names(c_env, platform="darwin")  # macOS names files in UTF-8 whatever LC_ALL says
    assert c_env == {"LC_ALL": "C"}


@pytest.mark.parametrize("platform", ["darwin", "win32"])
@pytest.mark.parametrize("environ", [{"LANG": "zh_CN"}, {"LANG": "zh_CN.GB18030"}])
def test_macos_and_windows_name_a_non_ascii_data_directory_alike_whatever_the_locale(
    platform: str, environ: dict[str, str]
) -> None:
    # macOS names files in UTF-8 and Windows in UTF-16 whatever LANG says, and Python's file-system
    # encoding is UTF-8 on both: the launch (and doctor) refused a Chinese data directory there.
    datadir.check_browser_path_encoding(CHINESE_DIR, environ, "utf-8", platform=platform)
    with pytest.raises(CnkiError) as info:  # where file names are the locale's bytes it is still refused
        datadir.check_browser_path_encoding(CHINESE_DIR, environ, "utf-8", platform="linux")
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "path_encoding"


async def test_the_browser_is_not_started_on_a_directory_it_would_name_otherwise(tmp_path: Path) -> None:
    """LANG=zh_CN.GB18030 and a data directory with Chinese characters: the browser profile and
    incoming/ were created in a sibling directory (the same name read through the other
    encoding), outside the data directory, and every download failed. The launch is refused
    before a browser is looked for (the browser path here does not exist)."""
    from cnki_mcp.settings import Settings
    from cnki_mcp.site.browser import BrowserHost

    data = tmp_path / "数据 目录"
    settings = Settings(data_dir=data, browser_path=str(tmp_path / "no-browser"), headless=True)
    host = BrowserHost(settings, FakeClock(), environ={"LANG": "zh_CN.GB18030", "PATH": "/usr/bin"})
    with pytest.raises(CnkiError) as info:
        await host.ensure()
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "path_encoding"
    assert not (data / "browser-profile").exists()
    await host.close()


@pytest.mark.parametrize(
    ("errno_", "reason"),
    [(28, "disk_full"), (30, "read_only"), (5, "io_error")],  # ENOSPC, EROFS, EIO
)
@pytest.mark.parametrize("where", ["root", "folder", "subfolder"])
def test_a_folder_a_full_or_read_only_disk_refuses_names_the_disk_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errno_: int, reason: str, where: str
) -> None:
    """The folders a tool creates (the data directory, exports/ or incoming/, a download's
    subdirectory) on a full or read-only disk: details.reason is the store's disk_full /
    read_only / io_error (README "故障排查"), not the system's words ("Read-only file system")
    that no client could act on."""
    data = tmp_path / "data"
    if where != "root":
        datadir.ensure_root(data)

    def refused(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(Path, "mkdir", refused)
    with pytest.raises(CnkiError) as info:
        if where == "root":
            datadir.ensure_root(data)
        elif where == "folder":
            datadir.ensure_dir(data, datadir.EXPORTS_DIR)
        else:
            datadir.private_subdir(data, "op_1")
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE"
    assert info.value.details["reason"] == reason


def test_a_folder_refused_for_another_cause_keeps_the_system_words(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CnkiError) as info:
        datadir.ensure_root(blocker / "data")
    assert info.value.details["reason"] == os.strerror(17)  # EEXIST from the parent: not a disk refusal


@pytest.fixture
def someone_else(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> int:
    """This process as an ordinary user whose id owns none of tmp_path's files (they are the test
    runner's): what a person meets after `sudo cnki-mcp …` made the data directory root's."""
    uid = tmp_path.stat().st_uid + 4242
    _as_user(monkeypatch, uid)
    return uid


def _as_user(monkeypatch: pytest.MonkeyPatch, uid: int) -> None:
    """os.geteuid and os.access as for an ordinary user `uid` (the product makes every file 0600
    and folder 0700, so another user's are out of reach), whoever runs the tests."""
    monkeypatch.setattr(os, "geteuid", lambda: uid, raising=False)
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: os.lstat(path).st_uid == uid)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="no owner ids on Windows")
@pytest.mark.parametrize("entry", ["open", "lock"])
def test_a_data_directory_another_user_owns_is_refused_naming_the_owner_and_the_chown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, someone_else: int, entry: str
) -> None:
    """Its files 0600/0700 and another user's: `serve` said 无法在数据目录中创建锁文件 (no cause),
    ensure_root "Operation not permitted", `logout` the same; the person, in their own home
    directory, was told to point CNKI_DATA_DIR elsewhere."""
    from filelock import FileLock

    from cnki_mcp.store.db import acquire_lock

    data = tmp_path / "data"
    data.mkdir()
    (data / datadir.LOCK_FILE).touch()

    def not_permitted(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")  # what the other user's 0600 lock file gives

    monkeypatch.setattr(FileLock, "acquire", not_permitted)
    with pytest.raises(CnkiError) as info:
        if entry == "open":
            Store.open(data, FakeClock(T0), upkeep=False)
        else:
            acquire_lock(data, 0.05)
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "other_owner"
    assert info.value.details["user"] == str(someone_else) and str(data) in info.value.details["paths"]
    # a user with no name (a container's numeric uid): `chown -R 4242: …` is "invalid spec"
    assert info.value.details["chown_to"] == f"{someone_else}:{os.getegid()}"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_one_entry_another_user_owns_is_named_in_a_directory_of_ones_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = datadir.prepare(tmp_path / "data")
    (data / datadir.PROFILE_DIR / "Default").mkdir(parents=True)
    cookies = data / datadir.PROFILE_DIR / "Default" / "Cookies"
    cookies.touch()
    me = 4243
    _as_user(monkeypatch, me)
    for path in (data, data / datadir.PROFILE_DIR, data / datadir.PROFILE_DIR / "Default"):
        os.chown(path, me, me)
    error = datadir.other_owner(data, euid=me)
    assert error is not None and error.details["paths"] == [str(cookies)] and error.details["owner"] == "root"
    assert datadir.other_owner(data, euid=0) is None  # root can use anything
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: True)  # an ACL, a squashing NFS
    assert datadir.other_owner(data, euid=me) is None
    os.chown(cookies, me, me)
    monkeypatch.undo()
    assert datadir.other_owner(data, euid=me) is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_a_download_another_user_saved_does_not_stop_every_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PDF saved under `sudo` in downloads/ refused serve, watch and logout alike; the folders
    themselves still count."""
    data = datadir.prepare(tmp_path / "data")
    for name in datadir.DIRECTORIES:
        (data / name).mkdir(exist_ok=True)
    (data / datadir.DOWNLOADS_DIR / "论文.pdf").write_bytes(b"%PDF-1.4")
    me = 4244
    for path in (data, *(data / name for name in datadir.DIRECTORIES)):
        os.chown(path, me, me)
    _as_user(monkeypatch, me)
    assert datadir.other_owner(data, euid=me) is None
    monkeypatch.undo()
    os.chown(data / datadir.DOWNLOADS_DIR, 0, 0)
    _as_user(monkeypatch, me)
    error = datadir.other_owner(data, euid=me)
    assert error is not None and error.details["paths"] == [str(data / datadir.DOWNLOADS_DIR)]
