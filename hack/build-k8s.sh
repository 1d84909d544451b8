#!/usr/bin/env bash
# Builds the Kubernetes binaries (control plane, kubelet, kube-proxy) (and the etcd they pin) from source through the Go
# module proxy, at one pinned release, into a cache outside the repository. A second run with the
# binaries present does nothing, so clean clones and CI reuse the cache.
#
# Why a scratch module: k8s.io/kubernetes replaces its k8s.io/* staging modules with ./staging
# directories that are not part of its published module zip. We require k8s.io/kubernetes and replace
# each staging module with its published v0.<minor>.<patch>, which is the same source.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
CACHE=${SVC_CACHE:-$HOME/.cache/svc-platform}
OUT="$CACHE/k8s-$K8S_VERSION"
BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy etcd)

have_all() { for b in "${BINS[@]}"; do [ -x "$OUT/bin/$b" ] || return 1; done; }
if have_all; then
  echo "k8s: $K8S_VERSION binaries cached in $OUT/bin"
  exit 0
fi

command -v go >/dev/null || { echo "k8s: go is required on PATH" >&2; exit 1; }
export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS="-mod=mod" GOTOOLCHAIN=local
export CGO_ENABLED=0
work="$CACHE/build-$K8S_VERSION"
mkdir -p "$work/cmd/etcd" "$OUT/bin"
cd "$work"

minor=$(echo "$K8S_VERSION" | cut -d. -f2)
staging_version="v0.${K8S_VERSION#v1.}"
echo "k8s: fetching k8s.io/kubernetes@$K8S_VERSION (staging modules at $staging_version)"
kmod_dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[ -f "$kmod_dir/go.mod" ] || { echo "k8s: could not download k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
go_directive=$(awk '$1=="go"{print $2; exit}' "$kmod_dir/go.mod")

{
  echo "module svc.dev/k8s-build"
  echo
  echo "go $go_directive"
  echo
  grep '^godebug' "$kmod_dir/go.mod" || true
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  awk '/=> \.\/staging\/src\//{print "\t" $1 " => " $1 " '"$staging_version"'"}' "$kmod_dir/go.mod"
  echo ")"
} > go.mod

# etcd: the server version k8s.io/kubernetes itself pins (Debian 12 ships 3.4, older than this
# release supports; see docs/decisions/0002-local-control-plane.md).
cat > cmd/etcd/main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO

build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

# -mod=mod lets this first build record go.sum; the modules come from the proxy as needed.
echo "k8s: compiling ${BINS[*]} (about 10 minutes on 2 cores with a cold cache; GOCACHE=$GOCACHE)"
start=$(date +%s)
go build -trimpath -ldflags "-s -w $ldflags" -o "$OUT/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy \
  ./cmd/etcd
echo "k8s: built in $(( $(date +%s) - start ))s into $OUT/bin"
"$OUT/bin/kubectl" version --client
