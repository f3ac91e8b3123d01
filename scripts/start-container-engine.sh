#!/usr/bin/env bash
# Starts the container engine the container runtime (SLIPWAY_RUNTIME=container) and its tests run
# on: a private dockerd (Debian's docker.io) with its own data root, exec root, socket and bridge
# under a state directory, a local registry (Debian's docker-registry) with htpasswd auth on
# 127.0.0.1, and iptables rules that keep containers from reaching SMTP ports. Running it again
# reuses what is already running. stdout is only `export` lines, for
#   eval "$(scripts/start-container-engine.sh)"
# `scripts/start-container-engine.sh stop` stops both and removes the rules.
#
# Settings: SLIPWAY_ENGINE_DIR (state directory), SLIPWAY_ENGINE_BIP (the default bridge's
# gateway/prefix), SLIPWAY_ENGINE_POOL (where user-defined networks come from),
# SLIPWAY_REGISTRY_PORT (the registry's port on 127.0.0.1).
set -euo pipefail

STATE="${SLIPWAY_ENGINE_DIR:-$HOME/.cache/slipway/engine}"
BIP="${SLIPWAY_ENGINE_BIP:-10.213.0.1/24}"
POOL="${SLIPWAY_ENGINE_POOL:-10.214.0.0/16}"
REGISTRY_PORT="${SLIPWAY_REGISTRY_PORT:-5000}"
SOCK="$STATE/docker.sock"
REG="$STATE/registry"
# The chain holding the SMTP block; DOCKER-USER (traffic leaving through the host) and INPUT
# (traffic to the host itself) jump to it for this engine's address ranges.
CHAIN=SLIPWAY-SMTP
SMTP_PORTS=25,465,587

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
log() { echo "start-container-engine: $*" >&2; }

# The bridge's network in CIDR form (10.213.0.1/24 -> 10.213.0.0/24) for the iptables match.
bridge_net() {
  local ip="${BIP%/*}" len="${BIP#*/}" a b c d
  IFS=. read -r a b c d <<<"$ip"
  local n=$(((a << 24 | b << 16 | c << 8 | d) & (0xffffffff << (32 - len)) & 0xffffffff))
  echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))/$len"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_missing() {
  local need=()
  [ -x /usr/sbin/dockerd ] || need+=(docker.io)
  command -v docker-registry >/dev/null || need+=(docker-registry)
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
  command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || need+=(iptables)
  command -v htpasswd >/dev/null || need+=(apache2-utils)
  command -v curl >/dev/null || need+=(curl)
  command -v openssl >/dev/null || need+=(openssl)
  command -v ip >/dev/null || [ -x /usr/sbin/ip ] || need+=(iproute2)
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  # A policy-rc.d answering 101 keeps the packages' postinst from starting their services (the
  # system dockerd and registry would take the bridge and the port); one already there is kept.
  local policy=/usr/sbin/policy-rc.d ours=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    ours=1
  fi
  {
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}"
  } >&2 || { [ -n "$ours" ] && $SUDO rm -f "$policy"; return 1; }
  [ -n "$ours" ] && $SUDO rm -f "$policy"
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    $SUDO systemctl disable --now docker.service docker.socket docker-registry >/dev/null 2>&1 || true
  fi
}

start_dockerd() {
  if alive "$STATE/dockerd.pid" && docker_ok; then
    # Its default bridge (docker0) can be taken away under it (another dockerd started with
    # `--bridge none` deletes it), leaving containers unable to start: started again, it is made anew.
    ip link show docker0 >/dev/null 2>&1 && return 0
    log "the engine's bridge docker0 is gone: restarting dockerd"
    stop_pid "$STATE/dockerd.pid"
  fi
  mkdir -p "$STATE/data" "$STATE/exec"
  rm -f "$SOCK"
  log "starting dockerd (log: $STATE/dockerd.log)"
  # setsid: the daemon outlives this script and the shell that ran it. --group lets the invoking
  # user reach the socket when the daemon runs through sudo.
  $SUDO setsid /usr/sbin/dockerd \
    --data-root "$STATE/data" --exec-root "$STATE/exec" --pidfile "$STATE/dockerd.pid" \
    -H "unix://$SOCK" --group "$(id -gn)" \
    --bip "$BIP" --default-address-pool "base=$POOL,size=24" \
    --iptables=true --ip-masq=true \
    >>"$STATE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 300); do
    if docker_ok; then return 0; fi
    sleep 0.2
  done
  log "dockerd did not answer on $SOCK within 60 s; the end of its log:"
  tail -n 30 "$STATE/dockerd.log" >&2
  exit 1
}

