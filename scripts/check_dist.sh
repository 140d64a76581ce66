#!/usr/bin/env bash
# The published artefacts, checked the way a user meets them (docs/DESIGN.md §Distribution):
#  1. uv.lock matches pyproject.toml (`uv lock --check`);
#  2. the wheel and sdist build and pass `twine check` (nothing is uploaded);
#  3. a clean virtual environment installs exactly the locked runtime set (hashes required)
#     plus the built wheel, and its `cnki-mcp` runs without the test or sim extras;
#  4. server.json and the README's mcp-name line agree with pyproject.toml.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
UV=.venv/bin/uv
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cnki-dist.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

"$UV" lock --check --quiet
echo "dist: uv.lock matches pyproject.toml"

"$UV" build --quiet --out-dir "$WORK/dist" --wheel --sdist
.venv/bin/twine check --strict "$WORK"/dist/*
echo "dist: built $(cd "$WORK/dist" && ls | tr '\n' ' ')"

"$UV" export --quiet --frozen --no-dev --no-emit-project --format requirements-txt -o "$WORK/requirements.txt"
"$UV" venv --quiet --python .venv/bin/python "$WORK/venv"
# From uv's cache, which the setup step has just filled with the locked set (the same hashes are
# required); the index is asked only when the cache lacks something: asking it for every pinned
# name took 10-25 s of each run.
"$UV" pip install --quiet --offline --python "$WORK/venv/bin/python" --require-hashes -r "$WORK/requirements.txt" 2>/dev/null \
  || "$UV" pip install --quiet --python "$WORK/venv/bin/python" --require-hashes -r "$WORK/requirements.txt"
"$UV" pip install --quiet --python "$WORK/venv/bin/python" --no-deps "$WORK"/dist/*.whl
"$WORK/venv/bin/cnki-mcp" version
"$WORK/venv/bin/python" - <<'PY'
import importlib.metadata as m, importlib.util, sys
assert m.version("cnki-research-mcp"), "our distribution is installed"
for extra_only in ("trustme", "pytest"):
    assert importlib.util.find_spec(extra_only) is None, f"{extra_only} must not be in a plain install"
from cnki_mcp.server.app import TOOL_NAMES
assert not [k for k in sys.modules if k.startswith("cnki_mcp.sim")], "the server imports no simulator code"
print(f"dist: clean venv from the lock + wheel: {len(TOOL_NAMES)} tools, no test/sim extras")
PY
.venv/bin/python scripts/check_server_json.py
