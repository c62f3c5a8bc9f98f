#!/usr/bin/env bash
# The container image, built without a Docker engine: a static linux binary on an
# empty base, run as a non-root user, written as an OCI archive to
# dist/cbprobe-image-<arch>.tar (tools/ociimage, on go-containerregistry).
# Load it with `docker load -i`, `podman load -i` or `skopeo copy oci-archive:...`.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p dist
commit=$(git rev-parse HEAD 2>/dev/null || echo "")
for arch in amd64 arm64; do
	bin="dist/image-$arch/cbprobe"
	mkdir -p "dist/image-$arch"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=true -ldflags "-s -w" -o "$bin" ./cmd/cbprobe
	(cd tools/ociimage && go run . -binary "../../$bin" -arch "$arch" \
		-out "../../dist/cbprobe-image-$arch.tar" -tag "cbprobe:dev" -revision "$commit")
	echo "image: dist/cbprobe-image-$arch.tar"
done
# The image's own check: the archive reads back as one OCI image run by a non-root user.
(cd tools/ociimage && go test -count=1 .)
# The binary the amd64 image carries runs and names its commit.
dist/image-amd64/cbprobe version
