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
exec .venv/bin/python -m pytest -q "$@"
