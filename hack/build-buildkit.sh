#!/usr/bin/env bash
# Builds BuildKit's daemon and client (`cmd/buildkitd`, `cmd/buildctl`) from source through the Go
# module proxy, at one pinned release, into the cache next to the Kubernetes binaries: static
# binaries hack/images.sh puts in the svc/buildkit image, the builder of full Dockerfiles in a
# user-namespaced pod (docs/decisions/0040-buildkit.md). A second run with both present does nothing.
source "$(dirname "$0")/lib.sh"

BUILDKIT_VERSION=${BUILDKIT_VERSION:-v0.34.2}
OUT="$CACHE/buildkit-$BUILDKIT_VERSION"
if [ -x "$OUT/bin/buildkitd" ] && [ -x "$OUT/bin/buildctl" ]; then
  echo "buildkit: $BUILDKIT_VERSION cached in $OUT/bin"
  exit 0
fi

build() {
  local cmd
  for cmd in buildkitd buildctl; do
    # The version both report (`--version`) is the module's, as the release's Makefile stamps it.
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION" \
      -o "$OUT/bin/$cmd.tmp" "./cmd/$cmd"
    mv "$OUT/bin/$cmd.tmp" "$OUT/bin/$cmd"
  done
}
go_build buildkit "github.com/moby/buildkit@$BUILDKIT_VERSION" "$OUT/bin" "$BUILDKIT_VERSION (buildkitd and buildctl; a few minutes on 2 cores with a cold cache)" build
"$OUT/bin/buildkitd" --version
