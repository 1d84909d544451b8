#!/usr/bin/env bash
# Builds helm (the chart tests install charts/svc-platform with it) from source through the Go
# module proxy, at one pinned release, into the cache next to the Kubernetes binaries. A second run
# with the binary present does nothing.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE=${SVC_CACHE:-$HOME/.cache/svc-platform}
OUT="$CACHE/helm-$HELM_VERSION"
if [ -x "$OUT/bin/helm" ]; then
  echo "helm: $HELM_VERSION cached in $OUT/bin"
  exit 0
fi

command -v go >/dev/null || { echo "helm: go is required on PATH" >&2; exit 1; }
export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS="-mod=mod" GOTOOLCHAIN=local CGO_ENABLED=0
work="$CACHE/build-helm-$HELM_VERSION"
mkdir -p "$work" "$OUT/bin"
cd "$work"
# A scratch module requiring helm: its own go.mod (replace directives and all) comes with the
# module zip, so `go build` of its command resolves exactly the versions the release pins.
dir=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[ -f "$dir/go.mod" ] || { echo "helm: could not download helm.sh/helm/v3@$HELM_VERSION" >&2; exit 1; }
rm -rf src && cp -r "$dir" src && chmod -R u+w src
cd src
echo "helm: compiling $HELM_VERSION (a few minutes on 2 cores with a cold cache)"
start=$(date +%s)
go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" -o "$OUT/bin/helm.tmp" ./cmd/helm
mv "$OUT/bin/helm.tmp" "$OUT/bin/helm"
cd .. && rm -rf src
echo "helm: built in $(( $(date +%s) - start ))s into $OUT/bin"
"$OUT/bin/helm" version --short
