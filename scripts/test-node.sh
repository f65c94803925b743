#!/usr/bin/env bash
# make test-node: install the Node binding's npm deps locally, build the
# native addon (release), type-check against TanStack's published types, and
# run every Node suite (parity vectors vs binding and reference, behaviour,
# packed tarball) plus the example. Nothing here is optional or skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v node >/dev/null || { echo "test-node: node is required" >&2; exit 1; }
command -v cargo >/dev/null || { echo "test-node: cargo is required" >&2; exit 1; }

(
  cd bindings-node
  # Lockfile install into bindings-node/node_modules (napi-rs CLI, TypeScript, TanStack types).
  npm ci --no-audit --no-fund
  npm run build
  npm run typecheck
)

node --test tests/node/*.test.mjs
node examples/node/reap-detached-runs.mjs >/dev/null
echo "test-node: every Node suite passed"
