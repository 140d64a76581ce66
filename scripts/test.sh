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
# Three worker processes on CI's 2 cores: the browser, end-to-end and peers tests wait mostly on
# Chromium, the simulated latencies and the public tools' own sleeps, and a third worker fills the
# core they leave idle (docs/DESIGN.md §Test suite: 594 s with two, 482 s and 472 s with three).
# Each is its own pytest session with its own browser and simulator; --dist loadfile keeps a
# module's tests (and its module-scoped fixtures) on one worker. CNKI_TEST_WORKERS=0 runs in one
# process.
# The tests' files (tmp_path: data directories with their SQLite stores, browser profiles) go to a
# RAM disk where there is one (/dev/shm with at least 8 GB free; CNKI_TEST_TMP names another
# directory, CNKI_TEST_TMP= none; docs/DESIGN.md §Test suite): the stores fsync every commit
# (synchronous=FULL), some 44,000 fdatasyncs in the unit/component/contract tiers alone, about
# 2 min of the two workers' time on a VM's disk. No test depends on what reaches the disk: a
# killed server keeps what it wrote either way.
if [ -z "${CNKI_TEST_TMP+set}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] \
  && [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')" -ge 8388608 ] 2>/dev/null; then
  CNKI_TEST_TMP=/dev/shm
fi
if [ -n "${CNKI_TEST_TMP:-}" ]; then
  TMPDIR="$(mktemp -d "$CNKI_TEST_TMP/cnki-tests.XXXXXX")"
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
fi
.venv/bin/python -m pytest -q -n "${CNKI_TEST_WORKERS:-3}" --dist loadfile "$@"
