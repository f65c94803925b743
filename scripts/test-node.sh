#!/usr/bin/env bash
# make test-node: install the Node binding's npm deps locally, build the
# native addon (release), type-check against TanStack's published types, and
# run every Node suite (parity vectors vs binding and reference, behaviour,
# durable stores, providers, the store CLI, packed tarball) plus the examples.
#
# Services: SANDBOX_RECLAIM_PG_URL (PostgreSQL) and DOCKER_HOST (+ CONTAINERS_CONF,
# SANDBOX_RECLAIM_TEST_IMAGE) for podman; `make test` exports them. Without
# them the dependent tests are skipped, and under CI (CI set to anything
# non-empty) they FAIL (tests/node/services.mjs). Prints "node: N skipped";
# under CI any skip fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/test-skips.sh

command -v node >/dev/null || { echo "test-node: node is required" >&2; exit 1; }
command -v cargo >/dev/null || { echo "test-node: cargo is required" >&2; exit 1; }
if in_ci; then
  for name in SANDBOX_RECLAIM_PG_URL DOCKER_HOST; do
    [[ -n "${!name:-}" ]] || { echo "test-node: $name must be set under CI (CI=$CI)" >&2; exit 1; }
  done
fi

(
  cd bindings-node
  # Lockfile install into bindings-node/node_modules (napi-rs CLI, TypeScript, TanStack types).
  npm ci --no-audit --no-fund
  npm run build
  npm run typecheck
)

# Prints "node: N skipped"; under CI any skip fails (scripts/test-skips.sh).
node_tests node tests/node/*.test.mjs
node examples/node/reap-detached-runs.mjs >/dev/null
node examples/node/durable-retry.mjs >/dev/null
echo "test-node: every Node suite passed"
