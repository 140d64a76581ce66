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
exec .venv/bin/python -m pytest -q "$@"
