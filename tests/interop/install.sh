#!/usr/bin/env bash
# Installs the pinned MCP clients of tests/interop (package.json, package-lock.json) into
# tests/interop/node_modules, for `make test` and the interop tests (which call this script too).
# Quiet; `npm ci` from the lock file, from npm's cache when it has the packages; skipped when the
# installed copy is of the committed lock file already. Without node/npm it says so and exits 0: the
# interop tests then skip.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "tests/interop: node/npm not found; the interop tests will be skipped" >&2
  exit 0
fi
stamp=node_modules/.shiftbox-package-lock.json
if cmp -s package-lock.json "$stamp"; then
  exit 0
fi
npm ci --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
cp package-lock.json "$stamp"
