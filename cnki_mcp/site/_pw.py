"""Playwright on first use. A server start answers `tools/list` without loading Playwright (about
0.1-0.3 s of imports); the modules that start the browser import it when they first need it
(docs/benchmarks.md §Start-up)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cnki_mcp.errors import BrowserUnavailable

if TYPE_CHECKING:
    from playwright.async_api import Playwright


def error_type() -> type[Exception]:
    """Playwright's base error class (an `except` clause evaluates it only when it matches)."""
    from playwright.async_api import Error

    return Error


async def start_driver() -> Playwright:
    """Playwright's driver (a Node process) started; BROWSER_UNAVAILABLE (`driver_failed`) when it
    dies at start instead of the bare Exception Playwright raises ("Connection closed while reading
    from the driver"), which reached the client as INTERNAL. Seen with no home directory at all
    (HOME unset, a UID the password database does not know: Node exits at its first line)."""
    from playwright.async_api import async_playwright

    try:
        return await async_playwright().start()
    except Exception as exc:
        raise BrowserUnavailable(
            f"Playwright 的驱动进程没能启动（{str(exc)[:200] or type(exc).__name__}）：检查 HOME 是否指向"
            "当前用户的主目录、playwright 是否完整安装，并运行 cnki-mcp doctor",
            reason="driver_failed",
        ) from exc
