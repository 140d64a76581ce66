"""The environment of a process the tests start (`cnki-mcp serve`, the Node clients): a few
variables of the test run's own, and none of its `CNKI_*` settings, so the child sees only what the
test sets.

TMPDIR (and Node's TMP/TEMP) is kept: the server's Chromium puts its singleton socket folder there
and Playwright's driver its artifacts. Dropped, they went to the machine's /tmp instead of the
suite's private temp folder (scripts/test.sh), and a killed child's leftovers piled up there."""

from __future__ import annotations

import os

KEPT = ("PATH", "HOME", "LANG", "PYTHONPATH", "TMPDIR", "TMP", "TEMP")


def child_env(**extra: str) -> dict[str, str]:
    """KEPT from this process's environment, then `extra`."""
    env = {k: v for k, v in os.environ.items() if k in KEPT}
    env.update(extra)
    return env
