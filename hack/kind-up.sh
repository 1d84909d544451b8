#!/usr/bin/env bash
# For users with a Docker engine: a kind cluster instead of the local processes of `make cluster`.
# NOT exercised here: the development and CI machines of this project have no Docker engine.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
command -v docker >/dev/null && docker info >/dev/null 2>&1 ||
  { say "kind-up: needs a running Docker engine; use make dev for the local platform without one" >&2; exit 1; }
KIND_VERSION=${KIND_VERSION:-v0.33.0}
export GOBIN="$CACHE/bin"
[ -x "$GOBIN/kind" ] || go install "sigs.k8s.io/kind@$KIND_VERSION"
"$GOBIN/kind" get clusters | grep -qx svc || "$GOBIN/kind" create cluster --name svc --image "${KIND_NODE_IMAGE:-kindest/node:$K8S_VERSION}"
"$GOBIN/kind" get kubeconfig --name svc >"$STATE/kind-kubeconfig"
KUBECONFIG="$STATE/kind-kubeconfig" "$K8S_BIN/kubectl" apply --server-side -f crds/
say "kind-up: cluster svc ready. export KUBECONFIG=$STATE/kind-kubeconfig"
