#!/usr/bin/env bash
# Starts a real multi-node Docker Swarm on this one machine, for the cluster tests: N engines
# (Debian's docker.io dockerd), each in a network namespace of its own (slipway-swarm-<i>, also its
# hostname), joined by a bridge that lives in a namespace of its own (slipway-swarm-br, so the
# host's firewall and forwarding rules never see the traffic between nodes), in a private range
# (SLIPWAY_SWARM_NET.0.0/16, default 10.220.0.0/16) apart from the container engine's
# (scripts/start-container-engine.sh), with which it shares the machine. The host reaches every
# node's address through a veth into the bridge (slswarm0, <net>.0.1), so host-mode published
# ports answer from the host, where the edge runs. Two registries (Debian's docker-registry) listen
# on that host-side address: an open one (no auth: only the bridge reaches it) on
# <net>.0.1:SLIPWAY_SWARM_REGISTRY_PORT (default 5100), and one that asks for a login (htpasswd
# basic auth, as a private registry does) on <net>.0.1:SLIPWAY_SWARM_AUTH_REGISTRY_PORT (default
# 5101); every node's daemon.json lists both in insecure-registries (plain HTTP). The registry path
# of the swarm runtime (SLIPWAY_SWARM_REGISTRY, with SLIPWAY_SWARM_REGISTRY_USER/PASSWORD for the
# second) pushes there from the manager and every node pulls from it. Running it again reuses what is running, restarts a node's engine or
# the registry when gone, and reloads (SIGHUP) a running engine whose daemon.json changed.
# stdout is only `export` lines, for
#   eval "$(scripts/start-swarm.sh [nodes])"
# (SLIPWAY_SWARM_DOCKER_HOST, SLIPWAY_SWARM_NODES, SLIPWAY_SWARM_TEST_REGISTRY, the open registry's
# host:port: given to Slipway as SLIPWAY_SWARM_REGISTRY it turns the registry path on, and
# SLIPWAY_SWARM_TEST_AUTH_REGISTRY with its login, SLIPWAY_SWARM_TEST_REGISTRY_USER and
# SLIPWAY_SWARM_TEST_REGISTRY_PASSWORD.)
# `scripts/start-swarm.sh load <image>...` copies images from the container engine into every node;
# `scripts/start-swarm.sh kill <i>` kills every process of node i (a lost machine; starting again
# brings it back); `scripts/start-swarm.sh stop` tears everything down.
#
# Managers: 3 when there are 3 nodes or more (the raft quorum survives the loss of any one; the rest
# join as workers), else node 1 alone (two managers would stop the swarm when either is lost).
# Nodes are labelled slipway.region=<cluster name of GET /resources/clusters>, from
# SLIPWAY_SWARM_REGIONS (comma-separated, node i takes entry i, cycling).
#
# Settings: SLIPWAY_SWARM_DIR (state directory), SLIPWAY_SWARM_NET (the first two octets of the
# /16), SLIPWAY_SWARM_REGIONS, SLIPWAY_SWARM_REGISTRY_PORT,
# SLIPWAY_SWARM_AUTH_REGISTRY_PORT, SLIPWAY_ENGINE_DIR (where the container engine's socket is, for load
# when DOCKER_HOST is not set).
set -euo pipefail

STATE="${SLIPWAY_SWARM_DIR:-$HOME/.cache/slipway/swarm}"
NET="${SLIPWAY_SWARM_NET:-10.220}"
REGIONS="${SLIPWAY_SWARM_REGIONS:-us-central1,us-central1,europe-west1}"
ENGINE_HOST="${DOCKER_HOST:-unix://${SLIPWAY_ENGINE_DIR:-$HOME/.cache/slipway/engine}/docker.sock}"
PREFIX=slipway-swarm-
BRNS=${PREFIX}br
BRIDGE=swbr0
HOSTIF=slswarm0
HOSTADDR="$NET.0.1"
REGISTRY="$HOSTADDR:${SLIPWAY_SWARM_REGISTRY_PORT:-5100}"
REG="$STATE/registry"
AUTH_REGISTRY="$HOSTADDR:${SLIPWAY_SWARM_AUTH_REGISTRY_PORT:-5101}"
AUTH_REG="$STATE/auth-registry"
# Overlay networks come from the upper half of the /16, a /24 each; node i's own bridges from
# $NET.<8i>.0/21 (docker0 the first /24, docker_gwbridge and others from the next four).
OVERLAY_POOL="$NET.128.0/17"
MAX_NODES=15
SMTP_CHAIN=SLIPWAY-SMTP
SMTP_PORTS=25,465,587

