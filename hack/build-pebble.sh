#!/usr/bin/env bash
# Builds Pebble (Let's Encrypt's test ACME server, for HTTPS) and pebble-challtestsrv (its test DNS
# server, the `dns` part of the local platform: custom domains are verified against it,
# docs/decisions/0027-app-domains.md) from source through the Go module proxy, at one pinned
# release, into the cache next to the Kubernetes binaries. A second run with both binaries present
# does nothing.
set -euo pipefail

PEBBLE_VERSION=${PEBBLE_VERSION:-v2.10.3}
CACHE=${SVC_CACHE:-$HOME/.cache/svc-platform}
OUT="$CACHE/pebble-$PEBBLE_VERSION"
if [ -x "$OUT/bin/pebble" ] && [ -x "$OUT/bin/pebble-challtestsrv" ]; then
  echo "pebble: $PEBBLE_VERSION cached in $OUT/bin"
  exit 0
fi

command -v go >/dev/null || { echo "pebble: go is required on PATH" >&2; exit 1; }
export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS="-mod=mod" GOTOOLCHAIN=local CGO_ENABLED=0
work="$CACHE/build-pebble-$PEBBLE_VERSION"
mkdir -p "$work" "$OUT/bin"
cd "$work"
# The release's own module (its go.mod pins every dependency), copied out of the read-only module
# cache, so `go build` of its commands resolves exactly the versions the release pins.
dir=$(go mod download -json "github.com/letsencrypt/pebble/v2@$PEBBLE_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[ -f "$dir/go.mod" ] || { echo "pebble: could not download github.com/letsencrypt/pebble/v2@$PEBBLE_VERSION" >&2; exit 1; }
rm -rf src && cp -r "$dir" src && chmod -R u+w src
cd src
echo "pebble: compiling $PEBBLE_VERSION, pebble and pebble-challtestsrv (minutes with a cold Go cache)"
start=$(date +%s)
for cmd in pebble pebble-challtestsrv; do
  # main.version is what `pebble -version` prints (pebble-challtestsrv has no version).
  go build -trimpath -ldflags "-s -w -X main.version=$PEBBLE_VERSION" -o "$OUT/bin/$cmd.tmp" "./cmd/$cmd"
  mv "$OUT/bin/$cmd.tmp" "$OUT/bin/$cmd"
done
cd .. && rm -rf src
echo "pebble: built in $(( $(date +%s) - start ))s into $OUT/bin"
"$OUT/bin/pebble" -version
