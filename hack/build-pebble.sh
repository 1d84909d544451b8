#!/usr/bin/env bash
# Builds Pebble (Let's Encrypt's test ACME server, the `acme` part of the local platform: custom
# domains' certificates are issued by it, docs/decisions/0028-https.md) and pebble-challtestsrv (its
# test DNS server, the `dns` part: custom domains are verified against it,
# docs/decisions/0027-app-domains.md) from source through the Go module proxy, at one pinned
# release, into the cache next to the Kubernetes binaries, with the release's test certificates
# beside them (certs/): Pebble's own for its HTTPS listeners (localhost/cert.pem, key.pem), and the
# CA that signed it (pebble.minica.pem), which its clients trust. A second run with all of them
# present does nothing; a cache without the certificates gets them without building again.
source "$(dirname "$0")/lib.sh"

PEBBLE_VERSION=${PEBBLE_VERSION:-v2.10.3}
OUT="$CACHE/pebble-$PEBBLE_VERSION"
MODULE="github.com/letsencrypt/pebble/v2@$PEBBLE_VERSION"
CERTS=(pebble.minica.pem localhost/cert.pem localhost/key.pem)

have_certs() { local c; for c in "${CERTS[@]}"; do [ -s "$OUT/certs/$c" ] || return 1; done; }

# From the module's test/certs (test certificates, published with Pebble: never trust them anywhere
# else), into a fresh directory moved into place whole.
copy_certs() {
  have_certs && return 0
  [ -n "${GO_MODULE_DIR:-}" ] || go_module pebble "$MODULE" "$CACHE/build-pebble-$PEBBLE_VERSION"
  local c
  rm -rf "$OUT/certs.tmp" && mkdir -p "$OUT/certs.tmp/localhost"
  for c in "${CERTS[@]}"; do cp "$GO_MODULE_DIR/test/certs/$c" "$OUT/certs.tmp/$c"; done
  chmod -R u+w "$OUT/certs.tmp"
  rm -rf "$OUT/certs" && mv "$OUT/certs.tmp" "$OUT/certs"
  echo "pebble: certificates copied into $OUT/certs"
}

if [ -x "$OUT/bin/pebble" ] && [ -x "$OUT/bin/pebble-challtestsrv" ]; then
  copy_certs
  echo "pebble: $PEBBLE_VERSION cached in $OUT/bin"
  exit 0
fi

build() {
  local cmd
  for cmd in pebble pebble-challtestsrv; do
    # main.version is what `pebble -version` prints (pebble-challtestsrv has no version).
    go build -trimpath -ldflags "-s -w -X main.version=$PEBBLE_VERSION" -o "$OUT/bin/$cmd.tmp" "./cmd/$cmd"
    mv "$OUT/bin/$cmd.tmp" "$OUT/bin/$cmd"
  done
}
go_build pebble "$MODULE" "$OUT/bin" "$PEBBLE_VERSION, pebble and pebble-challtestsrv (minutes with a cold Go cache)" build
copy_certs
"$OUT/bin/pebble" -version
