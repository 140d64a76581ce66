"""`probe_browser`: can this Chrome/Edge/Chromium be driven? Launches it headless with a
temporary profile (never the user's or the server's profile), opens one blank page and
reports the version. Used by `cnki-mcp doctor` and `cnki-mcp setup`."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cnki_mcp.errors import BrowserUnavailable
from cnki_mcp.settings import QUIET_BROWSER_FLAGS

PROBE_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True, slots=True)
class ProbeResult:
    ok: bool
    version: str | None = None
    error: str | None = None
    sandbox_refused: bool = False  # asked to start sandboxed, Chromium said this machine cannot


async def probe_browser_async(
    path: str,
    *,
    timeout: float = PROBE_TIMEOUT_SECONDS,
    args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    sandbox: bool = False,
) -> ProbeResult:
    """`environ`: the process environment; given, the browser keeps its own files (crash-report
    database, settings cache) in a temporary folder instead of the person's HOME. `sandbox`:
    launch inside Chromium's sandbox, as the server does (Playwright turns it off unless asked)."""
    from playwright.async_api import Error as PlaywrightError

    from cnki_mcp.site._pw import start_driver
    from cnki_mcp.site.browser import private_browser_env
    from cnki_mcp.site.launch_error import is_sandbox_refusal, temp_unusable

    if (temp := temp_unusable()) is not None:
        return ProbeResult(False, error=temp.message)
    try:
        with tempfile.TemporaryDirectory(prefix="cnki-mcp-probe-") as scratch:
            env = None if environ is None else private_browser_env(environ, Path(scratch), headless=True)
            pw = await start_driver()
            try:
                browser = await pw.chromium.launch(
                    executable_path=path,
                    headless=True,
                    args=[*QUIET_BROWSER_FLAGS, *args],
                    timeout=timeout * 1000,
                    env=env,
                    chromium_sandbox=sandbox,
                )
                try:
                    page = await browser.new_page()
                    await page.goto("about:blank", timeout=timeout * 1000)
                    version = browser.version
                finally:
                    await browser.close()
            finally:
                await pw.stop()
    except PlaywrightError as exc:
        text = str(exc).strip()
        error = (text.splitlines()[0] if text else type(exc).__name__)[:300]
        return ProbeResult(False, error=error, sandbox_refused=sandbox and is_sandbox_refusal(exc))
    except OSError as exc:
        return ProbeResult(False, error=str(exc)[:300])
    except BrowserUnavailable as exc:  # the driver itself did not start (start_driver)
        return ProbeResult(False, error=exc.message[:300])
    return ProbeResult(True, version=version)


def probe_browser(
    path: str,
    *,
    timeout: float = PROBE_TIMEOUT_SECONDS,
    args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    sandbox: bool = False,
) -> ProbeResult:
    """Synchronous wrapper for the command line (must not be called inside a running loop)."""
    try:
        return asyncio.run(
            asyncio.wait_for(
                probe_browser_async(path, timeout=timeout, args=args, environ=environ, sandbox=sandbox),
                timeout + 10,
            )
        )
    except TimeoutError:
        return ProbeResult(False, error=f"浏览器在 {timeout:.0f} 秒内没有启动")
