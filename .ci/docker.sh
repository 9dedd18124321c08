#!/usr/bin/env bash
# A Docker daemon and the docker runner's test images on a fresh Debian 12 machine, as root, with no
# Docker registry reachable: the images are rootfs trees made here and loaded with `docker import`.
#   .ci/docker.sh start       install docker.io and busybox-static, start dockerd unless one answers,
#                             build agentsvc-test:latest unless present (idempotent), and start
#                             building agentsvc-test-node:latest in the background (see node-image)
#   .ci/docker.sh node-image  build agentsvc-test-node:latest now, in the foreground: busybox plus
#                             Debian 12's nodejs and npm, for MCP servers launched with npx
#                             (test/mcp/docker-npx.test.ts); skipped when the image has this recipe
#   .ci/docker.sh stop        stop the dockerd that `start` launched (one it found running is left
#                             alone) and a node-image build still running
set -euo pipefail

STATE=${AGENTSVC_DOCKER_STATE:-/var/run/agentsvc-ci-docker}
PIDFILE=$STATE/dockerd.pid
LOG=${AGENTSVC_DOCKERD_LOG:-/var/log/agentsvc-ci-dockerd.log}
IMAGE=${AGENTSVC_TEST_IMAGE:-agentsvc-test:latest}
NODE_IMAGE=${AGENTSVC_TEST_NODE_IMAGE:-agentsvc-test-node:latest}
# The background build of NODE_IMAGE: its log, its pid, and its outcome, which the test that needs
# the image waits for (test/mcp/docker-npx.test.ts): `building`, `ok`, or `failed: <why>`.
NODE_LOG=$STATE/node-image.log
NODE_PID=$STATE/node-image.pid
NODE_STATUS=$STATE/node-image.status
# Debian's packages in NODE_IMAGE, with their dependencies (resolved by apt, no recommends).
NODE_PACKAGES=(nodejs npm)
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

# A busybox root in $1: every applet as a symlink in /bin (busybox --install would write to this
# machine's /bin), root and agent (uid 1000, home /workspace) in /etc/passwd.
busybox_root() {
  local root=$1
  mkdir -p "$root"/{bin,etc,dev,proc,sys,root,tmp,workspace}
  chmod 1777 "$root/tmp"
  chmod 0777 "$root/workspace"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/workspace:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nagent:x:1000:\n' >"$root/etc/group"
}

build_image() {
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "image $IMAGE present"
    return
  fi
  local root
  root=$(mktemp -d)
  trap 'rm -rf "$root"' RETURN
  busybox_root "$root"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/bin' -c 'WORKDIR /workspace' -c 'CMD ["sh"]' - "$IMAGE" >/dev/null
  docker run --rm --network none "$IMAGE" sh -c 'test -x /bin/sh && sleep 0.1' ||
    { log "image $IMAGE does not run"; exit 1; }
  log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
}

# What NODE_IMAGE is made by: a changed recipe builds it again, an unchanged one is kept.
node_recipe() {
  { declare -f busybox_root build_node_image; echo "${NODE_PACKAGES[*]}"; } | sha256sum | cut -c1-16
}

# NODE_IMAGE: the busybox root plus Debian's nodejs and npm and their dependency closure, each
# package's files unpacked with dpkg-deb -x (no maintainer script runs; none is needed to run node
# and npx). apt resolves the closure against an empty package status, so it takes Debian's
# packages whatever this machine has installed (e.g. a nodejs from elsewhere). Commands run as
# agent (uid 1000), as in the production image (runners/docker/Dockerfile).
build_node_image() {
  local recipe work root
  recipe=$(node_recipe)
  if [ "$(docker image inspect -f '{{index .Config.Labels "agentsvc.recipe"}}' "$NODE_IMAGE" 2>/dev/null)" = "$recipe" ]; then
    log "image $NODE_IMAGE present (recipe $recipe)"
    return
  fi
  local t0=$SECONDS tmp=/tmp
  # The tree is some 30,000 small files (380 MB with the packages): in memory when there is room,
  # where unpacking and removing them cost no disk writes (on a busy disk, a minute each).
  [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')" -gt 2000000 ] 2>/dev/null && tmp=/dev/shm
  work=$(mktemp -d -p "$tmp")
  # Removed also when `stop` ends the build (a tree left in /dev/shm would hold memory).
  trap 'rm -rf "$work"' RETURN
  trap 'rm -rf "$work"; exit 143' TERM INT HUP
  root=$work/root
  mkdir -p "$work/debs/partial" "$root"
  : >"$work/status"
  local apt=(apt-get -qq -o Dir::State::status="$work/status" -o Dir::Cache::archives="$work/debs"
    -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  "${apt[@]}" install -y --download-only --no-install-recommends "${NODE_PACKAGES[@]}" >/dev/null ||
    { apt-get update -qq && "${apt[@]}" install -y --download-only --no-install-recommends "${NODE_PACKAGES[@]}" >/dev/null; }
  log "downloaded $(ls "$work"/debs/*.deb | wc -l) packages in $((SECONDS - t0)) s"
  busybox_root "$root"
  for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
  rm -rf "$root"/usr/share/{doc,man,info,locale,lintian}
  # Scripts start with #!/usr/bin/env node; the busybox root has env in /bin only.
  [ -e "$root/usr/bin/env" ] || ln -s /bin/busybox "$root/usr/bin/env"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'WORKDIR /workspace' -c 'USER 1000:1000' \
    -c "LABEL agentsvc.recipe=$recipe" -c 'CMD ["sh"]' - "$NODE_IMAGE" >/dev/null
  docker run --rm --network none "$NODE_IMAGE" sh -c 'node --version && npx --version && test "$(id -u)" = 1000' ||
    { log "image $NODE_IMAGE does not run node and npx"; return 1; }
  log "built $NODE_IMAGE in $((SECONDS - t0)) s ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE") bytes, recipe $recipe)"
}

# build_node_image in the background, detached from this script, its outcome in NODE_STATUS.
start_node_image() {
  mkdir -p "$STATE"
  if [ -s "$NODE_PID" ] && kill -0 "$(cat "$NODE_PID")" 2>/dev/null; then
    log "image $NODE_IMAGE: a build is already running (pid $(cat "$NODE_PID"))"
    return
  fi
  echo building >"$NODE_STATUS"
  setsid bash -c '
    if "$0" node-image >"$1" 2>&1; then echo ok >"$2"; else echo "failed: $(tail -n 3 "$1" | tr "\n" " ")" >"$2"; fi
  ' "$0" "$NODE_LOG" "$NODE_STATUS" </dev/null >/dev/null 2>&1 &
  echo $! >"$NODE_PID"
  log "building $NODE_IMAGE in the background (pid $!, log $NODE_LOG, outcome in $NODE_STATUS)"
}

stop_node_image() {
  [ -s "$NODE_PID" ] || return 0
  local pid
  pid=$(cat "$NODE_PID")
  # The build is a session of its own (setsid): its whole process group goes.
  if kill -0 "$pid" 2>/dev/null; then
    kill -- -"$pid" 2>/dev/null || true
    log "image $NODE_IMAGE: the build still running (pid $pid) stopped"
    echo "failed: stopped by .ci/docker.sh stop" >"$NODE_STATUS"
  fi
  rm -f "$NODE_PID"
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
    start_node_image
    ;;
  node-image) build_node_image ;;
  stop)
    stop_node_image
    stop_daemon
    ;;
  *)
    echo "usage: $0 start|node-image|stop" >&2
    exit 2
    ;;
esac
