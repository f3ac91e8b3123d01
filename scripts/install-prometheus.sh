#!/usr/bin/env bash
# Installs Debian's prometheus package for test/observability/prometheus.test.ts, which starts its
# own prometheus with a generated configuration scraping a running Slipway. The package's service is
# neither started nor left enabled (it would take port 9090 and scrape itself).
set -euo pipefail
if command -v prometheus >/dev/null || [ -x /usr/bin/prometheus ]; then
  exit 0
fi
"$(dirname "$0")/apt-install-stopped.sh" prometheus -- prometheus
