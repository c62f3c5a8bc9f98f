#!/usr/bin/env bash
# Installs what tests need when it is missing: Debian's chromium (the HTML report
# is rendered headless), prometheus (the prom-api source is tested against a real
# server) and shellcheck (the CI examples are linted), and actionlint from the Go
# module proxy. Runs as root on CI and dev machines.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/prometheus ] || need+=(prometheus)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
ACTIONLINT_VERSION=v1.7.12
if ! "$(go env GOPATH)/bin/actionlint" -version 2>/dev/null | grep -q "${ACTIONLINT_VERSION#v}"; then
	echo "test-deps: installing actionlint $ACTIONLINT_VERSION"
	go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi
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
