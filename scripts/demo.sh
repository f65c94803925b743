#!/usr/bin/env bash
# make demo: the main job on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
cargo run --quiet --release -p sandbox-reclaim --features local,sqlite --example demo
