"""What the peers harness changes in a public tool's run: the browser launch, and nothing else.

Runs inside the tool's own virtual environment (never imports this project). `install()` wraps
Playwright's `BrowserType.launch` / `launch_persistent_context` (sync and async APIs) so that
whatever the tool asks for, Chromium is

* the system executable (`PEERS_BROWSER`), not a channel (`msedge`) or a downloaded build;
* headless (CI has no display; a tool that asks for a window gets the same browser without one);
* started with the two flags that send the real host names to the simulator
  (`--host-resolver-rules=…`, `--ignore-certificate-errors`, from `PEERS_CHROMIUM_ARGS`).

The person: a tool in its headed mode waits while a person solves CNKI's slider in the window.
Every browser context therefore gets an init script that, on the simulator's slider page only,
does what that person does (presses the slider's fallback button). It touches no other page; the
simulator's request log shows every step it took (tests/peers/test_peers.py)."""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from typing import Any

PERSON_SCRIPT = """
(() => {
  if (location.pathname !== '/verify/home') return;
  const solve = () => {
    const btn = document.querySelector('.verify-fallback');
    if (!btn) return;
    try { sessionStorage.setItem('peers-person', String(Date.now())); } catch (e) {}
    btn.click();
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => setTimeout(solve, 300));
  else setTimeout(solve, 300);
})();
"""


def _settings() -> tuple[str, list[str]]:
    exe = os.environ["PEERS_BROWSER"]
    args = json.loads(os.environ["PEERS_CHROMIUM_ARGS"])
    return exe, list(args)


def _patched_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    exe, extra = _settings()
    out = dict(kwargs)
    out.pop("channel", None)
    out["executable_path"] = exe
    out["headless"] = True
    out["args"] = [*(out.get("args") or []), *extra]
    return out


def _wrap_context_sync(ctx: Any) -> Any:
    ctx.add_init_script(PERSON_SCRIPT)
    return ctx


async def _wrap_context_async(ctx: Any) -> Any:
    await ctx.add_init_script(PERSON_SCRIPT)
    return ctx


def _patch_browser_type(cls: Any, is_async: bool) -> None:
    launch = cls.launch
    persistent = cls.launch_persistent_context

    if is_async:

        @functools.wraps(launch)
        async def alaunch(self: Any, *a: Any, **kw: Any) -> Any:
            browser = await launch(self, *a, **_patched_kwargs(kw))
            _patch_new_context(browser, True)
            return browser

        @functools.wraps(persistent)
        async def apersistent(self: Any, *a: Any, **kw: Any) -> Any:
            return await _wrap_context_async(await persistent(self, *a, **_patched_kwargs(kw)))

        cls.launch, cls.launch_persistent_context = alaunch, apersistent
    else:

        @functools.wraps(launch)
        def slaunch(self: Any, *a: Any, **kw: Any) -> Any:
            browser = launch(self, *a, **_patched_kwargs(kw))
            _patch_new_context(browser, False)
            return browser

        @functools.wraps(persistent)
        def spersistent(self: Any, *a: Any, **kw: Any) -> Any:
            return _wrap_context_sync(persistent(self, *a, **_patched_kwargs(kw)))

        cls.launch, cls.launch_persistent_context = slaunch, spersistent


def _patch_new_context(browser: Any, is_async: bool) -> None:
    original = browser.new_context
    if is_async:

        async def anew_context(*a: Any, **kw: Any) -> Any:
            return await _wrap_context_async(await original(*a, **kw))

        browser.new_context = anew_context
    else:

        def snew_context(*a: Any, **kw: Any) -> Any:
            return _wrap_context_sync(original(*a, **kw))

        browser.new_context = snew_context


def install() -> None:
    from playwright.async_api import BrowserType as AsyncBrowserType
    from playwright.sync_api import BrowserType as SyncBrowserType

    assert inspect.iscoroutinefunction(AsyncBrowserType.launch)
    _patch_browser_type(AsyncBrowserType, True)
    _patch_browser_type(SyncBrowserType, False)


def emit(result: dict[str, Any]) -> None:
    """The driver's one line of output: JSON on stdout (the tools log to stderr)."""
    sys.stdout.write("PEERS-RESULT " + json.dumps(result, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()
