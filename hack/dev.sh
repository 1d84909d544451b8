#!/usr/bin/env bash
# The platform's own components for `make dev`, after the cluster and PostgreSQL are up.
#   dev.sh [up [COMPONENT...]] | restart COMPONENT... | stop COMPONENT... | down | status
# A component started with variables set (SVC_SANDBOX_POOL_SIZE=16 dev.sh restart controllers) keeps them.
source "$(dirname "$0")/lib.sh"

COMPONENTS=(s3 controllers mail registrar api ingress-auth)
API_PORT=${SVC_API_PORT:-8080}
PROXY_PORT=${SVC_PROXY_PORT:-8081}
SMTP_PORT=${SVC_DEV_SMTP_PORT:-2525}
REGISTRAR_PORT=${SVC_DEV_REGISTRAR_PORT:-8057}

export SVC_STATE_DIR="$STATE" KUBECONFIG="$STATE/kubeconfig"
export SVC_DATABASE_URL=${SVC_DATABASE_URL:-postgres://svc@127.0.0.1:$PG_PORT/svc}
# The images hack/images.sh built for this checkout (the runtime machines run, among others).
# shellcheck disable=SC1091
[ -f "$STATE/images.env" ] && set -a && source "$STATE/images.env" && set +a
export SVC_MACHINE_PLATFORM_PORTS="$MACHINE_PORTS"
# CloudNativePG's instances run Debian's PostgreSQL of svc/cnpg-postgres (hack/images.sh; the
# operator: hack/cnpg.sh operator, docs/decisions/0039-cloudnative-pg.md).
export SVC_DATABASE_CNPG_IMAGE=${SVC_DATABASE_CNPG_IMAGE:-${SVC_IMAGE_CNPG_POSTGRES:-}}
# Services built from source are pushed to the local registry, which the nodes pull from.
export SVC_BUILD_REGISTRY=${SVC_BUILD_REGISTRY:-127.0.0.1:$REGISTRY_PORT}
# Sign-in links go to the local mail catcher (the `mail` component) unless told otherwise.
export SVC_SMTP_URL=${SVC_SMTP_URL:-smtp://127.0.0.1:$SMTP_PORT}
# Custom domains are verified against the local DNS server (the `dns` part, hack/nodes.sh), and an
# apex's A records must point at the local edge (docs/decisions/0027-app-domains.md).
export SVC_DOMAINS_DNS_SERVERS=${SVC_DOMAINS_DNS_SERVERS:-127.0.0.1:$DNS_PORT}
export SVC_DOMAINS_EDGE_ADDRESSES=${SVC_DOMAINS_EDGE_ADDRESSES:-127.0.0.1}
# HTTPS (docs/decisions/0028-https.md): the API orders verified domains' certificates from the local
# ACME server (the `acme` part, Pebble, hack/nodes.sh; its HTTPS certificate is signed by the CA of
# SVC_ACME_CA_FILE) and answers HTTP-01 through ingress-auth, which serves them on its TLS port.
export SVC_CERTIFICATES_ISSUER=${SVC_CERTIFICATES_ISSUER:-acme}
export SVC_ACME_DIRECTORY_URL=${SVC_ACME_DIRECTORY_URL:-https://127.0.0.1:${SVC_ACME_PORT:-14000}/dir}
export SVC_ACME_CA_FILE=${SVC_ACME_CA_FILE:-${PEBBLE_BIN%/bin}/certs/pebble.minica.pem}
export SVC_ACME_HTTP01_CHECK_URL=${SVC_ACME_HTTP01_CHECK_URL:-http://127.0.0.1:$PROXY_PORT}
export SVC_PROXY_TLS_PORT=${SVC_PROXY_TLS_PORT:-8443}
# Account domains are bought from the local double of name.com's API (the `registrar` component,
# docs/decisions/0035-registrar.md) unless another registrar is configured.
export SVC_REGISTRAR=${SVC_REGISTRAR:-namecom}
export SVC_REGISTRAR_URL=${SVC_REGISTRAR_URL:-http://127.0.0.1:$REGISTRAR_PORT}
export SVC_REGISTRAR_USERNAME=${SVC_REGISTRAR_USERNAME:-svc-dev}
export SVC_REGISTRAR_TOKEN=${SVC_REGISTRAR_TOKEN:-svc-dev-token}
export SVC_DEV_REGISTRAR_PORT=$REGISTRAR_PORT
export SVC_PROXY_TLS_PUBLIC_PORT=${SVC_PROXY_TLS_PUBLIC_PORT:-$SVC_PROXY_TLS_PORT}

start_component() {
  [ "$1" = s3 ] || restart_if_rebuilt "$1" "$1"
  case "$1" in
    s3)
      ensure_s3_secret
      "$ROOT/hack/build-versitygw.sh" >/dev/null
      mkdir -p "$STATE/s3"
      # The root key pair only: the API is its one user. Loopback only. The secret in the
      # environment, never on a command line.
      ROOT_ACCESS_KEY_ID=svc-dev ROOT_SECRET_ACCESS_KEY="$(cat "$STATE/s3-secret")" \
        start_daemon s3 "$VERSITYGW_BIN/versitygw" --port "127.0.0.1:$S3_PORT" posix "$STATE/s3"
      wait_ready s3 30 curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$S3_PORT/"
      ;;
    controllers)
      # Databases served by CloudNativePG by default: its operator runs first.
      [ "${SVC_DATABASE_PROVIDER:-pods}" != cloudnative-pg ] || "$ROOT/hack/cnpg.sh" operator
      start_daemon controllers node --enable-source-maps dist/controllers/main.js
      wait_ready controllers 60 started_since_last_start controllers 'Controllers started'
      ;;
    mail)
      start_daemon mail node --enable-source-maps dist/hack/mail-catcher.js
      wait_ready mail 30 started_since_last_start mail 'mail catcher listening'
      ;;
    registrar)
      start_daemon registrar node --enable-source-maps dist/hack/registrar-double.js
      wait_ready registrar 30 started_since_last_start registrar 'registrar double'
      ;;
    api)
      # Artifacts (deploy trees, build outputs, database backups) live in the local object store
      # (the `s3` component; docs/decisions/0038-object-store.md) unless told otherwise, and
      # $STATE/artifacts is the API's cache; SVC_ARTIFACT_S3_ENDPOINT= keeps them in that directory.
      # In a subshell: the key pair is the API's alone, not the components started after it.
      (
        if [ -n "${SVC_ARTIFACT_S3_ENDPOINT-http://127.0.0.1:$S3_PORT}" ]; then
          [ -s "$STATE/s3-secret" ] || { say "api: no $STATE/s3-secret: start the s3 part first (hack/dev.sh up s3 api)"; exit 1; }
          export SVC_ARTIFACT_S3_ENDPOINT=${SVC_ARTIFACT_S3_ENDPOINT:-http://127.0.0.1:$S3_PORT}
          export SVC_ARTIFACT_S3_BUCKET=${SVC_ARTIFACT_S3_BUCKET:-svc-artifacts}
          export SVC_ARTIFACT_S3_ACCESS_KEY_ID=${SVC_ARTIFACT_S3_ACCESS_KEY_ID:-svc-dev}
          export SVC_ARTIFACT_S3_SECRET_ACCESS_KEY=${SVC_ARTIFACT_S3_SECRET_ACCESS_KEY:-$(cat "$STATE/s3-secret")}
          # Artifacts kept as files before the object store (make dev of an earlier checkout): copied
          # into the bucket once (what is there is skipped), so their deploys still start and roll back.
          if [ -d "$STATE/artifacts/sha256" ] && [ ! -e "$STATE/artifacts/.in-object-store" ]; then
            node dist/api/migrate-artifacts.js --allow-refused "$STATE/artifacts" >>"$LOGS/api.log" 2>&1 &&
              touch "$STATE/artifacts/.in-object-store"
          fi
        else
          unset SVC_ARTIFACT_S3_ENDPOINT
        fi
        start_daemon api node --enable-source-maps dist/api/main.js
      ) || exit 1
      wait_ready api 60 curl -fsS --max-time 2 "http://127.0.0.1:$API_PORT/api/health"
      ;;
    ingress-auth)
      start_daemon ingress-auth node --enable-source-maps dist/ingress-auth/main.js
      # /_svc/health answers on any Host, so the bare address works.
      wait_ready ingress-auth 60 curl -fsS --max-time 2 "http://127.0.0.1:$PROXY_PORT/_svc/health"
      ;;
  esac
}