docker_ok() { [ -S "$SOCK" ] && DOCKER_HOST="unix://$SOCK" docker version >/dev/null 2>&1; }

block_smtp() {
  local ipt="$SUDO iptables" net
  net="$(bridge_net)"
  $ipt -N "$CHAIN" 2>/dev/null || $ipt -F "$CHAIN"
  for src in "$net" "$POOL"; do
    $ipt -A "$CHAIN" -s "$src" -p tcp -m multiport --dports "$SMTP_PORTS" -j REJECT --reject-with tcp-reset
  done
  # dockerd creates DOCKER-USER (with --iptables=true) and recreates its RETURN at each start, so
  # the jump goes first in it.
  for parent in DOCKER-USER INPUT; do
    $ipt -C "$parent" -j "$CHAIN" 2>/dev/null || $ipt -I "$parent" 1 -j "$CHAIN"
  done
}

unblock_smtp() {
  local ipt="$SUDO iptables"
  for parent in DOCKER-USER INPUT; do
    while $ipt -D "$parent" -j "$CHAIN" 2>/dev/null; do :; done
  done
  $ipt -F "$CHAIN" 2>/dev/null || true
  $ipt -X "$CHAIN" 2>/dev/null || true
}

registry_ok() {
  # The registry answers /v2/ with 401 when auth is on: it is up and it is ours.
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$REGISTRY_PORT/v2/" || true)" = 401 ]
}

start_registry() {
  mkdir -p "$REG/data"
  if [ ! -f "$REG/credentials" ] || [ ! -f "$REG/htpasswd" ]; then
    local password
    password="$(openssl rand -hex 16)"
    printf 'SLIPWAY_TEST_REGISTRY_USER=slipway\nSLIPWAY_TEST_REGISTRY_PASSWORD=%s\n' "$password" >"$REG/credentials"
    chmod 600 "$REG/credentials"
    # The registry reads only bcrypt entries.
    htpasswd -Bbc "$REG/htpasswd" slipway "$password" 2>/dev/null
  fi
  if alive "$REG/registry.pid" && registry_ok; then
    return 0
  fi
  cat >"$REG/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $REG/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$REGISTRY_PORT
  secret: $(openssl rand -hex 16)
auth:
  htpasswd:
    realm: slipway-test-registry
    path: $REG/htpasswd
EOF
  log "starting docker-registry on 127.0.0.1:$REGISTRY_PORT (log: $REG/registry.log)"
  setsid docker-registry serve "$REG/config.yml" >>"$REG/registry.log" 2>&1 </dev/null &
  echo $! >"$REG/registry.pid"
  for _ in $(seq 1 100); do
    if registry_ok; then return 0; fi
    if ! alive "$REG/registry.pid"; then break; fi
    sleep 0.1
  done
  log "docker-registry did not start (port $REGISTRY_PORT taken? SLIPWAY_REGISTRY_PORT picks another); its log:"
  tail -n 20 "$REG/registry.log" >&2
  exit 1
}

stop_pid() {
  local file="$1" pid
  alive "$file" || { rm -f "$file"; return 0; }
  pid="$(cat "$file")"
  $SUDO kill "$pid"
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then $SUDO kill -9 "$pid"; fi
  rm -f "$file"
}

stop_all() {
  stop_pid "$REG/registry.pid"
  stop_pid "$STATE/dockerd.pid"
  unblock_smtp
  # libnetwork keeps its resolv.conf/hosts copies under /var/lib/docker whatever the data root.
  $SUDO rm -rf /var/lib/docker/network/files
  $SUDO rmdir /var/lib/docker/network /var/lib/docker 2>/dev/null || true
  if ip link show docker0 >/dev/null 2>&1; then $SUDO ip link delete docker0 || true; fi
  rm -f "$SOCK"
  log "stopped"
}

case "${1:-start}" in
  stop)
    stop_all
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac

mkdir -p "$STATE"
install_missing
start_dockerd
block_smtp
start_registry
echo "export DOCKER_HOST=unix://$SOCK"
echo "export SLIPWAY_TEST_REGISTRY=127.0.0.1:$REGISTRY_PORT"
sed 's/^/export /' "$REG/credentials"
