"""Playwright on first use. A server start answers `tools/list` without loading Playwright (about
0.1-0.3 s of imports); the modules that start the browser import it when they first need it
(docs/benchmarks.md §Start-up)."""

from __future__ import annotations


def error_type() -> type[Exception]:
    """Playwright's base error class (an `except` clause evaluates it only when it matches)."""
    from playwright.async_api import Error

    return Error
