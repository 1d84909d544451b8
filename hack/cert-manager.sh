#!/usr/bin/env bash
# cert-manager's custom resource definitions, for SVC_CERTIFICATES_ISSUER=cert-manager
# (api/certificates/cert-manager.ts, ingress-auth/tls/challenges.ts): taken from cert-manager's
# published Go module through the Go module proxy, at one pinned release, and applied server-side to
# the local cluster. cert-manager itself is not run here: the tests act as its controller.
# The module's deploy/crds/ holds the CRDs as plain YAML (its Helm chart wraps the same ones in
# `{{- if .Values.crds.enabled }}` template lines; their specs are identical): those are applied.
#   cert-manager.sh crds    install (or update) the CRDs; prints the version
#   cert-manager.sh path    print the directory of the CRD files (downloading the module if needed)
source "$(dirname "$0")/lib.sh"

CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.21.2}
CRDS=(
  certificates.cert-manager.io
  certificaterequests.cert-manager.io
  issuers.cert-manager.io
  clusterissuers.cert-manager.io
  orders.acme.cert-manager.io
  challenges.acme.cert-manager.io
)
# certificates.cert-manager.io -> cert-manager.io_certificates.yaml
file_of() { echo "${1#*.}_${1%%.*}.yaml"; }

crd_dir() {
  command -v go >/dev/null || { echo "cert-manager: go is required on PATH (it fetches the module)" >&2; exit 1; }
  local dir
  dir=$(GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS=-mod=mod GOTOOLCHAIN=local \
    go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  local crd
  for crd in "${CRDS[@]}"; do
    [ -f "$dir/deploy/crds/$(file_of "$crd")" ] || {
      echo "cert-manager: no $crd CRD in github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION ($dir/deploy/crds)" >&2
      exit 1
    }
  done
  echo "$dir/deploy/crds"
}

case "${1:-}" in
  path) crd_dir ;;
  crds)
    dir=$(crd_dir)
    args=()
    for crd in "${CRDS[@]}"; do args+=(-f "$dir/$(file_of "$crd")"); done
    KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" apply --server-side --force-conflicts "${args[@]}" >/dev/null
    # Polled rather than `kubectl wait`, which fails outright on a CRD just made that has no
    # status.conditions yet (seen on a fresh cluster).
    for crd in "${CRDS[@]}"; do
      for _ in $(seq 120); do
        established=$(KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" get crd "$crd" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null || true)
        [ "$established" = True ] && break
        sleep 0.5
      done
      [ "$established" = True ] || { echo "cert-manager: $crd not established after 60 s" >&2; exit 1; }
    done
    echo "cert-manager: ${#CRDS[@]} CRDs of $CERT_MANAGER_VERSION established"
    ;;
  *) echo "usage: cert-manager.sh crds|path" >&2; exit 2 ;;
esac
