#!/usr/bin/env bash
# Builds the nodes' container runtime from source through the Go module proxy, at pinned releases,
# into the cache next to the Kubernetes binaries: runc (with cgo and libseccomp, as its Makefile
# builds it) and containerd 2 (containerd, containerd-shim-runc-v2, ctr). Debian 12 ships runc 1.1.5
# and containerd 1.6.20: neither has the November 2025 runc fixes (CVE-2025-31133, CVE-2025-52565,
# CVE-2025-52881), nor what user namespaces for pods need (docs/decisions/0022-runtime.md).
# A second run with the binaries present does nothing.
set -euo pipefail

# containerd 2.3 is the LTS branch (to April 2028) that Kubernetes 1.36 is tested with; runc 1.5.2 is
# the latest runc, the one containerd 2.3.7 tests with (its script/setup/runc-version). The versions
# and why: docs/decisions/0022-runtime.md.
RUNC_VERSION=${RUNC_VERSION:-v1.5.2}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.3.7}
CACHE=${SVC_CACHE:-$HOME/.cache/svc-platform}
OUT="$CACHE/runtime-$RUNC_VERSION-$CONTAINERD_VERSION"
BINS=(runc containerd containerd-shim-runc-v2 ctr)

have_all() { for b in "${BINS[@]}"; do [ -x "$OUT/bin/$b" ] || return 1; done; }
if have_all; then
  echo "runtime: runc $RUNC_VERSION, containerd $CONTAINERD_VERSION cached in $OUT/bin"
  exit 0
fi

command -v go >/dev/null || { echo "runtime: go is required on PATH" >&2; exit 1; }
export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS="-mod=mod" GOTOOLCHAIN=local
mkdir -p "$OUT/bin"

# fetch MODULE VERSION DIR : the module's zip from the proxy, unpacked as a writable tree in DIR.
# Built as the main module, so its own go.mod (replace directives and all) pins the dependencies.
fetch() {
  local dir
  dir=$(go mod download -json "$1@$2" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  [ -f "$dir/go.mod" ] || { echo "runtime: could not download $1@$2" >&2; exit 1; }
  rm -rf "$3" && cp -r "$dir" "$3" && chmod -R u+w "$3"
}

# runc: cgo (libcontainer/nsenter is C) and the `seccomp` tag against Debian's libseccomp-dev, PIE,
# as `make runc` does, but without the `libpathrs` tag its Makefile adds since 1.5: a Rust library
# neither Debian 12 nor the Go module proxy serves (runc without it keeps its Go path-safety code,
# as in 1.4; runc 1.6 plans to require it). The version is the module's VERSION file, embedded with
# go:embed (the Makefile passes no -X main.version any more); its -X main.gitCommit comes from git,
# which a module zip does not carry, so `runc --version` has no commit line.
if [ ! -x "$OUT/bin/runc" ]; then
  pkg-config --exists libseccomp || { echo "runtime: runc needs libseccomp-dev and pkg-config (hack/install-deps.sh)" >&2; exit 1; }
  command -v gcc >/dev/null || { echo "runtime: runc needs gcc (cgo)" >&2; exit 1; }
  work="$CACHE/build-runc-$RUNC_VERSION"
  mkdir -p "$work" && cd "$work"
  fetch github.com/opencontainers/runc "$RUNC_VERSION" src
  cd src
  echo "runtime: compiling runc $RUNC_VERSION (cgo, tags seccomp; libseccomp $(pkg-config --modversion libseccomp))"
  start=$(date +%s)
  [ "$(cat VERSION)" = "${RUNC_VERSION#v}" ] || { echo "runtime: runc's VERSION says $(cat VERSION), not $RUNC_VERSION" >&2; exit 1; }
  CGO_ENABLED=1 go build -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs" \
    -o "$OUT/bin/runc.tmp" .
  mv "$OUT/bin/runc.tmp" "$OUT/bin/runc"
  cd "$CACHE" && rm -rf "$work"
  echo "runtime: runc built in $(( $(date +%s) - start ))s"
fi
"$OUT/bin/runc" --version
"$OUT/bin/runc" --version | grep -q '^libseccomp: ' || { echo "runtime: runc was built without seccomp" >&2; rm -f "$OUT/bin/runc"; exit 1; }

# containerd: static Go binaries (no cgo: the btrfs snapshotter, the only cgo part, is not used by
# the nodes); the shim with the `no_grpc` tag as the Makefile builds it. The version strings as the
# Makefile sets them (the module zip carries no git revision).
if ! have_all; then
  work="$CACHE/build-containerd-$CONTAINERD_VERSION"
  mkdir -p "$work" && cd "$work"
  fetch github.com/containerd/containerd/v2 "$CONTAINERD_VERSION" src
  cd src
  pkg=github.com/containerd/containerd/v2
  ldflags="-s -w -X $pkg/version.Version=$CONTAINERD_VERSION -X $pkg/version.Package=$pkg"
  echo "runtime: compiling containerd $CONTAINERD_VERSION: containerd, ctr, containerd-shim-runc-v2 (several minutes on 2 cores with a cold cache)"
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -buildmode=pie -tags "urfave_cli_no_docs" -ldflags "$ldflags" \
    -o "$OUT/bin/containerd.tmp" ./cmd/containerd
  CGO_ENABLED=0 go build -trimpath -buildmode=pie -tags "urfave_cli_no_docs" -ldflags "$ldflags" \
    -o "$OUT/bin/ctr.tmp" ./cmd/ctr
  CGO_ENABLED=0 go build -trimpath -tags "urfave_cli_no_docs no_grpc" -ldflags "$ldflags" \
    -o "$OUT/bin/containerd-shim-runc-v2.tmp" ./cmd/containerd-shim-runc-v2
  for b in containerd ctr containerd-shim-runc-v2; do mv "$OUT/bin/$b.tmp" "$OUT/bin/$b"; done
  cd "$CACHE" && rm -rf "$work"
  echo "runtime: containerd built in $(( $(date +%s) - start ))s"
fi
"$OUT/bin/containerd" --version
"$OUT/bin/containerd" --version | grep -q " $CONTAINERD_VERSION" || { echo "runtime: containerd does not say $CONTAINERD_VERSION" >&2; exit 1; }
echo "runtime: binaries in $OUT/bin"
