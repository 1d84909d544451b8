#!/usr/bin/env bash
# The platform's own components for `make dev`, after the cluster and PostgreSQL are up.
# Components join COMPONENTS as they are built (node-agent, api, ingress-auth, controllers).
#   dev.sh [up] | down | status
source "$(dirname "$0")/lib.sh"

COMPONENTS=(api)
API_PORT=${SVC_API_PORT:-8080}

export SVC_STATE_DIR="$STATE" KUBECONFIG="$STATE/kubeconfig"
export SVC_DATABASE_URL=${SVC_DATABASE_URL:-postgres://svc@127.0.0.1:$PG_PORT/svc}

up() {
  cd "$ROOT"
  start_daemon api node --enable-source-maps dist/api/main.js
  wait_ready api 60 curl -fsS --max-time 2 "http://127.0.0.1:$API_PORT/api/health"
  summary
}

summary() {
  cat <<MSG

The local platform is up.
  Platform API     http://127.0.0.1:$API_PORT/api   (OpenAPI: /api/openapi.json)
  Owner token      $STATE/owner-token   (curl -H "Authorization: Bearer \$(cat $STATE/owner-token)" http://127.0.0.1:$API_PORT/api/account)
  Kubernetes API   https://127.0.0.1:$APISERVER_PORT   export KUBECONFIG=$STATE/kubeconfig
  kubectl          $K8S_BIN/kubectl   (try: kubectl get svc-all -A)
  PostgreSQL       postgres://svc@127.0.0.1:$PG_PORT/svc
  Logs             $LOGS/
  Stop it all      make down
MSG
}

case "${1:-up}" in
  up) up ;;
  down) for c in "${COMPONENTS[@]}"; do stop_daemon "$c"; done ;;
  status) for c in "${COMPONENTS[@]}"; do status_line "$c"; done ;;
  *) say "usage: $0 up|down|status" >&2; exit 2 ;;
esac
