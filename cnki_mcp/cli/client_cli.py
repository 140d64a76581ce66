"""Installing the entry through a client's own CLI when it is on PATH (Claude Code:
`claude mcp add-json --scope user cnki '<json>'`, as its documentation prescribes), with the
same guarantees as the file writer: a symlinked config is refused, the file is backed up
before the CLI touches it, an identical entry is a no-op (the CLI is not run), and a failing
CLI is CONFIG_WRITE_FAILED with its message. The subprocess runner is passed in."""

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
    for argv in cli_commands(exe, name, entry, replace=current is not None):
        code, output = run(argv)
        if code != 0:
            raise ConfigWriteFailed(
                f"{Path(exe).name} {' '.join(argv[1:3])} 失败（退出码 {code}）：{output.strip()[:300]}",
                path=str(path),
            )
    return InstallResult("created" if current is None and backup is None else "updated", path, backup)


def run_subprocess(argv: Sequence[str], *, timeout: float = 60.0) -> tuple[int, str]:
    import subprocess

    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, str(exc)
    return done.returncode, (done.stdout or "") + (done.stderr or "")
