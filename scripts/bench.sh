#!/usr/bin/env bash
# make bench: every benchmark, each printing side-by-side ratios from one run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
echo "== Node binding vs reference =="
bash scripts/test-node.sh --build-only
node bench/node/bench.mjs
echo "== Python binding vs pure-Python asyncio =="
bash scripts/test-python.sh --build-only
.venv/bin/python bench/python/bench.py
