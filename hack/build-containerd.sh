#!/usr/bin/env bash
# Builds the nodes' containerd 2 from the Go module proxy into the cache (containerd, its runc shim
# containerd-shim-runc-v2 and ctr), as build-runc.sh builds runc; with the binaries there it does
# nothing. Debian 12's containerd 1.6.20 is past its end of life (August 2025) and ignores
# hostUsers: false; pods get user namespaces from containerd 2 (docs/decisions/0022-runtime.md).
source "$(dirname "$0")/lib.sh"

BINS=(containerd containerd-shim-runc-v2 ctr)
have_all() { for b in "${BINS[@]}"; do [ -x "$CONTAINERD_BIN/$b" ] || return 1; done; }
if have_all; then
  exit 0
fi
command -v go >/dev/null || { say "containerd: go is required on PATH" >&2; exit 1; }
export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS="-mod=mod" GOTOOLCHAIN=local

work="$CACHE/build-containerd-$CONTAINERD_VERSION"
rm -rf "$work" && mkdir -p "$work"
dir=$(go mod download -json "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[ -f "$dir/go.mod" ] || { say "containerd: could not download containerd $CONTAINERD_VERSION from the module proxy" >&2; exit 1; }
cp -r "$dir" "$work/src" && chmod -R u+w "$work/src" && cd "$work/src"
# Static Go binaries: no cgo (the btrfs snapshotter, its only cgo part, is not used by the nodes);
# the shim with the no_grpc tag, and the version strings, as containerd's Makefile builds them (a
# module zip carries no git revision).
pkg=github.com/containerd/containerd/v2
ldflags="-s -w -X $pkg/version.Version=$CONTAINERD_VERSION -X $pkg/version.Package=$pkg"
say "containerd: compiling $CONTAINERD_VERSION: containerd, ctr, containerd-shim-runc-v2 (several minutes on 2 cores with a cold cache)"
start=$SECONDS
mkdir -p "$CONTAINERD_BIN"
CGO_ENABLED=0 go build -trimpath -buildmode=pie -tags urfave_cli_no_docs -ldflags "$ldflags" -o "$work/containerd" ./cmd/containerd
CGO_ENABLED=0 go build -trimpath -buildmode=pie -tags urfave_cli_no_docs -ldflags "$ldflags" -o "$work/ctr" ./cmd/ctr
CGO_ENABLED=0 go build -trimpath -tags "urfave_cli_no_docs no_grpc" -ldflags "$ldflags" -o "$work/containerd-shim-runc-v2" ./cmd/containerd-shim-runc-v2
"$work/containerd" --version | grep -qE " $CONTAINERD_VERSION( |$)" || { say "containerd: the built binary does not say $CONTAINERD_VERSION" >&2; exit 1; }
for b in "${BINS[@]}"; do mv "$work/$b" "$CONTAINERD_BIN/$b"; done
cd "$CACHE" && rm -rf "$work"
say "containerd: $CONTAINERD_VERSION built in $((SECONDS - start)) s ($CONTAINERD_BIN)"
