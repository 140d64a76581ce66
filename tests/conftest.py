"""Shared fixtures: the real CNKI pages in `tests/fixtures/cnki-real`, one Chromium per test session."""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_PAGES = REPO_ROOT / "tests" / "fixtures" / "cnki-real"

QUIET_FLAGS = [
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def real_page(relative: str) -> Path:
    """Path of a saved real CNKI page (stored as `relative + ".gz"`, derived data as is; see PROVENANCE.md there).

    A missing fixture is an error, never a skip: the project carries every page its tests read."""
    for path in (REAL_PAGES / f"{relative}.gz", REAL_PAGES / relative):
        if path.exists():
            return path
    raise FileNotFoundError(f"real page fixture missing: {REAL_PAGES / relative}")


def real_bytes(relative: str) -> bytes:
    path = real_page(relative)
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def read_real(relative: str, encoding: str = "utf-8") -> str:
    return real_bytes(relative).decode(encoding, errors="replace")


def write_real(relative: str, folder: Path) -> Path:
    """Decompress a real page into `folder` under its own name (for commands that read files)."""
    out = folder / Path(relative).name
    out.write_bytes(real_bytes(relative))
    return out


def find_browser_executable() -> str | None:
    env = os.environ.get("CNKI_BROWSER_PATH")
    if env and Path(env).exists():
        return env
    for cand in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if Path(cand).exists():
            return cand
    found = shutil.which("chromium") or shutil.which("google-chrome")
    return found


ROOMY_DISK = 10 * 1024**3


@pytest.fixture(autouse=True)
def disks_with_room(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every disk the product asks about has room, whatever the machine running the tests has left:
    below 32 MB free in TMPDIR (launch_error.TEMP_LOW_BYTES) every browser failure is
    temp_disk_full, below 16 MB a failed download says no_space, and a CI machine with a small /tmp
    failed tests about a dead browser as if they had found a defect. A test about a full disk says
    so by patching `free_space` itself."""
    monkeypatch.setattr("cnki_mcp.site.launch_error.free_space", lambda folder: ROOMY_DISK)
    monkeypatch.setattr("cnki_mcp.site.downloading.free_space", lambda folder: ROOMY_DISK)


@pytest.fixture(scope="session")
def browser_executable() -> str:
    exe = find_browser_executable()
    if not exe:
        pytest.skip("no Chromium/Chrome found (set CNKI_BROWSER_PATH)")
    return exe


@pytest.fixture(scope="session")
async def playwright_instance() -> AsyncIterator[object]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
async def browser(playwright_instance, browser_executable, tmp_path_factory):  # type: ignore[no-untyped-def]
    """One headless Chromium for the whole session; tests open their own contexts. Its crash
    reports and settings cache go to the session's temporary folder, not the developer's HOME
    (`private_browser_env`, as the product's browser)."""
    from cnki_mcp.site.browser import private_browser_env

    env = private_browser_env(os.environ, tmp_path_factory.mktemp("chrome-config"), headless=True)
    b = await playwright_instance.chromium.launch(
        executable_path=browser_executable, headless=True, args=QUIET_FLAGS, env=env
    )
    yield b
    await b.close()


@pytest.fixture(scope="session")
def _sim_server_session():  # type: ignore[no-untyped-def]
    from cnki_mcp.sim.server import SimServer

    server = SimServer().start()
    yield server
    server.stop()


@pytest.fixture
def sim_server(_sim_server_session):  # type: ignore[no-untyped-def]
    """The simulator on port 0 with the bundled corpus; scenario, log and state reset per test."""
    _sim_server_session.set_scenario(None)
    _sim_server_session.reset()
    yield _sim_server_session
    _sim_server_session.set_scenario(None)
    _sim_server_session.reset()


@pytest.fixture
async def page(browser):  # type: ignore[no-untyped-def]
    """A page in a fresh browser context of the session's Chromium (no cookies: a first visit),
    closed after the test."""
    context = await browser.new_context()
    try:
        yield await context.new_page()
    finally:
        await context.close()


@pytest.fixture
def cite_sources_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The record_ref of every paper export_citations turns into a citation source
    (`tools_cite.cite_source`), in order: what making a scope's BibTeX keys costs."""
    from cnki_mcp.server import tools_cite

    made: list[str] = []
    real = tools_cite.cite_source

    def counted(paper: Any) -> Any:
        made.append(paper.record_ref)
        return real(paper)

    monkeypatch.setattr(tools_cite, "cite_source", counted)
    return made
