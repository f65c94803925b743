#!/usr/bin/env bash
# The sans-IO crate must build without any runtime: a machine that could
# reach tokio, a database driver, an HTTP client or Docker could do I/O.
# Cargo enforces what the proto crate may import; this keeps its
# Cargo.toml honest (make lint runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
forbidden='^(tokio|sqlx|sqlx-core|reqwest|hyper|bollard|mio|futures-util|libc) '
found=$(cargo tree -p sandbox-reclaim-proto -e normal,build --prefix none | grep -E "$forbidden" | sort -u || true)
if [ -n "$found" ]; then
  echo "check_proto_deps: sandbox-reclaim-proto depends on a runtime:" >&2
  echo "$found" >&2
  exit 1
fi
echo "proto crate: no runtime dependency ($(cargo tree -p sandbox-reclaim-proto -e normal --prefix none | awk '{print $1}' | sort -u | wc -l) crates, none of tokio/sqlx/reqwest/hyper/bollard)"