log() { echo "start-swarm: $*" >&2; }
node_ns() { echo "$PREFIX$1"; }
node_addr() { echo "$NET.0.$((10 + $1))"; }
node_dir() { echo "$STATE/$1"; }
node_host() { echo "unix://$(node_dir "$1")/docker.sock"; }
nexec() { local ns="$1"; shift; nsenter --net="/run/netns/$ns" "$@"; }
ndocker() { local i="$1"; shift; DOCKER_HOST="$(node_host "$i")" docker "$@"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
region() {
  local list
  IFS=, read -r -a list <<<"$REGIONS"
  echo "${list[$((($1 - 1) % ${#list[@]}))]}"
}

require_root() {
  if [ "$(id -u)" != "0" ]; then
    log "needs root (network namespaces, bridges and dockerd)"
    exit 1
  fi
}

install_missing() {
  local need=()
  [ -x /usr/sbin/dockerd ] || need+=(docker.io)
  command -v ip >/dev/null || need+=(iproute2)
  command -v iptables >/dev/null || need+=(iptables)
  command -v docker-registry >/dev/null || need+=(docker-registry)
  command -v htpasswd >/dev/null || need+=(apache2-utils)
  command -v openssl >/dev/null || need+=(openssl)
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  # The package's postinst must not start the system dockerd (it would take docker0): a
  # policy-rc.d answering 101 stops it, removed afterwards unless one was there already.
  local policy=/usr/sbin/policy-rc.d added=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && added=1
  fi
  local status=0
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"; } >&2 || status=$?
  [ -n "$added" ] && rm -f "$policy"
  return "$status"
}

# The bridge namespace, its bridge, and the host's veth into it.
start_bridge() {
  [ -e "/run/netns/$BRNS" ] || ip netns add "$BRNS"
  ip -n "$BRNS" link set lo up
  ip -n "$BRNS" link show "$BRIDGE" >/dev/null 2>&1 || ip -n "$BRNS" link add "$BRIDGE" type bridge
  ip -n "$BRNS" link set "$BRIDGE" up
  if ! ip link show "$HOSTIF" >/dev/null 2>&1; then
    ip link add "$HOSTIF" type veth peer name host netns "$BRNS"
  fi
  ip -n "$BRNS" link set host master "$BRIDGE" up
  ip addr replace "$HOSTADDR/24" dev "$HOSTIF"
  ip link set "$HOSTIF" up
}

# Node i's namespace, its veth into the bridge (eth0 inside, n<i> on the bridge) and its address.
# No default route: nodes reach each other and the host, nothing beyond.
start_link() {
  local i="$1" ns
  ns="$(node_ns "$i")"
  [ -e "/run/netns/$ns" ] || ip netns add "$ns"
  ip -n "$ns" link set lo up
  if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
    ip -n "$BRNS" link del "n$i" 2>/dev/null || true
    ip -n "$BRNS" link add "n$i" type veth peer name eth0 netns "$ns"
  fi
  ip -n "$BRNS" link set "n$i" master "$BRIDGE" up
  ip -n "$ns" addr replace "$(node_addr "$i")/24" dev eth0
  ip -n "$ns" link set eth0 up
}

node_ok() { [ -S "$(node_dir "$1")/docker.sock" ] && ndocker "$1" version >/dev/null 2>&1; }

start_engine() {
  local i="$1" dir ns attempt pid config
  dir="$(node_dir "$i")"
  ns="$(node_ns "$i")"
  mkdir -p "$dir"
  # Its own config file and identity key: otherwise every engine reads /etc/docker and takes the
  # same /etc/docker/key.json, and the swarm sees one engine three times. The swarm's registry
  # registries speak plain HTTP: listed in insecure-registries, which a running engine rereads on SIGHUP.
  config="$(printf '{"deprecated-key-path": "%s/key.json", "insecure-registries": ["%s", "%s"]}' "$dir" "$REGISTRY" "$AUTH_REGISTRY")"
  if [ "$(cat "$dir/daemon.json" 2>/dev/null)" != "$config" ]; then
    echo "$config" >"$dir/daemon.json"
    if alive "$dir/dockerd.pid" && node_ok "$i"; then
      log "reloading the configuration of the engine of $ns"
      kill -HUP "$(cat "$dir/dockerd.pid")"
      for _ in $(seq 1 50); do
        ndocker "$i" info --format '{{json .RegistryConfig.IndexConfigs}}' 2>/dev/null | grep -qF "\"$AUTH_REGISTRY\"" && break
        sleep 0.2
      done
    fi
  fi
  alive "$dir/dockerd.pid" && node_ok "$i" && return 0
  # Three tries: after its node was killed, an engine's containerd now and then dies before it
  # logs anything, and dockerd gives up ("timeout waiting for containerd to start").
  for attempt in 1 2 3; do
    if ! alive "$dir/dockerd.pid"; then
      mkdir -p "$dir/data" "$dir/exec"
      rm -f "$dir/docker.sock"
      log "starting the engine of $ns (log: $dir/dockerd.log)"
      # nsenter --net, not `ip netns exec`, which remounts /sys and hides the cgroup mounts from
      # dockerd. A UTS namespace gives the node its own hostname, the swarm's name for it. The
      # node's containers go in cgroups under /<ns>: they are in network namespaces of their own, and
      # that is how `kill` and `stop` find them.
      setsid nsenter --net="/run/netns/$ns" unshare --uts sh -c "hostname $ns && exec /usr/sbin/dockerd \
        --config-file $dir/daemon.json \
        --data-root $dir/data --exec-root $dir/exec --pidfile $dir/dockerd.pid \
        -H unix://$dir/docker.sock \
        --bip $NET.$((8 * i)).1/24 --default-address-pool base=$NET.$((8 * i + 4)).0/22,size=24 \
        --cgroup-parent /$ns --iptables=true --ip-masq=true" >>"$dir/dockerd.log" 2>&1 </dev/null &
      pid=$!
    else
      pid="$(cat "$dir/dockerd.pid")"
    fi
    for _ in $(seq 1 300); do
      if node_ok "$i"; then return 0; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "the engine of $ns did not answer within 60 s (try $attempt)"
      kill_node "$i"
      sleep 1
    else
      log "the engine of $ns exited (try $attempt)"
      rm -f "$dir/dockerd.pid"
    fi
  done
  log "the engine of $ns did not start; the end of its log:"
  tail -n 30 "$dir/dockerd.log" >&2
  exit 1
}

# Containers of a node cannot connect to SMTP ports (the container engine's rule): the chain is in
# the node's own namespace, jumped to first from DOCKER-USER, which sees all their forwarded traffic.
block_smtp() {
  local ns
  ns="$(node_ns "$1")"
  nexec "$ns" iptables -N "$SMTP_CHAIN" 2>/dev/null || nexec "$ns" iptables -F "$SMTP_CHAIN"
  nexec "$ns" iptables -A "$SMTP_CHAIN" -p tcp -m multiport --dports "$SMTP_PORTS" -j REJECT --reject-with tcp-reset
  nexec "$ns" iptables -C DOCKER-USER -j "$SMTP_CHAIN" 2>/dev/null || nexec "$ns" iptables -I DOCKER-USER 1 -j "$SMTP_CHAIN"
}

# The registries every node pulls from, on the host's address on the bridge (the nodes have no other
# route out). The open one has no auth: only the swarm's bridge reaches it. The other asks for a
# login (htpasswd basic auth, a user `slipway` and a random password kept in its directory's
# `credentials`, made once), as a private registry does. Both speak plain HTTP and are listed in
# every node's insecure-registries (an engine sends a login over plain HTTP only to those).
# /v2/ answers 200 without auth and 401 with it: either way the registry is up and it is ours.
registry_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$1/v2/" || true)" = "$2" ]; }

