"""How this cnki-mcp was installed, so a client can start the same one: the absolute path
of the `cnki-mcp` console script, `uvx --from cnki-research-mcp cnki-mcp` when it runs from
uv's throw-away cache (or when the user asks for a uvx-style entry), or
`<absolute python> -m cnki_mcp` when started as a module.

The distribution is `cnki-research-mcp` (DESIGN.md §Distribution): the PyPI name `cnki-mcp`
belongs to another project that ships the same import package, so a bare `uvx cnki-mcp` would
start a stranger's server. Every uvx entry therefore names our distribution with `--from`.

GUI clients do not see the shell's PATH, so the command is always absolute when it can
be (uvx is looked up on PATH and written absolute when found)."""

from __future__ import annotations

import ntpath
import os
import posixpath
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

SCRIPT_NAME = "cnki-mcp"
MODULE_NAME = "cnki_mcp"
DIST_NAME = "cnki-research-mcp"
UVX_PREFIX: tuple[str, ...] = ("--from", DIST_NAME, SCRIPT_NAME)

LauncherKind = Literal["script", "uvx", "module"]

# uv runs `uvx` tools from environments in its cache; those folders are replaced at will.
_UV_CACHE_MARKERS = ("/uv/archive-v", "/uv/cache/", "/.cache/uv/", "/uv/builds-v")


@dataclass(frozen=True, slots=True)
class Launcher:
    kind: LauncherKind
    command: str
    prefix: tuple[str, ...] = ()  # arguments before the subcommand

    def argv(self, *args: str) -> list[str]:
        return [self.command, *self.prefix, *args]

    def serve(self) -> list[str]:
        return self.argv("serve")

    def describe(self) -> str:
        return {
            "script": "已安装的 cnki-mcp 命令",
            "uvx": "uvx（每次从 uv 缓存运行）",
            "module": "Python 模块（python -m cnki_mcp）",
        }[self.kind]


def _is_windows(platform: str) -> bool:
    return platform in {"win32", "cygwin"}


def _script_names(platform: str) -> tuple[str, ...]:
    if _is_windows(platform):
        return (f"{SCRIPT_NAME}.exe", f"{SCRIPT_NAME}-script.py", SCRIPT_NAME)
    return (SCRIPT_NAME,)


def _in_uv_cache(path: str) -> bool:
    low = path.replace("\\", "/").lower()
    return any(marker in low for marker in _UV_CACHE_MARKERS)


def detect_launcher(
    argv0: str,
    executable: str,
    *,
    platform: str,
    cwd: str,
    exists: Callable[[str], bool],
    which: Callable[[str], str | None],
    realpath: Callable[[str], str] = os.path.realpath,
) -> Launcher:
    """Decide the launch command from `sys.argv[0]` and `sys.executable` (pure: the
    filesystem checks are passed in)."""
    path_mod = ntpath if _is_windows(platform) else posixpath
    python = path_mod.join(cwd, executable) if not path_mod.isabs(executable) else executable
    script: str | None = None
    if argv0:
        candidate = argv0 if path_mod.isabs(argv0) else path_mod.join(cwd, argv0)
        candidate = path_mod.normpath(candidate)
        base = path_mod.basename(candidate).lower()
        if base in _script_names(platform) or base == SCRIPT_NAME:
            if _is_windows(platform) and not base.endswith(".exe") and exists(candidate + ".exe"):
                candidate += ".exe"
            if base.endswith("-script.py"):
                candidate = candidate[: -len("-script.py")] + ".exe"
            script = candidate
    if script is None:
        # `python -m cnki_mcp` (or an embedding): prefer the console script of the same
        # environment, which is what an installer puts beside the interpreter.
        bin_dir = path_mod.dirname(python)
        for name in _script_names(platform):
            beside = path_mod.join(bin_dir, name)
            if name != f"{SCRIPT_NAME}-script.py" and exists(beside):
                script = beside
                break
    if script is not None:
        if _in_uv_cache(script) or _in_uv_cache(realpath(script)):
            return uvx_launcher(which)
        return Launcher("script", script)
    return Launcher("module", python, ("-m", MODULE_NAME))


def uvx_launcher(which: Callable[[str], str | None]) -> Launcher:
    """`uvx --from cnki-research-mcp cnki-mcp ...`, uvx written absolute when it is on PATH."""
    return Launcher("uvx", which("uvx") or "uvx", UVX_PREFIX)


def current_launcher(*, prefer_uvx: bool = False) -> Launcher:
    """The launcher of the running process (reads sys.argv, sys.executable and the disk);
    `prefer_uvx` gives the uvx form whatever the installation (`--uvx`)."""
    import shutil

    if prefer_uvx:
        return uvx_launcher(shutil.which)
    return detect_launcher(
        sys.argv[0] if sys.argv else "",
        sys.executable,
        platform=sys.platform,
        cwd=os.getcwd(),
        exists=os.path.isfile,
        which=shutil.which,
    )
