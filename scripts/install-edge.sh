#!/usr/bin/env bash
# Installs the edge's data plane (src/shared/edge/nginx/): Debian's nginx package and its brotli_static
# module (serves a static release's brotli copies; without it nginx answers gzip). Slipway starts
# its own nginx with a generated configuration (`nginx -c`), so the package's service is neither
# started nor left enabled: on a server it would take port 80 before Slipway's instance could.
set -euo pipefail
if { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } && [ -e /usr/lib/nginx/modules/ngx_http_brotli_static_module.so ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
# A policy-rc.d answering 101 keeps the package's postinst from starting the service; one already
# there (containers have their own) is left alone.
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
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends nginx libnginx-mod-http-brotli-static
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  $SUDO systemctl disable --now nginx >/dev/null 2>&1 || true
fi
