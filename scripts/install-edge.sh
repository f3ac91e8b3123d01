#!/usr/bin/env bash
# Installs the edge's data plane (src/shared/edge/nginx/): Debian's nginx package and its brotli_static
# module (serves a static release's brotli copies; without it nginx answers gzip). Slipway starts
# its own nginx with a generated configuration (`nginx -c`), so the package's service is neither
# started nor left enabled: on a server it would take port 80 before Slipway's instance could.
set -euo pipefail
if { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } && [ -e /usr/lib/nginx/modules/ngx_http_brotli_static_module.so ]; then
  exit 0
fi
"$(dirname "$0")/apt-install-stopped.sh" nginx -- nginx libnginx-mod-http-brotli-static