# start_registry <directory> <address> [auth]
start_registry() {
  local dir="$1" addr="$2" auth="${3:-}" expect=200 password
  mkdir -p "$dir/data"
  if [ -n "$auth" ]; then
    expect=401
    if [ ! -f "$dir/credentials" ] || [ ! -f "$dir/htpasswd" ]; then
      password="$(openssl rand -hex 16)"
      printf 'SLIPWAY_SWARM_TEST_REGISTRY_USER=slipway\nSLIPWAY_SWARM_TEST_REGISTRY_PASSWORD=%s\n' "$password" >"$dir/credentials"
      chmod 600 "$dir/credentials"
      # The registry reads only bcrypt entries.
      htpasswd -Bbc "$dir/htpasswd" slipway "$password" 2>/dev/null
      # A running registry read the former file: started again below.
      if alive "$dir/registry.pid"; then kill "$(cat "$dir/registry.pid")" 2>/dev/null || true; fi
    fi
  fi
  if alive "$dir/registry.pid" && registry_ok "$addr" "$expect"; then return 0; fi
  if alive "$dir/registry.pid"; then kill "$(cat "$dir/registry.pid")" 2>/dev/null || true; fi
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $addr
EOF
  if [ -n "$auth" ]; then
    cat >>"$dir/config.yml" <<EOF
  secret: $(openssl rand -hex 16)
auth:
  htpasswd:
    realm: slipway-swarm-registry
    path: $dir/htpasswd
EOF
  fi
  # Layers no manifest names any more (deleting an application deletes its manifests) keep their
  # space until collected, which is safe only while the registry takes no push: here, before it starts.
  # (It fails on a registry that never held a repository.)
  if [ -d "$dir/data/docker/registry/v2/repositories" ]; then
    docker-registry garbage-collect --delete-untagged "$dir/config.yml" >>"$dir/registry.log" 2>&1 ||
      log "garbage collection in $dir/data failed (its log: $dir/registry.log); starting the registry all the same"
  fi
  log "starting docker-registry on $addr${auth:+ (htpasswd auth)} (log: $dir/registry.log)"
  setsid docker-registry serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 </dev/null &
  echo $! >"$dir/registry.pid"
  for _ in $(seq 1 100); do
    if registry_ok "$addr" "$expect"; then return 0; fi
    if ! alive "$dir/registry.pid"; then break; fi
    sleep 0.1
  done
  log "docker-registry did not start on $addr (port taken? SLIPWAY_SWARM_REGISTRY_PORT or SLIPWAY_SWARM_AUTH_REGISTRY_PORT picks another); its log:"
  tail -n 20 "$dir/registry.log" >&2
  exit 1
}

