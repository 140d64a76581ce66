"""`cnki-mcp doctor` on a healthy setup (real Chromium, fresh data directory) and on broken
ones: a browser path that points nowhere, a data directory that is a file, a data directory
locked by another process, a browser profile locked by another computer, an unreadable store, an invalid setting; and `--json`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cnki_mcp.cli import doctor_cmd
from cnki_mcp.cli.main import main
from cnki_mcp.settings import Settings

CHECK_NAMES = [
    "settings",
    "browser",
    "browser_launch",
    "sandbox",
    "data_dir",
    "data_dir_lock",
    "browser_profile",
    "store",
    "versions",
    "path_command",
    "display",
    "network",
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("APPDATA", str(home / "AppData"))
    monkeypatch.setenv("CNKI_DATA_DIR", str(tmp_path / "data"))
    for name in list(__import__("os").environ):
        if name.startswith("CNKI_") and name != "CNKI_DATA_DIR":
            monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture
def chromium(monkeypatch: pytest.MonkeyPatch) -> str:
    path = "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.skip("Chromium not installed at /usr/bin/chromium")
    monkeypatch.setenv("CNKI_BROWSER_PATH", path)
    return path


@pytest.fixture
def quick_probe(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Skip the real launch where the test is about something else."""
    probed: list[str] = []

    def probe(path: str) -> tuple[bool, str]:
        probed.append(path)
        return True, "156.0.0.0"

    monkeypatch.setattr(doctor_cmd, "_default_probe", probe)
    monkeypatch.setattr(doctor_cmd, "_default_sandbox_probe", lambda path: (probed.append(path), (True, False, ""))[1])
    return probed


def _lines(out: str) -> dict[str, str]:
    """Check name -> its status word, from the one-line-per-check output."""
    result: dict[str, str] = {}
    for line in out.splitlines():
        if line.startswith(" "):
            continue  # a hint under the previous check
        status, name = line.split()[:2]
        result[name] = status
    return result


