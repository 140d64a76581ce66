"""Installing the entry through a client's own CLI when it is on PATH (Claude Code:
`claude mcp add-json --scope user cnki '<json>'`, as its documentation prescribes), with the
same guarantees as the file writer: a symlinked config is refused, the file is backed up
before the CLI touches it, an identical entry is a no-op (the CLI is not run), and a failing
CLI is CONFIG_WRITE_FAILED with its message: before any change the backup is dropped; after the
old entry was removed it is put back through the CLI and the message names the backup. The
subprocess runner is passed in."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cnki_mcp.cli.configfile import InstallResult, backup_path
from cnki_mcp.errors import ConfigInvalid, ConfigSymlink, ConfigWriteFailed

Runner = Callable[[Sequence[str]], tuple[int, str]]  # argv -> (exit code, stdout + stderr)


def _current(path: Path, servers_key: str, name: str) -> Any:
    if path.is_symlink():
        raise ConfigSymlink(f"{path} 是符号链接，拒绝写入（请改写链接指向的文件）", path=str(path))
    try:
        doc = json.loads(path.read_text(encoding="utf-8").lstrip("\ufeff"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigInvalid(f"{path} 无法读取为 JSON，未改动", path=str(path)) from exc
    node: Any = doc
    for part in [*servers_key.split("."), name]:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def cli_commands(exe: str, name: str, entry: Mapping[str, Any], *, replace: bool) -> list[list[str]]:
    """The CLI calls: remove the old user-scope entry first when there is one, then add."""
    calls: list[list[str]] = []
    if replace:
        calls.append([exe, "mcp", "remove", "--scope", "user", name])
    calls.append([exe, "mcp", "add-json", "--scope", "user", name, json.dumps(dict(entry), ensure_ascii=False)])
    return calls


def install_with_cli(
    exe: str,
    path: Path,
    *,
    servers_key: str,
    name: str,
    entry: Mapping[str, Any],
    now: datetime,
    run: Runner,
) -> InstallResult:
    current = _current(path, servers_key, name)
    if current == dict(entry):
        return InstallResult("unchanged", path)
    backup: Path | None = None
    if path.exists():
        backup = backup_path(path, now)
        shutil.copy2(path, backup)
    for done, argv in enumerate(cli_commands(exe, name, entry, replace=current is not None)):
        code, output = run(argv)
        if code != 0:
            raise _failed(exe, argv, code, output, path, backup, current, name, run, changed=done > 0)
    return InstallResult("created" if current is None and backup is None else "updated", path, backup)


def _failed(
    exe: str,
    argv: Sequence[str],
    code: int,
    output: str,
    path: Path,
    backup: Path | None,
    previous: Any,
    name: str,
    run: Runner,
    *,
    changed: bool,
) -> ConfigWriteFailed:
    """The error for a failing CLI call. Nothing changed yet: the backup is dropped. The old entry
    already removed: it is put back through the CLI, and the message says so and names the backup."""
    message = f"{Path(exe).name} {' '.join(argv[1:3])} 失败（退出码 {code}）：{output.strip()[:300]}"
    if not changed:
        if backup is not None:
            backup.unlink(missing_ok=True)
        return ConfigWriteFailed(message, path=str(path))
    restored = (
        isinstance(previous, dict)
        and run(cli_commands(exe, name, previous, replace=False)[-1])[0] == 0
    )
    message += "；原来的 cnki 条目已" + ("恢复" if restored else "被删除，未能恢复")
    if backup is not None:
        message += f"，修改前的配置备份在 {backup}"
    return ConfigWriteFailed(message, path=str(path), backup=str(backup) if backup else None, restored=restored)


def run_subprocess(argv: Sequence[str], *, timeout: float = 60.0) -> tuple[int, str]:
    import subprocess

    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, str(exc)
    return done.returncode, (done.stdout or "") + (done.stderr or "")
