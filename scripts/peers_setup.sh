#!/usr/bin/env bash
# Installs the public CNKI tools the peers suite (tests/peers) drives, each into its own virtual
# environment .venv-peers/<tool>, from PyPI at the versions pinned in tests/peers/requirements/
# (the tool and every dependency, installed with --no-deps so nothing floats). A venv is rebuilt
# only when its requirements file changed. Needs the project's .venv (for uv); no browser download:
# the drivers point Playwright at the system Chromium.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
UV=.venv/bin/uv
[ -x "$UV" ] || { echo "run scripts/_setup.sh first (.venv/bin/uv missing)" >&2; exit 1; }
PY="$ROOT/.venv/bin/python"
for req in tests/peers/requirements/*.txt; do
  tool="$(basename "$req" .txt)"
  venv=".venv-peers/$tool"
  stamp="$venv/.peers-installed"
  if [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
    continue
  fi
  rm -rf "$venv"
  "$UV" venv --quiet --python "$PY" "$venv"
  "$UV" pip install --quiet --no-deps --python "$venv/bin/python" -r "$req"
  cp "$req" "$stamp"
done
