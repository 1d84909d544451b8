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

# Static Go binaries: no cgo (the btrfs snapshotter, its only cgo part, is not used by the nodes);
# the shim with the no_grpc tag, and the version strings, as containerd's Makefile builds them (a
# module zip carries no git revision, so its version line ends in a blank).
build() {
  local pkg=github.com/containerd/containerd/v2 ldflags b
  ldflags="-s -w -X $pkg/version.Version=$CONTAINERD_VERSION -X $pkg/version.Package=$pkg"
  go build -trimpath -buildmode=pie -tags urfave_cli_no_docs -ldflags "$ldflags" -o "$CONTAINERD_BIN/containerd.tmp" ./cmd/containerd
  go build -trimpath -buildmode=pie -tags urfave_cli_no_docs -ldflags "$ldflags" -o "$CONTAINERD_BIN/ctr.tmp" ./cmd/ctr
  go build -trimpath -tags "urfave_cli_no_docs no_grpc" -ldflags "$ldflags" -o "$CONTAINERD_BIN/containerd-shim-runc-v2.tmp" ./cmd/containerd-shim-runc-v2
  "$CONTAINERD_BIN/containerd.tmp" --version | grep -qE " $CONTAINERD_VERSION( |\$)" || { say "containerd: the built binary does not say $CONTAINERD_VERSION" >&2; exit 1; }
  for b in "${BINS[@]}"; do mv "$CONTAINERD_BIN/$b.tmp" "$CONTAINERD_BIN/$b"; done
}
go_build containerd "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" "$CONTAINERD_BIN" \
  "$CONTAINERD_VERSION: containerd, ctr, containerd-shim-runc-v2 (several minutes on 2 cores with a cold Go cache)" build