swarm_state() { ndocker "$1" info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo unknown; }

form_swarm() {
  local n="$1" managers=1 i state
  [ "$n" -ge 3 ] && managers=3
  if [ "$(swarm_state 1)" != active ]; then
    log "swarm init on $(node_ns 1)"
    # A 1 s heartbeat: a lost node is noticed (and its tasks moved) in seconds, not the default 5 s x 3.
    ndocker 1 swarm init --advertise-addr "$(node_addr 1)" --listen-addr "$(node_addr 1):2377" \
      --dispatcher-heartbeat 1s --default-addr-pool "$OVERLAY_POOL" --default-addr-pool-mask-length 24 >/dev/null
  fi
  local manager_token="" worker_token
  # Managers restarted together elect a leader first; join-token fails until then.
  for _ in $(seq 1 300); do
    manager_token="$(ndocker 1 swarm join-token -q manager 2>/dev/null)" && break
    sleep 0.2
  done
  if [ -z "$manager_token" ]; then
    log "the swarm on $(node_ns 1) has no leader after 60 s:"
    ndocker 1 info --format '{{json .Swarm}}' >&2 || true
    exit 1
  fi
  worker_token="$(ndocker 1 swarm join-token -q worker)"
  for i in $(seq 2 "$n"); do
    state="$(swarm_state "$i")"
    [ "$state" = active ] && continue
    [ "$state" = pending ] && continue
    local token="$worker_token"
    [ "$i" -le "$managers" ] && token="$manager_token"
    log "$(node_ns "$i") joins as $([ "$token" = "$manager_token" ] && echo manager || echo worker)"
    ndocker "$i" swarm join --token "$token" --advertise-addr "$(node_addr "$i")" \
      --listen-addr "$(node_addr "$i"):2377" "$(node_addr 1):2377" >/dev/null
  done
  # Ready nodes, by hostname; each labelled with its region.
  for _ in $(seq 1 300); do
    [ "$(ndocker 1 node ls --format '{{.Hostname}} {{.Status}}' | grep -c ' Ready$')" -ge "$n" ] && break
    sleep 0.2
  done
  for i in $(seq 1 "$n"); do
    local id
    id="$(ndocker 1 node ls --filter "name=$(node_ns "$i")" --format '{{.ID}} {{.Hostname}} {{.Status}}' | awk -v h="$(node_ns "$i")" '$2 == h && $3 == "Ready" { print $1 }' | head -n1)"
    if [ -z "$id" ]; then
      log "$(node_ns "$i") is not Ready in the swarm:"
      ndocker 1 node ls >&2
      exit 1
    fi
    ndocker 1 node update --label-add "slipway.region=$(region "$i")" "$id" >/dev/null
  done
}

