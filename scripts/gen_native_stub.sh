#!/usr/bin/env bash
# Builds the Python binding into .venv (maturin develop --release) and writes
# its type stub, bindings-python/python/sandbox_reclaim/_native.pyi, from the
# Rust signatures: pyo3's experimental-inspect puts them in the built library
# and `--generate-stubs` writes the stub from there (bindings-python/src/lib.rs,
# src/hints.rs). The stub is never edited by hand.
#
#   bash scripts/gen_native_stub.sh           regenerate it
#   bash scripts/gen_native_stub.sh --check   also fail when it changed, i.e.
#                                             the one in the tree was stale
#                                             (scripts/test-python.sh)
#
# The release profile strips symbols, and the stub is read from the symbol
# table, so this build keeps the binding's own (`--config` below); wheels are
# built stripped and ship the checked-in stub.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
case ${1:-} in
  "") ;;
  --check) check=true ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
venv=$PWD/.venv
stub=bindings-python/python/sandbox_reclaim/_native.pyi
before=$(mktemp)
trap 'rm -f "$before"' EXIT
cp "$stub" "$before"
(cd bindings-python && VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH maturin develop --release --quiet --generate-stubs \
  --config 'profile.release.package.sandbox-reclaim-python.strip=false')
if $check && ! cmp -s "$before" "$stub"; then
  diff -u --label "$stub (checked in)" --label "$stub (generated)" "$before" "$stub" | head -n 80 >&2 || true
  echo "$stub is stale: it differs from what the Rust signatures in bindings-python/src generate (diff above)." >&2
  echo "The generated one is now in the working tree: review it and commit it (bash scripts/gen_native_stub.sh writes it)." >&2
  exit 1
fi
