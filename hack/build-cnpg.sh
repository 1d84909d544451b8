#!/usr/bin/env bash
# Builds CloudNativePG's operator (`cmd/manager`: the controller, and the instance manager it copies
# into every PostgreSQL pod) from source through the Go module proxy, at one pinned release, into
# the cache next to the Kubernetes binaries: a static binary hack/images.sh puts in the svc/cnpg
# image (docs/decisions/0039-cloudnative-pg.md). A second run with the binary present does nothing.
source "$(dirname "$0")/lib.sh"

CNPG_VERSION=${CNPG_VERSION:-v1.30.0}
OUT="$CACHE/cnpg-$CNPG_VERSION"
if [ -x "$OUT/bin/manager" ]; then
  echo "cnpg: $CNPG_VERSION cached in $OUT/bin"
  exit 0
fi

build() {
  # The version the operator reports (and stamps on the pods it makes) is its module's.
  go build -trimpath -ldflags "-s -w -X github.com/cloudnative-pg/cloudnative-pg/pkg/versions.buildVersion=${CNPG_VERSION#v}" -o "$OUT/bin/manager.tmp" ./cmd/manager
  mv "$OUT/bin/manager.tmp" "$OUT/bin/manager"
}
go_build cnpg "github.com/cloudnative-pg/cloudnative-pg@$CNPG_VERSION" "$OUT/bin" "$CNPG_VERSION (about 3 minutes on 2 cores with a cold cache)" build
