#!/usr/bin/env bash
# make test: start the services the suites need, run every suite, stop the
# services again (also when a suite fails).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_toolchain
work=$(mktemp -d /tmp/sandbox-reclaim-test.XXXXXX)
trap 'stop_services "$work"; rm -rf "$work"' EXIT
start_services "$work"

make lint test-rust test-reference test-node test-python test-packaging
echo "make test: every suite passed"
