#!/usr/bin/env bash
# CloudNativePG's custom resource definitions, for the cloudnative-pg provider of Databases
# (controllers/database/cnpg.ts): taken from the operator's published Go module through the Go
# module proxy (the module zip carries config/crd/bases), at one pinned release, and applied
# server-side to the local cluster. The operator itself is not run here (docs/decisions/0017).
#   cnpg.sh crds    install (or update) the Cluster CRD; prints the version
#   cnpg.sh path    print where the CRD file is (downloading the module if needed)
source "$(dirname "$0")/lib.sh"

CNPG_VERSION=${CNPG_VERSION:-v1.27.1}
crd_file() {
  command -v go >/dev/null || { echo "cnpg: go is required on PATH (it fetches the module)" >&2; exit 1; }
  local dir
  dir=$(GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS=-mod=mod GOTOOLCHAIN=local \
    go mod download -json "github.com/cloudnative-pg/cloudnative-pg@$CNPG_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  local f="$dir/config/crd/bases/postgresql.cnpg.io_clusters.yaml"
  [ -f "$f" ] || { echo "cnpg: no Cluster CRD in github.com/cloudnative-pg/cloudnative-pg@$CNPG_VERSION ($dir)" >&2; exit 1; }
  echo "$f"
}

case "${1:-}" in
  path) crd_file ;;
  crds)
    f=$(crd_file)
    KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" apply --server-side --force-conflicts -f "$f" >/dev/null
    # Polled rather than `kubectl wait`, which fails outright on a CRD just made that has no
    # status.conditions yet (seen on a fresh cluster).
    for _ in $(seq 120); do
      established=$(KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" get crd clusters.postgresql.cnpg.io -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null || true)
      [ "$established" = True ] && break
      sleep 0.5
    done
    [ "$established" = True ] || { echo "cnpg: clusters.postgresql.cnpg.io not established after 60 s" >&2; exit 1; }
    echo "cnpg: clusters.postgresql.cnpg.io $CNPG_VERSION established"
    ;;
  *) echo "usage: cnpg.sh crds|path" >&2; exit 2 ;;
esac
