# Shared helpers for the make scripts. Sourced, not run.

# rustfmt and clippy come with rustup; everything else each suite's script
# installs itself (npm packages, the venv, Debian packages).
ensure_toolchain() {
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  # A CI run builds once from a fresh clone: incremental caches (about half
  # of a debug target/) would only cost disk and time there.
  if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
}

# The Python the gRPC fakes run under (tests/fakes/modal_fake.py and
# boxd_fake.py, built on the stubs the official `modal` and `boxd` packages
# ship), for the Rust, Node and Python suites alike: the repo's .venv, with
# the pinned clients.
ensure_fake_python() {
  local venv=$PWD/.venv
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "modal==1.6.4" "boxd==0.2.19"
  export SANDBOX_RECLAIM_FAKE_PYTHON=$venv/bin/python
}

# Starts PostgreSQL and podman's Docker-API service under "$1" and exports
# what the suites read: SANDBOX_RECLAIM_PG_URL, DOCKER_HOST, CONTAINERS_CONF,
# SANDBOX_RECLAIM_TEST_IMAGE, SANDBOX_RECLAIM_FAKE_PYTHON. Any failure aborts
# the run (set -e): a missing service must fail the tests, never skip them.
start_services() {
  local dir=$1
  ensure_fake_python
  SANDBOX_RECLAIM_PG_URL=$(bash scripts/postgres.sh start "$dir/pg")
  export SANDBOX_RECLAIM_PG_URL
  bash scripts/podman.sh start "$dir/podman" >/dev/null
  # shellcheck disable=SC1091
  source "$dir/podman/env"
}

# Stops both services; safe to call when they never started.
stop_services() {
  local dir=$1
  bash scripts/postgres.sh stop "$dir/pg" || true
  bash scripts/podman.sh stop "$dir/podman" || true
}