# up [COMPONENT...] : start the named components (all when none is named). The artifact key
# (ensure_artifact_key, hack/lib.sh) first.
up() {
  cd "$ROOT"
  ensure_artifact_key
  local c
  for c in "${@:-${COMPONENTS[@]}}"; do start_component "$c"; done
  [ $# -gt 0 ] || summary
}

summary() {
  cat <<MSG

The local platform is up.
  Platform API     http://127.0.0.1:$API_PORT/api   (OpenAPI: /api/openapi.json)
  Console          ${SVC_API_PUBLIC_URL:-http://127.0.0.1:$API_PORT}/console/   (sign in as ${SVC_ADMIN_EMAIL:-owner@localhost}; the link lands in $LOGS/mail.log)
  Apps             http://<app>.${SVC_APPS_DOMAIN:-apps.localhost}:$PROXY_PORT/   (ingress-auth; try: curl -s http://hello.apps.localhost:$PROXY_PORT/)
  Sign-in          svc open <app> prints an owner link; emailed sign-in links land in $LOGS/mail.log
  CLI              node bin/svc.js login   (approve it in the console; then node bin/svc.js apps ls)
  Owner token      $STATE/owner-token   (curl -H "Authorization: Bearer \$(cat $STATE/owner-token)" http://127.0.0.1:$API_PORT/api/account)
  Kubernetes API   https://127.0.0.1:$APISERVER_PORT   export KUBECONFIG=$STATE/kubeconfig
  Nodes            local-a, local-b: kubelet + containerd each (kubectl run/logs/exec/port-forward work)
  Registry         127.0.0.1:$REGISTRY_PORT   (images of this checkout: $STATE/images.env; token auth, realm http://127.0.0.1:$REGISTRY_AUTH_PORT/token;
                   as the operator: REGISTRY_AUTH_FILE=$REGISTRY_AUTH_DIR/operator-auth.json skopeo ...)
  Controllers      reconcile Apps into machines and Services (kubectl apply -f docs/examples/app.yaml)
  kubectl          $K8S_BIN/kubectl   (try: kubectl get svc-all -A)
  PostgreSQL       postgres://svc@127.0.0.1:$PG_PORT/svc
  Object store     http://127.0.0.1:$S3_PORT   (versitygw; artifacts in the bucket svc-artifacts; key svc-dev, secret in $STATE/s3-secret)
  Registrar        $SVC_REGISTRAR_URL   (a double of name.com's API: svc domains search NAME; its faults: POST /_double/faults)
  DNS              127.0.0.1:$DNS_PORT   (custom domains are verified here; publish records through its management API:
                   curl -d '{"host":"_svc-challenge.shop.example","value":"svc-verify=..."}' http://127.0.0.1:$DNS_MANAGEMENT_PORT/set-txt)
  Logs             $LOGS/
  Stop it all      make down
MSG
}

case "${1:-up}" in
  up) shift || true; up "$@" ;;
  restart) shift; for c in "$@"; do stop_daemon "$c" 20; done; up "$@" ;;
  # The chart test stops the host's controllers while the installed ones run the cluster.
  stop) shift; for c in "$@"; do stop_daemon "$c" 20; done ;;
  down) for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do stop_daemon "${COMPONENTS[$i]}" 20; done ;;
  status) for c in "${COMPONENTS[@]}"; do status_line "$c"; done ;;
  *) say "usage: $0 up|restart|stop|down|status" >&2; exit 2 ;;
esac
