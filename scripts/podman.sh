#!/usr/bin/env bash
# Docker Engine API served by rootful podman, for tests that need containers.
#
#   eval "$(scripts/podman.sh start <dir>)"   # sets DOCKER_HOST, CONTAINERS_CONF,
#                                             # SANDBOX_RECLAIM_TEST_IMAGE
#   scripts/podman.sh stop <dir>
#
# <dir> gets containers.conf, podman.sock, podman.log, podman.pid and env (the
# export lines). Only the export lines go to stdout; diagnostics go to stderr.
# `start` reuses a service that is already answering for <dir>.
set -Eeuo pipefail
export DEBIAN_FRONTEND=noninteractive
# Wait for the dpkg lock instead of failing when another apt run (e.g. the
# other service script started in parallel) holds it.
APT=(apt-get -o DPkg::Lock::Timeout=300)

IMAGE=sandbox-reclaim/busybox:latest

log() { echo "podman.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { echo "usage: $0 {start|stop} <dir>" >&2; exit 2; }
# Name the failing command when `set -e` aborts on something unexpected.
trap 'log "error: line $LINENO: \"$BASH_COMMAND\" failed"' ERR

installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]; }

ensure_packages() {
  local missing=() p
  # busybox-static specifically: the image needs a binary with no shared libs.
  for p in podman runc busybox-static curl; do installed "$p" || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing ${missing[*]} from apt"
  "${APT[@]}" update -qq >&2 || die "apt-get update failed"
  "${APT[@]}" install -y -qq "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
}

write_conf() {
  # runc: crun fails on this kernel's hybrid cgroup v1/v2 layout.
  # ulimits: podman's default raises nofile/nproc, which is not permitted here.
  # exit_command_delay: every finished API exec keeps two conmon processes
  # (~3 MB) alive this long so it can still be inspected; the default of 300 s
  # piles them up in exec-heavy test runs.
  cat >"$DIR/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
exit_command_delay = 30
EOF
  export CONTAINERS_CONF=$DIR/containers.conf
}

# Minimal test image: a root filesystem with a static busybox and its applets.
ensure_image() {
  podman image exists "$IMAGE" && return 0
  log "building $IMAGE"
  local tmp a
  tmp=$(mktemp -d)
  mkdir -p "$tmp/root/bin" "$tmp/root/etc" "$tmp/root/root" "$tmp/root/tmp" "$tmp/root/usr"
  chmod 1777 "$tmp/root/tmp"
  cp /bin/busybox "$tmp/root/bin/busybox"
  for a in $(/bin/busybox --list); do
    [[ $a == busybox ]] || ln -s busybox "$tmp/root/bin/$a"
  done
  # So that /usr/bin/env, /sbin/... style shebangs and paths also resolve.
  ln -s bin "$tmp/root/sbin"
  ln -s ../bin "$tmp/root/usr/bin"
  ln -s ../bin "$tmp/root/usr/sbin"
  tar -C "$tmp/root" -cf "$tmp/rootfs.tar" .
  podman import --change 'CMD ["/bin/sh"]' "$tmp/rootfs.tar" "$IMAGE" >&2 || { rm -rf "$tmp"; die "podman import failed"; }
  rm -rf "$tmp"
}

ping_ok() { [[ $(curl -fsS --max-time 5 --unix-socket "$SOCK" http://d/_ping 2>/dev/null) == OK ]]; }

service_pid() {
  local pid
  pid=$(cat "$DIR/podman.pid" 2>/dev/null) || return 1
  # Guard against a recycled pid from a stale pid file.
  [[ -n $pid ]] && grep -qa podman "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

start() {
  [[ $EUID -eq 0 ]] || die "must run as root (rootful podman, apt-get)"
  # Unix socket paths are limited to ~107 bytes.
  (( ${#SOCK} < 108 )) || die "path too long for a unix socket: $SOCK"
  ensure_packages
  write_conf
  ensure_image

  if service_pid >/dev/null && ping_ok; then
    log "service already running (pid $(service_pid))"
  else
    stop_service  # clear a dead/unresponsive leftover before starting afresh
    log "starting podman system service on $SOCK (log: $DIR/podman.log)"
    # setsid+nohup: survive the calling shell/CI step; --time=0: never idle-exit.
    setsid nohup podman system service --time=0 "unix://$SOCK" \
      </dev/null >"$DIR/podman.log" 2>&1 &
    echo $! >"$DIR/podman.pid"
    for _ in $(seq 100); do
      ping_ok && break
      service_pid >/dev/null || { tail -n 30 "$DIR/podman.log" >&2; die "podman service exited"; }
      sleep 0.2
    done
    ping_ok || { tail -n 30 "$DIR/podman.log" >&2; die "podman service did not answer /_ping on $SOCK"; }
  fi

  # Smoke test through the service's socket: a real container (no network,
  # like the tests) must run.
  out=$(podman --url "unix://$SOCK" run --rm --network none "$IMAGE" echo ok 2>&1) \
    && [[ $out == ok ]] || die "smoke test 'podman run $IMAGE echo ok' failed: $out"

  {
    echo "export DOCKER_HOST=unix://$SOCK"
    echo "export CONTAINERS_CONF=$DIR/containers.conf"
    echo "export SANDBOX_RECLAIM_TEST_IMAGE=$IMAGE"
  } | tee "$DIR/env"
}

stop_service() {
  local pid
  if pid=$(service_pid); then
    log "stopping podman service (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do service_pid >/dev/null || break; sleep 0.2; done
    if service_pid >/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$DIR/podman.pid" "$SOCK"
}

# Containers already running are left alone: conmon keeps them alive without the service.
stop() { stop_service; rm -f "$DIR/env"; }

[[ $# -eq 2 && ($1 == start || $1 == stop) ]] || usage
[[ $1 == start ]] && mkdir -p "$2"
[[ -d $2 ]] || { log "$2 does not exist; nothing to stop"; exit 0; }
DIR=$(cd "$2" && pwd)
SOCK=$DIR/podman.sock
"$1"
