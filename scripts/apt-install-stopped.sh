#!/usr/bin/env bash
# Installs Debian packages whose services Slipway or its tests start themselves, without letting
# the packages start (or leave enabled) their own: `apt-install-stopped.sh SERVICE... -- PACKAGE...`.
# A policy-rc.d answering 101 keeps the packages' postinst from starting the services; one already
# there (containers have their own) is left alone.
set -euo pipefail
services=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do services+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: $0 SERVICE... -- PACKAGE..." >&2; exit 2; }
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
POLICY=/usr/sbin/policy-rc.d
OURS=""
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 755 "$POLICY"
  OURS=1
fi
cleanup() { if [ -n "$OURS" ]; then $SUDO rm -f "$POLICY"; fi; }
trap cleanup EXIT
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "$@"
if [ ${#services[@]} -gt 0 ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  $SUDO systemctl disable --now "${services[@]}" >/dev/null 2>&1 || true
fi
