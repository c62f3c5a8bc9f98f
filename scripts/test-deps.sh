#!/usr/bin/env bash
# Installs the Debian packages that tests need when they are missing:
# chromium (the HTML report is rendered headless) and prometheus (the prom-api
# source is tested against a real server). Runs as root on CI and dev machines.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/prometheus ] || need+=(prometheus)
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
echo "test-deps: installing ${need[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The Debian prometheus package may start a system service; tests start their own.
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl stop prometheus 2>/dev/null || true; fi
pkill -x prometheus 2>/dev/null || true
