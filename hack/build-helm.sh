#!/usr/bin/env bash
# Builds helm (the chart tests install charts/svc-platform with it) from source through the Go
# module proxy, at one pinned release, into the cache next to the Kubernetes binaries. A second run
# with the binary present does nothing.
source "$(dirname "$0")/lib.sh"

HELM_VERSION=${HELM_VERSION:-v3.22.0}
OUT="$CACHE/helm-$HELM_VERSION"
if [ -x "$OUT/bin/helm" ]; then
  echo "helm: $HELM_VERSION cached in $OUT/bin"
  exit 0
fi

build() {
  go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" -o "$OUT/bin/helm.tmp" ./cmd/helm
  mv "$OUT/bin/helm.tmp" "$OUT/bin/helm"
}
go_build helm "helm.sh/helm/v3@$HELM_VERSION" "$OUT/bin" "$HELM_VERSION (a few minutes on 2 cores with a cold cache)" build
"$OUT/bin/helm" version --short
