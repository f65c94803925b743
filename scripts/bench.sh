#!/usr/bin/env bash
# make bench: every benchmark, each printing ratios measured side by side in
# one process. Builds what it needs (release), starts PostgreSQL for the store
# throughput bench and stops it again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain

echo "== build the Node addon (release)"
(cd bindings-node && npm ci --no-audit --no-fund --silent && npm run build --silent)
echo "== build the Python package into .venv (release)"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet "maturin>=1.16,<1.17"
(cd bindings-python && VIRTUAL_ENV=$PWD/../.venv PATH=$PWD/../.venv/bin:$PATH maturin develop --release --quiet)

echo; echo "== the core alone (no language boundary): what the bindings' per-call figures below build on"
cargo run --quiet --release -p sandbox-reclaim --example wire_bench
echo; echo "== Node: reference vs binding (JS host objects) vs binding (native store)"
node bench/node/bench.mjs
echo; echo "== Python: pure-Python asyncio vs binding (Python host objects) vs binding (native store)"
.venv/bin/python bench/python/bench.py

# PostgreSQL for the fleet passes' durable store and the store throughput bench.
work=$(mktemp -d /tmp/sandbox-reclaim-bench.XXXXXX)
trap 'bash scripts/postgres.sh stop "$work/pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
SANDBOX_RECLAIM_PG_URL=$(bash scripts/postgres.sh start "$work/pg")
export SANDBOX_RECLAIM_PG_URL

echo; echo "== fleet passes (Rust): reclaimAll 2,000 × 20 ms at concurrency 64 (in-memory, SQLite, PostgreSQL) against the ideal; reconcile over 10,000 orphans"
cargo run --quiet --release -p sandbox-reclaim --features sqlite,postgres --example fleet_bench
echo; echo "== scale (Rust, issue #38): one reconcile pass over 200 and over 10,000 listed sandboxes on SQLite and PostgreSQL stores of 10,000 and 1,000,000 records (plus 4x registry rows, 100,000 ledger entries, 1,000,000 audit rows): time, ratio and peak memory growth"
cargo run --quiet --release -p sandbox-reclaim --features sqlite,postgres --example scale_bench
echo; echo "== prune (Rust, issue #38): pruning 4,000,000 expired registry rows and 1,000,000 audit rows of a SQLite store in bounded batches, while another process upserts: the upserts' latency alone and during the prune"
cargo run --quiet --release -p sandbox-reclaim --features sqlite,postgres --example prune_bench
echo; echo "== hosted providers (Rust): reconcile over 10,000 sandboxes for every vendor (E2B, Daytona, Vercel, Sprites, Runloop, Blaxel, Modal, Kubernetes, Upstash Box, Railway, boxd) on its local fake (pages of 100, or the vendor's largest or only page; 20 ms per request) at 64; Modal twice: on the proven Python fake (its row is fake-bound) and on an in-process tonic fake (our side); boxd's Python fake is fake-bound too"
ensure_fake_python
cargo run --quiet --release -p sandbox-reclaim --features hosted,modal,kubernetes,boxd --example hosted_bench
echo; echo "== fleet passes (Node, Python): reclaimAll 2,000 × 20 ms at 64 (in-memory, SQLite, PostgreSQL) against the ideal and the sequential reference loop"
node bench/node/fleet.mjs
.venv/bin/python bench/python/fleet.py

echo; echo "== store throughput, sequential (in-memory, SQLite, PostgreSQL): Rust, then each binding"
cargo run --quiet --release -p sandbox-reclaim --features sqlite,postgres --example store_bench
node bench/node/stores.mjs
.venv/bin/python bench/python/stores.py
