#!/usr/bin/env bash
# Installs everything into .venv (and a Chromium if none is found), then runs the offline demo:
# the bundled CNKI simulator, the real server stack and a research search end to end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/_setup.sh
source "$ROOT/scripts/_setup.sh"
cd "$ROOT"
exec .venv/bin/cnki-mcp demo "$@"
