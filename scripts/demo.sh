#!/usr/bin/env bash
# make demo: the main job on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
cargo run --quiet -p sandbox-reclaim --example toy_demo
