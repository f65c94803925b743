# Shared helpers for the make scripts. Sourced, not run.

# Installs what the build needs and is missing: a C toolchain, Node and Python
# come with the machine; rustfmt/clippy come with rustup.
ensure_toolchain() {
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
}

# Starts PostgreSQL and the podman Docker-API service in "$1", exporting
# SANDBOX_RECLAIM_PG_URL, DOCKER_HOST and friends for the suites.
start_services() {
  local dir=$1
  if [ -x scripts/postgres.sh ] || [ -f scripts/postgres.sh ]; then
    SANDBOX_RECLAIM_PG_URL=$(bash scripts/postgres.sh start "$dir/pg")
    export SANDBOX_RECLAIM_PG_URL
  fi
  if [ -f scripts/podman.sh ]; then
    bash scripts/podman.sh start "$dir/podman" >/dev/null
    # shellcheck disable=SC1091
    source "$dir/podman/env"
  fi
}

stop_services() {
  local dir=$1
  [ -f scripts/postgres.sh ] && bash scripts/postgres.sh stop "$dir/pg" || true
  [ -f scripts/podman.sh ] && bash scripts/podman.sh stop "$dir/podman" || true
}
