"""`cnki-mcp serve` (stdio) stopped by SIGTERM while its browser is searching, driven over raw pipes
(the SDK's stdio_client kills its child 2 s after closing it, which would hide a slow stop): the
server exits the Ctrl-C way and leaves no browser process and no temporary folder behind
(docs/DESIGN.md "Over stdio, SIGTERM ...")."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import GRID, SEARCH, serve_env
from tests.site_stack import is_page_form, wait_until

# names of what Chromium (its socket folder) and Playwright's driver put in TMPDIR
TEMP_LEFTOVERS = ("org.chromium.", "playwright-artifacts-")
STOP_BOUND = 60.0  # seconds: a server that has not stopped by then fails the test (not a timing check)


def _descendants(root: int) -> set[int]:
    """The live processes under `root` (its browser driver and every Chromium process)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Running, or ended but not reaped by anyone (a zombie has let go of everything it held)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_server_stopped_by_sigterm_mid_search_leaves_no_browser_and_no_temp_folder(
    sim: SimServer, tmp_path: Path, browser_executable: str
) -> None:
    sim.reset()
    sim.set_scenario({"latency": [{"path": GRID, "ms": 3000, "form_lacks": "data-tipid"}]})  # in flight at the signal
    # Chromium's socket (<TMPDIR>/org.chromium.Chromium.XXXXXX/SingletonSocket) must fit in 107
    # bytes: under tmp_path it did not, and the browser never started
    temp = Path(tempfile.mkdtemp(prefix="sig"))
    env = serve_env(tmp_path / "data", sim.origin, browser_executable, TMPDIR=str(temp))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cnki_mcp", "serve"], env=env, cwd=str(tmp_path),
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a shell's ignored SIGINT is inherited
    )  # fmt: skip
    try:
        assert proc.stdin is not None
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": SEARCH}},
        ]  # fmt: skip
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        # the template captured: the search's first replay is on its way (its answer held back)
        await wait_until(lambda: any(is_page_form(e) for e in sim.requests_for(GRID, "POST")), "the search page's click")
        browser = _descendants(proc.pid)
        assert browser  # the driver and Chromium's processes
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=STOP_BOUND) == 130  # the Ctrl-C path, not death by the signal (-15)
        await wait_until(lambda: not any(_alive(pid) for pid in browser), "the browser's processes ending")
        assert sorted(p.name for p in temp.iterdir() if p.name.startswith(TEMP_LEFTOVERS)) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()
        sim.set_scenario(None)
        shutil.rmtree(temp, ignore_errors=True)
