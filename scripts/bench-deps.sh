#!/usr/bin/env bash
# Installs what `make bench` and `make bench-report` need beyond Go: vegeta's CLI
# (the fault and pgsim fixed-rate benchmarks run it in a separate process; built
# from the Go module proxy at the version go.mod pins for the library) and wrk
# (Debian's package; the closed-loop throughput load generator of the pgsim
# benchmarks). Idempotent; runs as root on CI and dev machines, sudo otherwise.
set -euo pipefail
if ! command -v wrk >/dev/null 2>&1 && ! [ -x /usr/bin/wrk ]; then
	echo "bench-deps: installing wrk (Debian package)"
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi
version=v12.13.0
bin="$(go env GOPATH)/bin/vegeta"
if command -v vegeta >/dev/null 2>&1 || [ -x "$bin" ]; then
	exit 0
fi
echo "bench-deps: installing vegeta ${version} to ${bin}"
# Outside the module so cbprobe's go.mod and go.sum stay untouched.
cd "$(mktemp -d)"
GOFLAGS='' go install "github.com/tsenart/vegeta/v12@${version}"
