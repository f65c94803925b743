#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests.
#
#   scripts/postgres.sh start <dir>   # prints postgres://postgres@127.0.0.1:PORT/sandbox_reclaim
#   scripts/postgres.sh stop <dir>
#
# The cluster lives in <dir>/pgdata, its unix socket in <dir>, its log in
# <dir>/postgres.log; the URL is also written to <dir>/url. Only the URL goes to
# stdout (so `DATABASE_URL=$(scripts/postgres.sh start DIR)` works); everything
# else goes to stderr. `start` on a running cluster just prints its URL again.
set -Eeuo pipefail
export DEBIAN_FRONTEND=noninteractive
# Wait for the dpkg lock instead of failing when another apt run (e.g. the
# other service script started in parallel) holds it.
APT=(apt-get -o DPkg::Lock::Timeout=300)

DB=sandbox_reclaim
FIRST_PORT=54329

log() { echo "postgres.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { echo "usage: $0 {start|stop} <dir>" >&2; exit 2; }
# Name the failing command when `set -e` aborts on something unexpected.
trap 'log "error: line $LINENO: \"$BASH_COMMAND\" failed"' ERR

# Run a command as root (we normally are; sudo covers a non-root CI user).
as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi; }

# initdb/pg_ctl refuse to run as root, so as root we run them as `postgres`.
as_pg() { if [[ $EUID -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# Directory holding initdb, pg_ctl, psql, ... of one PostgreSQL version. Debian
# keeps them in /usr/lib/postgresql/N/bin (not in PATH), so look there too and
# resolve symlinks so the sibling tools come from the same version.
pg_bindir() {
  local d
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -rV); do
    [[ -x $d/initdb && -x $d/pg_ctl ]] && { echo "$d"; return 0; }
  done
  return 1
}

ensure_postgres() {
  BIN=$(pg_bindir) && return 0
  log "initdb/pg_ctl not found; installing postgresql from apt"
  as_root "${APT[@]}" update -qq >&2 || die "apt-get update failed"
  as_root "${APT[@]}" install -y -qq postgresql >&2 || die "apt-get install postgresql failed"
  BIN=$(pg_bindir) || die "postgresql installed but initdb/pg_ctl still not found"
}

# True if something already accepts TCP connections on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Port of a running cluster: 4th line of postmaster.pid.
running_port() { sed -n 4p "$PGDATA/postmaster.pid" 2>/dev/null; }

ready() { [[ -n $1 ]] && "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1"; }

is_running() { [[ -f $PGDATA/postmaster.pid ]] && as_pg "$BIN/pg_ctl" status -D "$PGDATA" >/dev/null 2>&1; }

# As root, the cluster belongs to `postgres`, which must own <dir> and be able
# to reach it. `mktemp -d` makes 0700 directories, so grant search (x, not
# read) permission on any ancestor that blocks the way.
let_postgres_in() {
  [[ $EUID -eq 0 ]] || return 0
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres \
    || die "could not create the postgres system user"
  chown postgres: "$DIR"
  local d='' part parts
  IFS=/ read -ra parts <<<"${DIR#/}"
  for part in "${parts[@]}"; do
    d+=/$part
    runuser -u postgres -- test -x "$d" && continue
    log "granting o+x on $d so user postgres can reach $DIR"
    chmod o+x "$d"
  done
  runuser -u postgres -- test -w "$DIR" || die "user postgres cannot write $DIR"
}

init_cluster() {
  log "initdb $PGDATA"
  rm -rf "$PGDATA"  # a half-made cluster from an interrupted run is useless
  # -U postgres: superuser name in the URL regardless of the OS user.
  # --auth=trust: no passwords for local socket or 127.0.0.1 connections.
  as_pg "$BIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --locale=C >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
  # Loopback only; socket in <dir> (not /var/run/postgresql); durability off
  # because the data is throwaway and tests run much faster without fsync.
  cat >>"$PGDATA/postgresql.conf" <<EOF

# --- added by scripts/postgres.sh ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
}

start() {
  ensure_postgres
  let_postgres_in
  # A registered postmaster may still be starting up, or may have just died and
  # not been reaped yet (the pid stays "alive" as a zombie): give it a moment.
  for _ in $(seq 20); do
    if is_running && ! ready "$(running_port)"; then sleep 0.5; else break; fi
  done
  if is_running && ready "$(running_port)"; then
    PORT=$(running_port)
    log "already running on port $PORT"
  else
    is_running && die "a postmaster is registered in $PGDATA but does not answer; see $DIR/postgres.log"
    [[ -f $PGDATA/PG_VERSION && -f $PGDATA/postgresql.conf ]] || init_cluster
    # Unix socket paths are limited to ~107 bytes.
    (( ${#DIR} + 20 < 108 )) || die "path too long for a unix socket: $DIR"
    # Try ports upward from 54329; the port is passed at start time (not stored
    # in the config) so a restarted cluster can move if its old port got taken.
    PORT=$FIRST_PORT started=
    for _ in $(seq 50); do
      if ! port_busy "$PORT"; then
        log "starting on 127.0.0.1:$PORT (log: $DIR/postgres.log)"
        if as_pg "$BIN/pg_ctl" start -D "$PGDATA" -l "$DIR/postgres.log" -o "-p $PORT" -w -t 60 >&2; then
          started=1; break
        fi
        log "start on port $PORT failed; trying the next port"
      fi
      PORT=$((PORT + 1))
    done
    [[ -n $started ]] || { tail -n 30 "$DIR/postgres.log" >&2 2>/dev/null || true; die "could not start PostgreSQL"; }
  fi

  # pg_ctl -w already waited; pg_isready double-checks the TCP listener the URL uses.
  for _ in $(seq 60); do ready "$PORT" && break; sleep 0.5; done
  ready "$PORT" || die "PostgreSQL not accepting connections on 127.0.0.1:$PORT"

  psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres)
  if [[ -z $("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'") ]]; then
    "${psql[@]}" -d postgres -c "CREATE DATABASE $DB" >&2 || die "could not create database $DB"
  fi

  url="postgres://postgres@127.0.0.1:$PORT/$DB"
  echo "$url" >"$DIR/url"
  echo "$url"
}

stop() {
  [[ -d $PGDATA ]] || { log "no cluster in $PGDATA; nothing to stop"; return 0; }
  if ! BIN=$(pg_bindir); then
    # No binaries: fall back to signalling the postmaster directly (SIGINT = fast shutdown).
    pid=$(head -n1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
    [[ -n $pid ]] && kill -INT "$pid" 2>/dev/null || true
    return 0
  fi
  if is_running; then
    log "stopping cluster in $PGDATA"
    as_pg "$BIN/pg_ctl" stop -D "$PGDATA" -m fast -w -t 60 >&2 || die "pg_ctl stop failed"
  else
    log "not running"
  fi
  rm -f "$DIR/url"
}

[[ $# -eq 2 && ($1 == start || $1 == stop) ]] || usage
[[ $1 == start ]] && mkdir -p "$2"
[[ -d $2 ]] || { log "$2 does not exist; nothing to stop"; exit 0; }
DIR=$(cd "$2" && pwd)
PGDATA=$DIR/pgdata
cd "$DIR"  # initdb/pg_ctl run as postgres fail if they cannot access the cwd (e.g. /root)
"$1"