load_images() {
  local n="$1" image id tar i pids
  shift
  for image in "$@"; do
    id="$(DOCKER_HOST="$ENGINE_HOST" docker image inspect -f '{{.Id}}' "$image")"
    tar=""
    pids=()
    for i in $(seq 1 "$n"); do
      # save|load keeps the image id: a node that has it already is skipped.
      [ "$(ndocker "$i" image inspect -f '{{.Id}}' "$image" 2>/dev/null)" = "$id" ] && continue
      if [ -z "$tar" ]; then
        tar="$STATE/load.tar"
        DOCKER_HOST="$ENGINE_HOST" docker save -o "$tar" "$image"
      fi
      log "loading $image into $(node_ns "$i")"
      ndocker "$i" load -q -i "$tar" >/dev/null &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    if [ -n "$tar" ]; then rm -f "$tar"; fi
  done
}

node_count() {
  local n=0
  while [ -e "/run/netns/$(node_ns $((n + 1)))" ]; do n=$((n + 1)); done
  echo "$n"
}

print_exports() {
  local n="$1" nodes=""
  for i in $(seq 1 "$n"); do
    nodes="$nodes${nodes:+ }$(node_ns "$i")=$(node_addr "$i")=$(node_host "$i")"
  done
  echo "export SLIPWAY_SWARM_DOCKER_HOST=$(node_host 1)"
  echo "export SLIPWAY_SWARM_NODES='$nodes'"
  echo "export SLIPWAY_SWARM_TEST_REGISTRY=$REGISTRY"
  echo "export SLIPWAY_SWARM_TEST_AUTH_REGISTRY=$AUTH_REGISTRY"
  sed 's/^/export /' "$AUTH_REG/credentials"
}

# Every process of node i at once, as if the machine were lost: the engine, its containerd, shims
# and proxies (in the node's namespace) and its containers (in its cgroups).
kill_node() {
  local ns pids
  ns="$(node_ns "$1")"
  [ -e "/run/netns/$ns" ] || return 0
  pids="$(ip netns pids "$ns"; cat /sys/fs/cgroup/pids/"$ns"/*/cgroup.procs 2>/dev/null || true)"
  # shellcheck disable=SC2086 # one pid a word
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  rm -f "$(node_dir "$1")/dockerd.pid"
}

