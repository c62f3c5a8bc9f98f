#!/usr/bin/env bash
# Installs what `make bench` needs beyond Go: vegeta's CLI, the load generator
# the fault benchmarks run in a separate process (built from the Go module proxy
# at the version go.mod pins for the library). Idempotent.
set -euo pipefail
version=v12.13.0
bin="$(go env GOPATH)/bin/vegeta"
if command -v vegeta >/dev/null 2>&1 || [ -x "$bin" ]; then
	exit 0
fi
echo "bench-deps: installing vegeta ${version} to ${bin}"
# Outside the module so cbprobe's go.mod and go.sum stay untouched.
cd "$(mktemp -d)"
GOFLAGS= go install "github.com/tsenart/vegeta/v12@${version}"
