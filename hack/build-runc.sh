#!/usr/bin/env bash
# Builds the nodes' runc from the Go module proxy into the cache, as build-k8s.sh builds Kubernetes;
# with the binary there it does nothing. Debian's runc (1.1.5) lacks the November 2025 fixes
# (CVE-2025-31133, CVE-2025-52565, CVE-2025-52881); containerd runs this one by absolute path
# (BinaryName in hack/nodes.sh). Why 1.2.8 and not the latest: docs/decisions/0022-runtime.md.
source "$(dirname "$0")/lib.sh"

if [ -x "$RUNC_BIN" ]; then
  exit 0
fi
pkg-config --exists libseccomp || { say "runc: runc needs libseccomp-dev and pkg-config (hack/install-deps.sh)" >&2; exit 1; }
command -v gcc >/dev/null || { say "runc: runc needs gcc (cgo, for seccomp)" >&2; exit 1; }

build() {
  [ "$(cat VERSION)" = "${RUNC_VERSION#v}" ] || { say "runc: its VERSION says $(cat VERSION), not $RUNC_VERSION" >&2; exit 1; }
  # 1.2.8 and 1.3.3 replace go-selinux by a patched copy under internal/third_party (the
  # CVE-2025-52881 fix, under embargo then) that the module's zip leaves out; go-selinux released
  # that fix since (v1.13.0), so a release with it comes from the proxy instead.
  if grep -q 'internal/third_party/selinux' go.mod; then
    go mod edit -dropreplace github.com/opencontainers/selinux -require github.com/opencontainers/selinux@v1.13.1
  fi
  CGO_ENABLED=1 go build -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs" -ldflags "-X main.version=$(cat VERSION)" -o "$RUNC_BIN.tmp" .
  "$RUNC_BIN.tmp" --version | grep -q '^libseccomp: ' || { say "runc: built without seccomp" >&2; rm -f "$RUNC_BIN.tmp"; exit 1; }
  mv "$RUNC_BIN.tmp" "$RUNC_BIN"
}
go_build runc "github.com/opencontainers/runc@$RUNC_VERSION" "$(dirname "$RUNC_BIN")" \
  "$RUNC_VERSION (cgo, seccomp against libseccomp $(pkg-config --modversion libseccomp))" build
