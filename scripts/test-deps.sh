#!/usr/bin/env bash
# Installs what tests need when it is missing: Debian's chromium (the HTML report
# is rendered headless), prometheus (the prom-api source is tested against a real
# server), nginx (the load balancer in front of a fleet of replicas) and shellcheck
# (the CI examples are linted), and actionlint from the Go module proxy. Runs as
# root on CI and dev machines.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/prometheus ] || need+=(prometheus)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
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
# Packages must not start their system services (nginx would take port 80): tests start their own.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
	$sudo chmod +x "$policy"
	trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The Debian prometheus package may start a system service; tests start their own.
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl stop prometheus 2>/dev/null || true; fi
pkill -x prometheus 2>/dev/null || true
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl stop nginx 2>/dev/null || true; fi
pkill -x nginx 2>/dev/null || true
