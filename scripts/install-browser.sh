#!/usr/bin/env bash
# Installs the browser the dashboard's end-to-end tests drive (test/dashboard): Debian's chromium
# package. Playwright's own browser download is not used (playwright-core takes executablePath).
set -euo pipefail
CHROMIUM="${SLIPWAY_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core
