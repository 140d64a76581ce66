#!/usr/bin/env bash
# Installs everything into .venv (and a Chromium if none is found), then runs the whole suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CNKI_SETUP_FOR_TESTS=1  # also Xvfb + a window manager for the headed-window test
# shellcheck source=scripts/_setup.sh
source "$ROOT/scripts/_setup.sh"
cd "$ROOT"
.venv/bin/ruff check --quiet cnki_mcp tests scripts
./scripts/check_dist.sh  # lock matches pyproject, wheel/sdist pass twine, clean locked install runs
# Two worker processes (CI has 2 cores): each is its own pytest session with its own browser and
# simulator; --dist loadfile keeps a module's tests (and its module-scoped fixtures) on one worker.
# CNKI_TEST_WORKERS=0 runs in one process.
exec .venv/bin/python -m pytest -q -n "${CNKI_TEST_WORKERS:-2}" --dist loadfile "$@"
