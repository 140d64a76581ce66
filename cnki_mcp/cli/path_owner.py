"""Which distribution the `cnki-mcp` found on PATH belongs to (`doctor`).

Three PyPI projects besides ours ship a `cnki_mcp` import package, and one of them owns the PyPI
name `cnki-mcp` and a `cnki-mcp` command (DESIGN.md §Distribution). A user who installed one of
them as well may start a stranger's server by typing `cnki-mcp`. The check reads the console
script's interpreter from its shebang (POSIX scripts and the Windows .exe launchers both carry
one) and asks that interpreter which installed distribution declares the `cnki-mcp` console
script. The decision is pure; the disk and the subprocess are passed in."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from cnki_mcp.cli.launcher import DIST_NAME, SCRIPT_NAME

# Run by the script's own interpreter: the distributions that declare a `cnki-mcp` console script.
OWNER_CODE = (
    "import json, importlib.metadata as m\n"
    "print(json.dumps(sorted({(d.metadata['Name'] or '') for d in m.distributions()"
    " for e in d.entry_points if e.group == 'console_scripts' and e.name == 'cnki-mcp'})))"
)

_SHEBANG = re.compile(rb"#!([^\r\n]+)")


@dataclass(frozen=True, slots=True)
class PathOwner:
    ok: bool  # False only when the command on PATH is another project's
    detail: str
    hint: str = ""


def shebang_interpreter(head: bytes) -> str | None:
    """The interpreter named by a console script's shebang: the first line of a POSIX script,
    the last `#!` line of a Windows launcher .exe (its zip payload follows it)."""
    if head.startswith(b"#!"):
        match = _SHEBANG.match(head)
    else:
        matches = list(_SHEBANG.finditer(head))
        match = matches[-1] if matches else None
    if match is None:
        return None
    line = match.group(1).decode("utf-8", "replace").strip()
    if line.startswith('"'):
        return line[1:].split('"', 1)[0] or None
    # `#!/usr/bin/env python3` style lines: the first word is a launcher, not the interpreter.
    parts = line.split()
    if not parts:
        return None
    if parts[0].endswith("/env") and len(parts) > 1:
        return parts[1]
    return parts[0]


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def path_owner(
    *,
    found: str | None,
    own_script: str | None,
    same_file: Callable[[str, str], bool],
    read_head: Callable[[str], bytes],
    owners_of: Callable[[str], list[str] | None],
) -> PathOwner:
    """Judge the `cnki-mcp` on PATH (`found`, None when absent) against this installation."""
    if found is None:
        return PathOwner(True, "PATH 上没有 cnki-mcp 命令；客户端配置使用绝对路径，不受影响")
    if own_script is not None and same_file(found, own_script):
        return PathOwner(True, f"PATH 上的 cnki-mcp 就是本安装（{found}）")
    try:
        interpreter = shebang_interpreter(read_head(found))
    except OSError as exc:
        return PathOwner(True, f"PATH 上的 {found} 无法读取（{exc.strerror or exc}），未判断归属")
    owners = owners_of(interpreter) if interpreter else None
    if owners is None:
        return PathOwner(True, f"PATH 上的 {found} 不属于本安装，无法判断它来自哪个项目")
    ours = normalise(DIST_NAME)
    if any(normalise(o) == ours for o in owners):
        return PathOwner(True, f"PATH 上的 {found} 是另一个环境中的 {DIST_NAME}")
    who = "、".join(owners) or "未知项目"
    return PathOwner(
        False,
        f"PATH 上的 {found} 属于 {who}，不是 {DIST_NAME}",
        f"在终端输入 {SCRIPT_NAME} 会启动别人的服务器；客户端配置请用 cnki-mcp config 生成的绝对路径，"
        f"或卸载 {who}",
    )


def owners_via_subprocess(interpreter: str, *, timeout: float = 15.0) -> list[str] | None:
    """Ask `interpreter` which distributions declare the console script (None on any failure)."""
    import subprocess

    try:
        done = subprocess.run(
            [interpreter, "-I", "-c", OWNER_CODE],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        value = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return [str(v) for v in value] if isinstance(value, list) else None


def current_path_owner() -> PathOwner:
    """`path_owner` for this process: PATH, this environment's script, the real disk."""
    import os
    import shutil

    from cnki_mcp.cli.launcher import current_launcher

    launcher = current_launcher()
    own = launcher.command if launcher.kind == "script" else None

    def same_file(a: str, b: str) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return False

    def read_head(path: str) -> bytes:
        with open(path, "rb") as fh:
            return fh.read(1 << 20)  # a Windows launcher's shebang sits before its zip payload

    return path_owner(
        found=shutil.which(SCRIPT_NAME),
        own_script=own,
        same_file=same_file,
        read_head=read_head,
        owners_of=owners_via_subprocess,
    )
