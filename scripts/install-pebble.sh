#!/usr/bin/env bash
# Builds Pebble, Let's Encrypt's test ACME server, and its challenge test server (DNS answers for
# the names it validates) from the Go module proxy into a cache directory, for test/edge-nginx's
# ACME suite; prints the directory of the binaries. Skipped when both are there already. The
# module's test certificates (the directory's TLS, its CA) stay in the Go module cache beside it.
set -euo pipefail
CACHE="${SLIPWAY_PEBBLE_CACHE:-$HOME/.cache/slipway/pebble}"
BIN="$CACHE/bin"
if [ -x "$BIN/pebble" ] && [ -x "$BIN/pebble-challtestsrv" ] && ls -d "$CACHE"/pkg/mod/github.com/letsencrypt/pebble/v2@*/test/certs >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi
GO="$(command -v go || echo /usr/local/go/bin/go)"
if [ ! -x "$GO" ]; then
  echo "install-pebble: Go is needed to build Pebble (https://go.dev/dl/)" >&2
  exit 1
fi
mkdir -p "$BIN"
for cmd in pebble pebble-challtestsrv; do
  GOPATH="$CACHE" GOBIN="$BIN" GOFLAGS=-modcacherw "$GO" install "github.com/letsencrypt/pebble/v2/cmd/$cmd@latest" >&2
done
echo "$BIN"
