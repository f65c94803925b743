#!/usr/bin/env bash
# make test-rust: every Rust suite (cargo test --workspace, with the features
# given as arguments), then the count of tests skipped through the shared
# "needs a service" rule (core/tests/service_support: each skip appends a line
# to $SANDBOX_RECLAIM_SKIP_LOG); under CI any skip fails.
#
# Services: SANDBOX_RECLAIM_PG_URL and DOCKER_HOST (scripts/test.sh provides both).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/test-skips.sh

work=$(mktemp -d /tmp/sandbox-reclaim-rust.XXXXXX)
trap 'rm -rf "$work"' EXIT
export SANDBOX_RECLAIM_SKIP_LOG=$work/skipped
: >"$SANDBOX_RECLAIM_SKIP_LOG"

cargo test --workspace "$@"
sed 's/^/  skipped: /' "$SANDBOX_RECLAIM_SKIP_LOG"
report_skips rust "$(wc -l <"$SANDBOX_RECLAIM_SKIP_LOG" | tr -d ' ')"
