#!/usr/bin/env bash
# The platform's own components for `make dev`, after the cluster and PostgreSQL are up.
# Components join COMPONENTS as they are built (node-agent, api, ingress-auth, controllers).
#   dev.sh [up] | down | status
source "$(dirname "$0")/lib.sh"

COMPONENTS=()

summary() {
  cat <<MSG

The local platform is up.
  Kubernetes API   https://127.0.0.1:$APISERVER_PORT   export KUBECONFIG=$STATE/kubeconfig
  kubectl          $K8S_BIN/kubectl   (try: kubectl get svc-all -A)
  PostgreSQL       postgres://svc@127.0.0.1:$PG_PORT/svc
  Logs             $LOGS/
  Stop it all      make down
MSG
}

case "${1:-up}" in
  up) summary ;;
  down) for c in "${COMPONENTS[@]}"; do stop_daemon "$c"; done ;;
  status) for c in "${COMPONENTS[@]}"; do status_line "$c"; done ;;
  *) say "usage: $0 up|down|status" >&2; exit 2 ;;
esac
