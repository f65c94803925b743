#!/usr/bin/env bash
# make soak (issue #26; never part of make test): builds the release Node
# addon, the Python package (into .venv) and the `sandbox-reclaim` binary,
# installs libfaketime (the reconcilers' clock offsets), starts a throwaway
# PostgreSQL, and runs tests/soak/soak.py: a phase on PostgreSQL with clocks
# offset up to ±30 s, then one on a SQLite file (one machine, one clock).
#
#   SOAK_SECONDS=600   length of the whole run (split between the phases)
#   SOAK_PAUSES=0      no SIGSTOP/SIGCONT        SOAK_KILLS=0   no SIGKILL
#   SOAK_SEED=N        replay a run's choices    SOAK_LIST_LAG_MS=N  listing lag
#
# Its last line: soak: live_destroyed=N orphans_left=N repeat_destroys=N pauses=N kills=N
# On failure the logs are kept (the path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/.venv
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -o DPkg::Lock::Timeout=300)

if ! ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1; then
  echo "== install libfaketime (apt-get install faketime)"
  "${APT[@]}" update -qq >/dev/null
  "${APT[@]}" install -y -qq faketime >/dev/null
fi

echo "== build the Node addon (npm run build: release)"
(cd bindings-node && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent; } && npm run build --silent >/dev/null)

echo "== build and install sandbox_reclaim into .venv (maturin develop --release)"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "maturin>=1.16,<1.17"
(cd bindings-python && VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH maturin develop --release --quiet)

echo "== build the sandbox-reclaim binary (cargo build --release -p sandbox-reclaim-cli)"
cargo build --quiet --release -p sandbox-reclaim-cli

work=$(mktemp -d /tmp/sandbox-reclaim-soak.XXXXXX)
status=1
finish() {
  bash scripts/postgres.sh stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work/pg"
  if [ "$status" -eq 0 ]; then rm -rf "$work"; else echo "soak logs kept in $work"; fi
}
trap finish EXIT
pg_url=$(bash scripts/postgres.sh start "$work/pg")
# Workers are started by path; the one Python is the venv's.
"$venv/bin/python" tests/soak/soak.py --work "$work" --bin "$root/target/release/sandbox-reclaim" --pg-url "$pg_url" && status=0 || status=$?
exit "$status"
