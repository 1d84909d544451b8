#!/usr/bin/env bash
# Builds CoreDNS (the local cluster's DNS, as kubeadm runs it: hack/nodes.sh start_cluster_dns,
# docs/decisions/0037-cluster-dns.md) from source through the Go module proxy, at one pinned
# release, into the cache next to the Kubernetes binaries: a static binary hack/images.sh puts in
# the svc/coredns image. A second run with the binary present does nothing.
source "$(dirname "$0")/lib.sh"

COREDNS_VERSION=${COREDNS_VERSION:-v1.14.7}
OUT="$CACHE/coredns-$COREDNS_VERSION"
if [ -x "$OUT/bin/coredns" ]; then
  echo "coredns: $COREDNS_VERSION cached in $OUT/bin"
  exit 0
fi

build() {
  # GitCommit is what `coredns -version` prints beside the release.
  go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" -o "$OUT/bin/coredns.tmp" .
  mv "$OUT/bin/coredns.tmp" "$OUT/bin/coredns"
}
go_build coredns "github.com/coredns/coredns@$COREDNS_VERSION" "$OUT/bin" "$COREDNS_VERSION (a few minutes on 2 cores with a cold cache)" build
"$OUT/bin/coredns" -version
