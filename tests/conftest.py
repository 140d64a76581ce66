"""Shared fixtures: the real-captures folder, one Chromium per test session."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_PAGES = REPO_ROOT.parent / "shared" / "cnki-real"

QUIET_FLAGS = [
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def real_page(relative: str) -> Path:
    """Path of a saved real CNKI page; skips the test when `../shared/cnki-real` is absent."""
    path = REAL_PAGES / relative
    if not path.exists():
        pytest.skip(f"real capture not available: {relative}")
    return path


def read_real(relative: str, encoding: str = "utf-8") -> str:
    return real_page(relative).read_text(encoding=encoding, errors="replace")


def find_browser_executable() -> str | None:
    env = os.environ.get("CNKI_BROWSER_PATH")
    if env and Path(env).exists():
        return env
    for cand in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if Path(cand).exists():
            return cand
    found = shutil.which("chromium") or shutil.which("google-chrome")
    return found


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
async def browser(playwright_instance, browser_executable):  # type: ignore[no-untyped-def]
    """One headless Chromium for the whole session; tests open their own contexts."""
    b = await playwright_instance.chromium.launch(
        executable_path=browser_executable, headless=True, args=QUIET_FLAGS
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
