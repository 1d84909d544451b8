#!/usr/bin/env bash
# CloudNativePG for the cloudnative-pg provider of Databases (controllers/database/cnpg.ts,
# docs/decisions/0039-cloudnative-pg.md), from the operator's Go module through the Go module proxy
# at one pinned release: its CRDs (the module carries config/crd/bases), and the operator itself as
# its release manifest (releases/cnpg-<version>.yaml) installs it, on the image of its manager
# built here (hack/build-cnpg.sh, hack/images.sh's svc/cnpg).
#   cnpg.sh crds      install (or update) the Cluster CRD; prints the version
#   cnpg.sh operator  install (or update) the operator in cnpg-system and wait until it serves
#   cnpg.sh path      print where the CRD file is (downloading the module if needed)
source "$(dirname "$0")/lib.sh"

CNPG_VERSION=${CNPG_VERSION:-v1.30.0}
# module_dir : the operator's module, downloaded through the proxy when missing (go_module says
# why when it cannot be).
module_dir() {
  go_module cnpg "github.com/cloudnative-pg/cloudnative-pg@$CNPG_VERSION" "$CACHE/build-cnpg-$CNPG_VERSION" >&2
  echo "$GO_MODULE_DIR"
}

crd_file() {
  local dir
  dir=$(module_dir)
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
  operator)
    # shellcheck disable=SC1091
    source "$STATE/images.env"
    [ -n "${SVC_IMAGE_CNPG:-}" ] || { echo "cnpg: no svc/cnpg image in $STATE/images.env (hack/images.sh builds it)" >&2; exit 1; }
    manifest="$(module_dir)/releases/cnpg-${CNPG_VERSION#v}.yaml"
    [ -f "$manifest" ] || { echo "cnpg: no release manifest $manifest" >&2; exit 1; }
    # The release as published, on our build of its manager (the same source, from the module).
    sed -e "s|ghcr.io/cloudnative-pg/cloudnative-pg:${CNPG_VERSION#v}|$SVC_IMAGE_CNPG|g" -e 's|imagePullPolicy: Always|imagePullPolicy: IfNotPresent|' "$manifest" |
      KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" apply --server-side --force-conflicts -f - >/dev/null
    # The release manifest's namespace (SVC_DATABASE_CNPG_OPERATOR_NAMESPACE names it to the controllers).
    if ! KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" -n cnpg-system rollout status deployment/cnpg-controller-manager --timeout=180s >/dev/null; then
      echo "cnpg: the operator is not ready after 180 s:" >&2
      KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" -n cnpg-system get pods -o wide >&2 || true
      KUBECONFIG="$STATE/kubeconfig" "$K8S_BIN/kubectl" -n cnpg-system logs deployment/cnpg-controller-manager --tail=30 >&2 || true
      exit 1
    fi
    echo "cnpg: operator $CNPG_VERSION ready in cnpg-system ($SVC_IMAGE_CNPG)"
    ;;
  *) echo "usage: cnpg.sh crds|operator|path" >&2; exit 2 ;;
esac
