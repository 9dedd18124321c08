#!/usr/bin/env bash
# A Docker daemon and the docker runner's test image on a fresh Debian 12 machine, as root, with no
# registry reachable: the image is a busybox rootfs made with `docker import`.
#   .ci/docker.sh start   install docker.io and busybox-static, start dockerd unless one answers,
#                         build agentsvc-test:latest unless present (idempotent)
#   .ci/docker.sh stop    stop the dockerd that `start` launched (one it found running is left alone)
set -euo pipefail

STATE=${AGENTSVC_DOCKER_STATE:-/var/run/agentsvc-ci-docker}
PIDFILE=$STATE/dockerd.pid
LOG=${AGENTSVC_DOCKERD_LOG:-/var/log/agentsvc-ci-dockerd.log}
IMAGE=${AGENTSVC_TEST_IMAGE:-agentsvc-test:latest}
# Tried in order until one comes up. The plain daemon works on an ordinary VM; the others are for
# machines without iptables/bridge support or where overlayfs cannot be mounted (nested sandboxes).
FLAG_SETS=(
  ""
  "--iptables=false --ip6tables=false --bridge=none"
  "--iptables=false --ip6tables=false --bridge=none --storage-driver=vfs"
)

log() { echo "# docker.sh: $*"; }

install() {
  local need=()
  command -v dockerd >/dev/null || need+=(docker.io)
  # busybox-static, not busybox: the image has no libc, the binary must stand alone.
  dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
  [ ${#need[@]} -eq 0 ] && return
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
}

answering() { timeout 10 docker info >/dev/null 2>&1; }

# Start dockerd with the given flags; succeed once `docker info` answers, fail if it dies or 60 s pass.
try_start() {
  local flags=$1 pid
  # shellcheck disable=SC2086 # flags are words
  setsid dockerd $flags >>"$LOG" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 60); do
    if answering; then
      echo "$pid" >"$PIDFILE"
      log "dockerd up (pid $pid, flags: ${flags:-none}, log $LOG)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  log "dockerd with flags '${flags:-none}' did not come up; last log lines:"
  tail -n 5 "$LOG" | sed 's/^/#   /'
  return 1
}

start_daemon() {
  if answering; then
    log "a docker daemon already answers: using it"
    return
  fi
  mkdir -p "$STATE" "$(dirname "$LOG")"
  for flags in "${FLAG_SETS[@]}"; do
    try_start "$flags" && return
  done
  log "could not start dockerd (see $LOG)"
  exit 1
}

build_image() {
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "image $IMAGE present"
    return
  fi
  local root
  root=$(mktemp -d)
  trap 'rm -rf "$root"' RETURN
  mkdir -p "$root"/{bin,etc,dev,proc,sys,root,tmp,workspace}
  chmod 1777 "$root/tmp"
  chmod 0777 "$root/workspace"
  cp /bin/busybox "$root/bin/busybox"
  # Every applet as a symlink in /bin (busybox --install would write to this machine's /bin).
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/workspace:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nagent:x:1000:\n' >"$root/etc/group"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/bin' -c 'WORKDIR /workspace' -c 'CMD ["sh"]' - "$IMAGE" >/dev/null
  docker run --rm --network none "$IMAGE" sh -c 'test -x /bin/sh && sleep 0.1' ||
    { log "image $IMAGE does not run"; exit 1; }
  log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
}

stop_daemon() {
  if [ ! -s "$PIDFILE" ]; then
    log "no dockerd started by this script"
    return
  fi
  local pid
  pid=$(cat "$PIDFILE")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
    log "dockerd (pid $pid) stopped"
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  start)
    install
    start_daemon
    build_image
    ;;
  stop) stop_daemon ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
