#!/usr/bin/env bash
# Builds versitygw (Versity's S3 gateway over a directory: the local platform's object store of
# artifacts, docs/decisions/0038-object-store.md) from source through the Go module proxy, at one
# pinned release, into the cache next to the Kubernetes binaries: a static binary hack/dev.sh runs
# on loopback and hack/images.sh puts in the svc/versitygw image. A second run with the binary
# present does nothing.
source "$(dirname "$0")/lib.sh"

VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
OUT="$CACHE/versitygw-$VERSITYGW_VERSION"
if [ -x "$OUT/bin/versitygw" ]; then
  echo "versitygw: $VERSITYGW_VERSION cached in $OUT/bin"
  exit 0
fi

build() {
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=$VERSITYGW_VERSION" -o "$OUT/bin/versitygw.tmp" ./cmd/versitygw
  mv "$OUT/bin/versitygw.tmp" "$OUT/bin/versitygw"
}
go_build versitygw "github.com/versity/versitygw@$VERSITYGW_VERSION" "$OUT/bin" "$VERSITYGW_VERSION (about a minute on 2 cores with a cold cache)" build
"$OUT/bin/versitygw" --version | head -1
