#!/usr/bin/env bash
# Snapshot release: archives for linux, macOS and Windows (amd64, arm64) with
# checksums and SBOMs in dist/, exactly as a tagged release would build them,
# nothing published. Installs the pinned GoReleaser and cyclonedx-gomod from the
# Go module proxy when they are missing, then checks what it built: every
# archive listed in checksums.txt verifies, and the linux/amd64 binary reports
# the commit it was built from.
set -euo pipefail
cd "$(dirname "$0")/.."

GORELEASER_VERSION=v2.15.1
CYCLONEDX_VERSION=v1.10.0
GOBIN="$(go env GOPATH)/bin"
export PATH="$GOBIN:$PATH"

if ! goreleaser --version 2>/dev/null | grep -q "${GORELEASER_VERSION#v}"; then
	echo "release: installing goreleaser $GORELEASER_VERSION (go install; a few minutes the first time)"
	go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
fi
if ! cyclonedx-gomod version 2>/dev/null | grep -q "${CYCLONEDX_VERSION#v}"; then
	echo "release: installing cyclonedx-gomod $CYCLONEDX_VERSION"
	go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_VERSION"
fi

goreleaser check
goreleaser release --snapshot --clean

cd dist
sha256sum --check --quiet checksums.txt
for platform in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64; do
	ls cbprobe_*_"$platform".* >/dev/null 2>&1 || { echo "release: no archive for $platform" >&2; exit 1; }
	ls cbprobe_*_"$platform".cdx.json >/dev/null 2>&1 || { echo "release: no SBOM for $platform" >&2; exit 1; }
done
archive=$(ls cbprobe_*_linux_amd64.tar.gz)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$archive" -C "$tmp" cbprobe
got=$("$tmp/cbprobe" version --json | sed -n 's/.*"commit": "\([0-9a-f]*\)".*/\1/p')
want=$(git rev-parse HEAD)
if [ "$got" != "$want" ]; then
	echo "release: $archive's cbprobe reports commit '$got', want $want" >&2
	exit 1
fi
echo "release: $(ls cbprobe_*.tar.gz cbprobe_*.zip | wc -l) archives verified; $("$tmp/cbprobe" version)"
