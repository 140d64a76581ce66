"""The session-cookie file of the browser host (pure file I/O, no Playwright). A persistent
profile loses cookies without an expiry when it relaunches, so those are kept here (0600,
written atomically) and put back at launch. Cookie values are never logged."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# Keys `BrowserContext.add_cookies` accepts (cookies() also returns e.g. partitionKey on some versions).
COOKIE_KEYS = ("name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite")


def atomic_write_private(path: Path, data: str) -> None:
    """Write `data` to `path` readable by the owner only (0600), replacing it atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def session_payload(cookies: Iterable[Mapping[str, Any]]) -> tuple[str, int]:
    """The file text holding only the session cookies (expires -1) of `cookies`, and their count."""
    session = [
        {k: c[k] for k in COOKIE_KEYS if k in c} for c in cookies if float(c.get("expires", -1) or -1) < 0
    ]
    return json.dumps({"version": 1, "cookies": session}, ensure_ascii=False, sort_keys=True), len(session)


def load_session_cookies(path: Path) -> list[dict[str, Any]]:
    """The saved cookies, ready for `add_cookies`; [] when the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        raw = data["cookies"] if isinstance(data, dict) else []
    except (OSError, ValueError, KeyError):
        return []
    if not isinstance(raw, list):
        return []
    return [
        {k: c[k] for k in COOKIE_KEYS if k in c}
        for c in raw
        if isinstance(c, dict) and c.get("name") and c.get("domain") and "value" in c
    ]
