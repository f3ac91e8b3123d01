#!/usr/bin/env bash
# Builds the Slipway container image (Dockerfile) from this checkout: packs it (`npm pack` runs
# the build), installs the tarball with production dependencies only into a temporary build
# context, and builds the image there. Usage: scripts/build-image.sh [tag] (default slipway:latest).
# Needs the npm registry (the install), a container engine at DOCKER_HOST, and Debian bookworm
# with Node 20 on this host (native modules are built here for the image's node:20-bookworm-slim).
set -euo pipefail
TAG="${1:-slipway:latest}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CTX="$(mktemp -d)"
trap 'rm -rf "$CTX"' EXIT
TARBALL="$(cd "$ROOT" && npm pack --pack-destination "$CTX" --silent | tail -n 1)"
(cd "$CTX" && npm install --omit=dev --no-audit --no-fund --silent "./$TARBALL" >&2)
cp "$ROOT/Dockerfile" "$ROOT/.dockerignore" "$CTX/"
docker build -t "$TAG" "$CTX" >&2
echo "$TAG"
