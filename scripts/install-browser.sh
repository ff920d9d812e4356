#!/usr/bin/env bash
# Debian's Chromium for the HTML report's real-browser tests (never a downloaded browser build).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null; then
  echo "chromium is not installed and cannot be installed here; browser tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq chromium >/dev/null
