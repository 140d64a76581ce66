#!/usr/bin/env bash
# Installs everything into .venv (and a Chromium if none is found), then runs the whole suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CNKI_SETUP_FOR_TESTS=1  # also Xvfb + a window manager for the headed-window test
# shellcheck source=scripts/_setup.sh
source "$ROOT/scripts/_setup.sh"
cd "$ROOT"
.venv/bin/ruff check --quiet cnki_mcp tests scripts
# The peers suite (tests/peers: public CNKI tools from PyPI against the simulator) is opt-in:
# CNKI_PEERS=1 (and CI) install the pinned tools into .venv-peers/ and make the suite required.
if [ -n "${CI:-}" ] || [ "${CNKI_PEERS:-0}" = "1" ]; then
  ./scripts/peers_setup.sh
  export CNKI_PEERS=1
fi
./scripts/check_dist.sh  # lock matches pyproject, wheel/sdist pass twine, clean locked install runs
# Two worker processes (CI has 2 cores): each is its own pytest session with its own browser and
# simulator; --dist loadfile keeps a module's tests (and its module-scoped fixtures) on one worker.
# CNKI_TEST_WORKERS=0 runs in one process.
exec .venv/bin/python -m pytest -q -n "${CNKI_TEST_WORKERS:-2}" --dist loadfile "$@"