@pytest.mark.browser
def test_doctor_on_a_healthy_setup_exits_0_with_every_check_ok(
    env: Path, chromium: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = _lines(out)
    assert list(lines) == CHECK_NAMES
    # as root on Linux Chromium cannot run sandboxed: doctor warns of it (nothing else to fix)
    root = sys.platform.startswith("linux") and os.geteuid() == 0
    assert lines.pop("sandbox") == ("WARN" if root else "OK")
    assert set(lines.values()) == {"OK"}
    assert chromium in out and "无界面启动成功" in out
    assert (env / "data").is_dir()
    assert not (env / "data" / "cnki.sqlite3").exists(), "doctor does not create the store"


def test_doctor_reads_an_existing_store(
    env: Path, quick_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from cnki_mcp.clock import SystemClock
    from cnki_mcp.store import Store

    Store.open(env / "data", SystemClock()).close()
    assert main(["doctor"]) in (0, 1)  # the browser may be missing on this machine
    out = capsys.readouterr().out
    assert _lines(out)["store"] == "OK" and "papers=0" in out


def test_doctor_fails_on_a_browser_profile_locked_by_another_computer(
    env: Path, quick_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash leaves Chromium's SingletonLock; naming another host (a renamed machine, a new
    container) it makes every browser start fail with BROWSER_PROFILE_IN_USE, while doctor's launch
    in a temporary profile passed and it reported all OK. The lock file is named to remove."""
    profile = env / "data" / "browser-profile"
    profile.mkdir(parents=True)
    os.symlink("otherbox-4242", profile / "SingletonLock")
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 1 and _lines(out)["browser_profile"] == "FAIL"
    assert str(profile / "SingletonLock") in out
    os.unlink(profile / "SingletonLock")
    os.symlink(f"{__import__('socket').gethostname()}-4242", profile / "SingletonLock")  # this host's own
    main(["doctor"])
    assert _lines(capsys.readouterr().out)["browser_profile"] == "OK"


def test_doctor_on_a_broken_setup_exits_1_naming_the_failed_checks(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(env / "nowhere" / "chrome"))
    data = env / "data-is-a-file"
    data.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("CNKI_DATA_DIR", str(data))

    code = main(["doctor"])

    out = capsys.readouterr().out
    assert code == 1
    lines = _lines(out)
    assert list(lines) == CHECK_NAMES
    for name in ("browser", "browser_launch", "data_dir", "data_dir_lock", "store"):
        assert lines[name] == "FAIL", name
    assert lines["settings"] == "OK" and lines["versions"] == "OK"
    assert "提示" in out
    assert data.read_text(encoding="utf-8") == "not a folder"


def test_doctor_reports_a_browser_that_exists_but_does_not_launch(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = env / "chrome"
    fake.write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(fake))
    assert main(["doctor"]) == 1
    lines = _lines(capsys.readouterr().out)
    assert lines["browser"] == "OK" and lines["browser_launch"] == "FAIL"


def test_doctor_names_a_temp_directory_the_user_cannot_write_not_the_browser(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """TMPDIR (or /tmp) this account cannot write: the probe failed "EACCES ... mkdtemp" and the
    hint said to check that the file is a browser the user can run."""
    fake = env / "chrome"
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(fake))
    monkeypatch.setenv("TMPDIR", str(env / "gone"))
    assert main(["doctor", "--json"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert not checks["browser_launch"]["ok"] and "TMPDIR" in checks["browser_launch"]["hint"]
    assert quick_probe == []  # the browser was not blamed (nor started)


@pytest.fixture
def locked_data_dir(env: Path) -> Iterator[Path]:
    """Another process holding the data directory lock, as a running server does."""
    data = env / "data"
    data.mkdir()
    code = (
        "import sys\nfrom filelock import FileLock\n"
        "lock = FileLock(sys.argv[1]); lock.acquire()\n"
        "print('locked', flush=True)\nsys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(data / ".lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "locked"
    yield data
    proc.stdin.close()
    proc.wait(timeout=30)


def test_doctor_warns_but_passes_when_another_process_holds_the_data_directory(
    locked_data_dir: Path,
    quick_probe: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A running server (the user's AI client) holds the lock: normal, so WARN and exit 0."""
    fake = locked_data_dir.parent / "chrome"  # found, and quick_probe "launches" it
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(fake))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    assert lines["data_dir_lock"] == "WARN"
    assert lines["data_dir"] == "OK"
    assert "DATA_DIRECTORY_IN_USE" in out


def test_doctor_fails_on_an_unreadable_store_without_moving_it(
    env: Path, quick_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    data = env / "data"
    data.mkdir()
    db = data / "cnki.sqlite3"
    db.write_bytes(b"this is not sqlite" * 100)
    assert main(["doctor"]) == 1
    assert _lines(capsys.readouterr().out)["store"] == "FAIL"
    assert db.read_bytes() == b"this is not sqlite" * 100


def test_doctor_fails_on_an_invalid_setting(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CNKI_MAX_INFLIGHT", "many")
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert _lines(out)["settings"] == "FAIL" and "CONFIG_INVALID" in out


def test_a_misspelt_variable_is_a_warning_naming_the_one_it_resembles(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`CNKI_HEADLES=1` was ignored without a word (doctor said 环境变量有效)."""
    monkeypatch.setenv("CNKI_HEADLES", "1")
    assert main(["doctor", "--json"]) == 0  # a warning does not fail doctor
    settings = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}["settings"]
    assert settings["ok"] is True and settings["warning"] is True
    assert "CNKI_HEADLES" in settings["detail"] and "CNKI_HEADLESS" in settings["detail"]


def test_the_test_scripts_own_variables_are_not_called_misspellings(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("CNKI_TEST_WORKERS", "CNKI_TEST_TMP", "CNKI_CHAOS_SEED", "CNKI_PEERS"):
        monkeypatch.setenv(name, "1")
    assert main(["doctor", "--json"]) == 0
    settings = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}["settings"]
    assert settings["ok"] is True and not settings.get("warning")


def test_an_invalid_setting_still_checks_the_data_directory_and_browser_it_names(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CNKI_WORKERS", "0")
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(env / "nowhere"))
    assert main(["doctor", "--json"]) == 1
    by_name = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert by_name["settings"]["ok"] is False
    assert str(env / "data") in by_name["data_dir"]["detail"]  # CNKI_DATA_DIR, not the default
    assert by_name["browser"]["ok"] is False and "nowhere" in by_name["browser"]["detail"]
    written = [p for p in (env / "home").rglob("*") if p.is_file()]
    assert written == []  # nothing under the platform's default data directory


@pytest.mark.parametrize("broken", ["symlinked_downloads", "database_folder"])
def test_doctor_fails_where_serve_would_refuse_the_data_directory(
    env: Path, quick_probe: list[str], capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    data = env / "data"
    data.mkdir()
    if broken == "symlinked_downloads":
        (env / "elsewhere").mkdir()
        (data / "downloads").symlink_to(env / "elsewhere")
        code = "DATA_PATH_SYMLINK"
    else:
        (data / "cnki.sqlite3").mkdir()
        code = "DATABASE_UNUSABLE"
    assert main(["doctor", "--json"]) == 1
    by_name = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert by_name["data_dir"]["ok"] is False and code in by_name["data_dir"]["detail"]
    assert by_name["store"]["ok"] is False or broken == "symlinked_downloads"


def test_doctor_json_lists_every_check_with_name_ok_detail_hint(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(env / "nowhere"))
    code = main(["doctor", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1
    assert payload["ok"] is False
    assert isinstance(payload["version"], str)
    assert [c["name"] for c in payload["checks"]] == CHECK_NAMES
    for check in payload["checks"]:
        assert set(check) == {"name", "ok", "detail", "hint", "warning"}
        assert isinstance(check["warning"], bool)
        assert isinstance(check["ok"], bool) and isinstance(check["detail"], str)
    by_name = {c["name"]: c for c in payload["checks"]}
    assert by_name["browser"]["ok"] is False and by_name["browser"]["hint"]
    assert by_name["data_dir"]["ok"] is True


def test_doctor_creates_a_missing_data_directory_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "new-data"
    old = os.umask(0)
    try:
        check = doctor_cmd.check_data_dir(data)
    finally:
        os.umask(old)
    assert check.ok
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def test_doctor_reports_a_data_directory_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert not doctor_cmd.check_data_dir(blocker / "data").ok


def test_doctor_fails_a_chinese_data_directory_under_a_non_utf8_locale(tmp_path: Path) -> None:
    """What the browser launch refuses (DATA_DIRECTORY_UNUSABLE path_encoding: the profile and
    downloads would land outside the data directory) doctor fails too; it said 可写."""
    data = tmp_path / "数据 目录"
    check = doctor_cmd.check_data_dir(data, {"LANG": "zh_CN.GB18030"})
    assert not check.ok and "DATA_DIRECTORY_UNUSABLE" in check.detail
    assert doctor_cmd.check_data_dir(data, {"LANG": "zh_CN.UTF-8"}).ok


def test_a_headed_browser_forced_without_a_display_fails_the_display_check() -> None:
    """CNKI_HEADLESS=0 on a machine without a display: every browser start would end in
    BROWSER_UNAVAILABLE, so doctor must not call the display OK."""
    from cnki_mcp.settings import Settings

    forced = doctor_cmd.check_display(Settings(data_dir=Path("/unused"), headless=False), platform="linux")
    assert forced.ok is False and forced.hint
    unset = doctor_cmd.check_display(Settings(data_dir=Path("/unused")), platform="linux")
    assert unset.ok is True  # headless by itself: works, with the verification hint
    shown = doctor_cmd.check_display(
        Settings(data_dir=Path("/unused"), headless=False, display=":0"), platform="linux", open_display=lambda _: None
    )
    assert shown.ok is True


@pytest.mark.parametrize(("headless", "ok", "probed"), [(None, True, True), (False, False, True), (True, True, False)])
def test_a_display_this_user_may_not_open_is_not_called_ok(headless: bool | None, ok: bool, probed: bool) -> None:
    """DISPLAY naming an X server this user is not authorised for (a mismatched XAUTHORITY): doctor
    said OK 有界面 while the server fell back to headless, or with CNKI_HEADLESS=0 could not start."""
    from cnki_mcp.settings import Settings

    asked: list[str] = []

    def refuse(display: str) -> str:
        asked.append(display)
        return "Authorization required, but no authorization protocol specified"

    check = doctor_cmd.check_display(
        Settings(data_dir=Path("/unused"), headless=headless, display=":99"), platform="linux", open_display=refuse
    )
    assert (check.ok, asked == [":99"]) == (ok, probed)
    assert check.warning is (headless is None)
    if probed:
        assert "Authorization required" in check.detail and check.hint
    wayland = doctor_cmd.check_display(
        Settings(data_dir=Path("/unused"), display="wayland-0"), platform="linux", open_display=refuse
    )
    assert wayland.ok and not wayland.warning and asked == [":99"] * probed  # an X probe says nothing of Wayland


def test_an_x_display_with_no_server_is_said_to_refuse() -> None:
    """The real probe, against a display number nothing listens on: the server would run headless
    (no X library: the probe cannot tell, and says nothing)."""
    import ctypes

    try:
        ctypes.CDLL("libX11.so.6")
    except OSError:
        pytest.skip("no libX11 here")
    from cnki_mcp.settings import Settings

    gone = Settings(data_dir=Path("/unused"), display=f"unix:{4000 + os.getpid() % 1000}")
    check = doctor_cmd.check_display(gone, platform="linux")
    assert (check.ok, check.warning) == (True, True) and "headless" in check.detail


def test_doctor_fails_a_data_directory_whose_name_is_too_long_instead_of_a_traceback(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path the file system cannot name (one component over 255 bytes: ENAMETOOLONG from
    stat): `serve` says DATA_DIRECTORY_UNUSABLE; doctor ended in an OSError traceback."""
    monkeypatch.setenv("CNKI_DATA_DIR", str(env / ("长" * 100)))
    assert main(["doctor", "--json"]) == 1
    by_name = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert by_name["data_dir"]["ok"] is False
    assert by_name["store"]["ok"] is False


def test_doctor_on_a_full_disk_leaves_no_probe_and_says_to_free_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe file is created, then its write refused (ENOSPC): it was left in the data
    directory, and the hint said to point CNKI_DATA_DIR at a writable folder."""
    import errno

    def refused(self: Path, data: bytes) -> int:
        self.touch()
        raise OSError(errno.ENOSPC, "No space left on device")

    data = tmp_path / "data"
    monkeypatch.setattr(Path, "write_bytes", refused)
    check = doctor_cmd.check_data_dir(data)
    assert not check.ok
    assert [p.name for p in data.iterdir()] == []
    assert check.hint == doctor_cmd._DISK_HINTS[errno.ENOSPC]


def test_doctor_fails_a_store_serve_could_not_write(
    env: Path, quick_probe: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """cnki.sqlite3 readable but not writable (another user's, left by a `sudo` run; immutable):
    doctor read it through a read-only connection and said OK, `serve` refused it
    (DATABASE_UNUSABLE)."""
    from cnki_mcp.clock import SystemClock
    from cnki_mcp.store import Store

    Store.open(env / "data", SystemClock()).close()
    db = env / "data" / "cnki.sqlite3"
    real = os.access
    monkeypatch.setattr(doctor_cmd.os, "access", lambda p, mode: real(p, mode) and not (Path(p) == db and mode & os.W_OK))
    assert main(["doctor", "--json"]) == 1
    by_name = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert by_name["store"]["ok"] is False
    assert by_name["data_dir"]["ok"] is True


def test_doctor_does_not_blame_another_process_for_a_lock_file_it_cannot_create(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file another user owns (from a `sudo` run): doctor said WARN 另一个 cnki-mcp 进程正在使用,
    sending the person to look for a process that does not exist."""
    from cnki_mcp.errors import DataDirectoryUnusable
    from cnki_mcp.store import db

    def refused(data_dir: Path, timeout: float) -> None:
        raise DataDirectoryUnusable(path=str(data_dir), reason="other_owner")

    monkeypatch.setattr(db, "acquire_lock", refused)
    check = doctor_cmd.check_data_dir_lock(env, True)
    assert not check.ok and not check.warning and "DATA_DIRECTORY_UNUSABLE" in check.detail


@pytest.mark.parametrize(
    ("euid", "args", "probed", "ok", "warning", "words"),
    [
        (1000, (), (True, False, ""), True, False, "沙箱中运行"),
        (1000, (), (False, True, "Target page, context or browser has been closed"), True, True, "无法启动 Chromium 沙箱"),
        (0, (), None, True, True, "root"),
        (1000, ("--no-sandbox",), None, True, True, "--no-sandbox"),
        (1000, (), (False, False, "spawn EACCES"), False, False, "spawn EACCES"),
    ],
)
def test_doctor_says_whether_the_browser_runs_inside_its_sandbox(
    tmp_path: Path,
    euid: int,
    args: tuple[str, ...],
    probed: tuple[bool, bool, str] | None,
    ok: bool,
    warning: bool,
    words: str,
) -> None:
    """As root Playwright adds --no-sandbox, and a machine without user namespaces refuses the
    sandbox (the server then runs the browser without it): doctor's probe always ran unsandboxed,
    so nobody could see which. It now launches sandboxed where the server would."""
    asked: list[str] = []

    def probe(path: str) -> tuple[bool, bool, str]:
        asked.append(path)
        assert probed is not None
        return probed

    settings = Settings(data_dir=tmp_path, extra_browser_args=args)
    check = doctor_cmd.check_sandbox(settings, True, "/usr/bin/chromium", probe, platform="linux", euid=euid)
    assert (check.name, check.ok, check.warning) == ("sandbox", ok, warning)
    assert words in check.detail and (asked == ["/usr/bin/chromium"]) == (probed is not None)
