#!/usr/bin/env bash
# make fleet-sim (issue #38; never part of make test or CI): builds the
# release Node addon, the Python package (into .venv) and the
# `sandbox-reclaim` binary, starts a throwaway PostgreSQL, and runs
# bench/sim/fleet_sim.py: SIM_PROCS reconcile processes of the three
# languages (default 8) on one store of SIM_RECORDS records (default
# 1,000,000), sweeping SIM_LISTED sandboxes (default 100,000) on four
# vendors' fakes at 20 ms a request. Its last line:
#   fleet-sim: wall N s, ideal N s, N× (target ≤ 1.2×)
# and it exits 1 when an orphan is left or destroyed twice, or a sandbox a
# record names was destroyed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/.venv

echo "== build the Node addon (npm run build: release)"
(cd bindings-node && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent; } && npm run build --silent >/dev/null)
echo "== build and install sandbox_reclaim into .venv (maturin develop --release)"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "maturin>=1.16,<1.17"
(cd bindings-python && VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH maturin develop --release --quiet)
echo "== build the sandbox-reclaim binary (cargo build --release -p sandbox-reclaim-cli)"
cargo build --quiet --release -p sandbox-reclaim-cli

work=$(mktemp -d /tmp/sandbox-reclaim-fleet-sim.XXXXXX)
trap 'bash scripts/postgres.sh stop "$work/pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
SANDBOX_RECLAIM_PG_URL=$(bash scripts/postgres.sh start "$work/pg")
export SANDBOX_RECLAIM_PG_URL
"$venv/bin/python" bench/sim/fleet_sim.py
