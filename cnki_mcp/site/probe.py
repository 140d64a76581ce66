"""`probe_browser`: can this Chrome/Edge/Chromium be driven? Launches it headless with a
temporary profile (never the user's or the server's profile), opens one blank page and
reports the version. Used by `cnki-mcp doctor` and `cnki-mcp setup`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from cnki_mcp.settings import QUIET_BROWSER_FLAGS

PROBE_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True, slots=True)
class ProbeResult:
    ok: bool
    version: str | None = None
    error: str | None = None


async def probe_browser_async(
    path: str, *, timeout: float = PROBE_TIMEOUT_SECONDS, args: Sequence[str] = ()
) -> ProbeResult:
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import async_playwright

    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=path,
                headless=True,
                args=[*QUIET_BROWSER_FLAGS, *args],
                timeout=timeout * 1000,
            )
            try:
                page = await browser.new_page()
                await page.goto("about:blank", timeout=timeout * 1000)
                version = browser.version
            finally:
                await browser.close()
    except PlaywrightError as exc:
        text = str(exc).strip()
        return ProbeResult(False, error=(text.splitlines()[0] if text else type(exc).__name__)[:300])
    except OSError as exc:
        return ProbeResult(False, error=str(exc)[:300])
    return ProbeResult(True, version=version)


def probe_browser(
    path: str, *, timeout: float = PROBE_TIMEOUT_SECONDS, args: Sequence[str] = ()
) -> ProbeResult:
    """Synchronous wrapper for the command line (must not be called inside a running loop)."""
    try:
        return asyncio.run(
            asyncio.wait_for(probe_browser_async(path, timeout=timeout, args=args), timeout + 10)
        )
    except TimeoutError:
        return ProbeResult(False, error=f"浏览器在 {timeout:.0f} 秒内没有启动")