# The node's cgroups, once the processes in them are gone (a killed process leaves its cgroup a
# moment later).
remove_cgroups() {
  local ns
  ns="$(node_ns "$1")"
  for _ in $(seq 1 25); do
    compgen -G "/sys/fs/cgroup/*/$ns" >/dev/null || return 0
    find /sys/fs/cgroup/*/"$ns" -depth -type d -exec rmdir {} + 2>/dev/null || sleep 0.2
  done
}

stop_all() {
  local ns i
  for ns in /run/netns/"$PREFIX"*; do
    [ -e "$ns" ] || continue
    ns="${ns##*/}"
    [ "$ns" = "$BRNS" ] && continue
    i="${ns#"$PREFIX"}"
    # Killed, not stopped: a graceful stop of a swarm manager takes up to 30 s, and nothing of
    # its state is kept.
    kill_node "$i"
    remove_cgroups "$i"
    ip netns del "$ns"
  done
  for r in "$REG" "$AUTH_REG"; do
    if alive "$r/registry.pid"; then kill "$(cat "$r/registry.pid")" 2>/dev/null || true; fi
  done
  [ -e "/run/netns/$BRNS" ] && ip netns del "$BRNS"
  ip link del "$HOSTIF" 2>/dev/null || true
  # libnetwork writes resolv.conf/hosts copies under /var/lib/docker whatever the data root: its
  # lb_<network id> directories are the swarm's overlays' (another engine on this machine, such as
  # the container engine, is no swarm node); the rest goes when no other dockerd runs.
  rm -rf /var/lib/docker/network/files/lb_*
  if ! pgrep -x dockerd >/dev/null; then rm -rf /var/lib/docker/network/files; fi
  rmdir /var/lib/docker/network/files /var/lib/docker/network /var/lib/docker 2>/dev/null || true
  # What the engines mounted under their roots (overlay network sandboxes, layers) keeps the state
  # directory busy; an engine's helper still finishing in a sandbox may mount one more a moment later.
  for _ in $(seq 1 10); do
    awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$STATE" 2>/dev/null && break
    sleep 0.5
  done
  if [ -e "$STATE" ]; then
    log "could not remove $STATE"
    exit 1
  fi
  log "stopped"
}

cmd="${1:-start}"
case "$cmd" in
  stop)
    require_root
    stop_all
    exit 0
    ;;
  load)
    shift
    n="$(node_count)"
    if [ "$n" -eq 0 ]; then
      log "no swarm is running: scripts/start-swarm.sh first"
      exit 1
    fi
    load_images "$n" "$@"
    exit 0
    ;;
  kill)
    require_root
    kill_node "${2:?which node (1..)}"
    exit 0
    ;;
  start) n="${2:-3}" ;;
  [0-9]*) n="$cmd" ;;
  *)
    echo "usage: $0 [start] [nodes=3] | load <image>... | kill <node> | stop" >&2
    exit 2
    ;;
esac
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "$MAX_NODES" ]; then
  log "nodes must be 1 to $MAX_NODES (got $n)"
  exit 2
fi

require_root
mkdir -p "$STATE"
install_missing
start_bridge
start_registry "$REG" "$REGISTRY"
start_registry "$AUTH_REG" "$AUTH_REGISTRY" auth
for i in $(seq 1 "$n"); do start_link "$i"; done
# When no engine is running (a new machine, or one whose engines all went down), the swarm is formed
# afresh: raft state left from an earlier run may name managers that never come back, and the
# swarm would then have no quorum.
running=0
for i in $(seq 1 "$n"); do alive "$(node_dir "$i")/dockerd.pid" && running=$((running + 1)); done
if [ "$running" -eq 0 ]; then
  for i in $(seq 1 "$n"); do rm -rf "$(node_dir "$i")/data/swarm"; done
fi
# The engines start together (a few seconds each).
pids=()
for i in $(seq 1 "$n"); do
  start_engine "$i" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for i in $(seq 1 "$n"); do block_smtp "$i"; done
form_swarm "$n"
print_exports "$n"
