#!/usr/bin/env bash
# Builds, into the engine at DOCKER_HOST (scripts/start-container-engine.sh), the base images the
# container runtime's auto-detection defaults to, under their public names, without a public
# registry: debian:bookworm-slim is a debootstrap (minbase) tree imported as an image; the others
# are built FROM it with Debian's packages, and the host's Node 20 and Go toolchain where bookworm's
# are older. They keep the official images' ENV/WORKDIR/CMD conventions so a Dockerfile written for
# those builds unchanged. An image already in the engine is kept unless --force is given.
#
# Settings: SLIPWAY_ENGINE_DIR (where the root filesystem tarball is cached),
# SLIPWAY_DEBIAN_MIRROR (the apt mirror for debootstrap and the images' sources).
set -euo pipefail

STATE="${SLIPWAY_ENGINE_DIR:-$HOME/.cache/slipway/engine}"
MIRROR="${SLIPWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ROOTFS_TAR="$STATE/bookworm-minbase.tar"
FORCE=""
[ "${1:-}" = "--force" ] && FORCE=1
# The classic builder: the engine is Debian's dockerd 20.10 and the docker CLI may lack buildx.
export DOCKER_BUILDKIT=0

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
SECONDS=0
log() { echo "build-base-images: [${SECONDS}s] $*" >&2; }

if [ -z "${DOCKER_HOST:-}" ]; then
  log 'DOCKER_HOST is not set: eval "$(scripts/start-container-engine.sh)" first'
  exit 1
fi

have() { [ -z "$FORCE" ] && docker image inspect "$1" >/dev/null 2>&1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The root filesystem is cached as a tarball: debootstrap is most of a cold run. Delete the file
# to take newer Debian packages.
make_rootfs() {
  [ -f "$ROOTFS_TAR" ] && return 0
  mkdir -p "$STATE"
  local root="$WORK/rootfs"
  log "debootstrap --variant=minbase bookworm ($MIRROR)"
  $SUDO debootstrap --variant=minbase bookworm "$root" "$MIRROR" >&2
  # What the official slim image does: no docs, man pages or recommends, no apt caches.
  $SUDO tee "$root/etc/dpkg/dpkg.cfg.d/docker" >/dev/null <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  $SUDO tee "$root/etc/apt/apt.conf.d/docker" >/dev/null <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
EOF
  $SUDO tee "$root/etc/apt/sources.list" >/dev/null <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
EOF
  $SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/info
  $SUDO tar --numeric-owner -C "$root" -cf "$ROOTFS_TAR.tmp" .
  mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
  $SUDO rm -rf "$root"
}

# build <tag> <dir-with-Dockerfile> [tar args adding files to the context...]: the context is a tar
# stream, so host trees (Node, Go) go in without being copied to disk first.
build() {
  local tag="$1" dir="$2"
  shift 2
  log "building $tag"
  tar -c -C "$dir" . "$@" | docker build -q -t "$tag" - >&2
}

if have debian:bookworm-slim; then
  log "debian:bookworm-slim is there"
else
  make_rootfs
  log "importing debian:bookworm-slim"
  docker import --change 'CMD ["bash"]' "$ROOTFS_TAR" debian:bookworm-slim >/dev/null
fi

# node:20-bookworm-slim: bookworm's nodejs is 18, so the host's Node 20 (binary, npm, corepack)
# goes where the official image has it, /usr/local.
if have node:20-bookworm-slim; then
  log "node:20-bookworm-slim is there"
else
  NODE_BIN="$(readlink -f "$(command -v node)")"
  NODE_PREFIX="$(dirname "$(dirname "$NODE_BIN")")"
  NODE_MODULES="$NODE_PREFIX/lib/node_modules"
  if [ "$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')" != 20 ]; then
    log "the host's node ($NODE_BIN) is not Node 20"
    exit 1
  fi
  mkdir -p "$WORK/node"
  cat >"$WORK/node/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
ENV NODE_VERSION $("$NODE_BIN" -p process.versions.node)
COPY bin/node /usr/local/bin/node
COPY node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && if [ -d /usr/local/lib/node_modules/corepack ]; then ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack; fi \\
 && node --version && npm --version
CMD ["node"]
EOF
  build node:20-bookworm-slim "$WORK/node" \
    --transform 's,^node$,bin/node,' -C "$(dirname "$NODE_BIN")" node \
    -C "$NODE_PREFIX/lib" $(cd "$NODE_PREFIX/lib" && ls -d node_modules/npm node_modules/corepack 2>/dev/null)
fi

# python:3.11-slim-bookworm: bookworm's python3 is 3.11. `python`/`pip` as in the official image,
# and pip installs into the system like there (no PEP 668 marker).
if have python:3.11-slim-bookworm; then
  log "python:3.11-slim-bookworm is there"
else
  mkdir -p "$WORK/python"
  cat >"$WORK/python/Dockerfile" <<'EOF'
FROM debian:bookworm-slim
ENV PATH /usr/local/bin:$PATH
ENV LANG C.UTF-8
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 python3-pip python3-venv python3-setuptools python3-wheel \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && ln -s /usr/bin/pip3 /usr/local/bin/pip \
 && python --version
ENV PYTHON_VERSION 3.11
CMD ["python3"]
EOF
  build python:3.11-slim-bookworm "$WORK/python"
fi

# golang:1.22-bookworm: bookworm has Go 1.19 only, so the host's toolchain (/usr/local/go, or
# SLIPWAY_GOROOT) goes to /usr/local/go; the build tools are those of the official image's base.
if have golang:1.22-bookworm; then
  log "golang:1.22-bookworm is there"
else
  GOROOT_HOST="${SLIPWAY_GOROOT:-/usr/local/go}"
  GO_VERSION="$(sed -n '1s/^go//p' "$GOROOT_HOST/VERSION")"
  mkdir -p "$WORK/golang"
  cat >"$WORK/golang/Dockerfile" <<EOF
FROM debian:bookworm-slim
RUN apt-get update \\
 && apt-get install -y --no-install-recommends ca-certificates curl wget netbase git openssh-client procps g++ gcc libc6-dev make pkg-config \\
 && rm -rf /var/lib/apt/lists/*
ENV GOLANG_VERSION $GO_VERSION
ENV GOTOOLCHAIN local
ENV GOPATH /go
ENV PATH /go/bin:/usr/local/go/bin:\$PATH
COPY go /usr/local/go
RUN mkdir -p "\$GOPATH/src" "\$GOPATH/bin" && chmod -R 1777 "\$GOPATH" && go version
WORKDIR /go
EOF
  build golang:1.22-bookworm "$WORK/golang" -C "$(dirname "$GOROOT_HOST")" \
    --transform "s,^$(basename "$GOROOT_HOST"),go," "$(basename "$GOROOT_HOST")"
fi
log "done"
