# Shared by the local-platform scripts: paths, ports, and a tiny process supervisor.
# Every part runs as its own session (setsid) with a pid file in .svc/run and a log in .svc/logs,
# so `down` can stop a part with its whole process group, and a part that dies is reported with the
# tail of its log instead of being hidden.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${SVC_STATE_DIR:-$ROOT/.svc}
case "$STATE" in /*) ;; *) STATE="$ROOT/$STATE" ;; esac
RUN="$STATE/run"
LOGS="$STATE/logs"
PKI="$STATE/pki"
CACHE=${SVC_CACHE:-$HOME/.cache/svc-platform}
K8S_VERSION=${K8S_VERSION:-v1.36.3}
K8S_BIN="$CACHE/k8s-$K8S_VERSION/bin"
# helm, for the chart tests (hack/build-helm.sh builds it at this version).
HELM_BIN="$CACHE/helm-${HELM_VERSION:-v3.22.0}/bin"
# Pebble and its test DNS server pebble-challtestsrv (hack/build-pebble.sh builds them at this version).
PEBBLE_BIN="$CACHE/pebble-${PEBBLE_VERSION:-v2.10.3}/bin"
# CoreDNS, the cluster DNS (hack/build-coredns.sh builds it at this version).
COREDNS_BIN="$CACHE/coredns-${COREDNS_VERSION:-v1.14.7}/bin"
# CloudNativePG's operator (hack/build-cnpg.sh builds it at this version).
CNPG_BIN="$CACHE/cnpg-${CNPG_VERSION:-v1.30.0}/bin"
# versitygw, the S3-compatible object store of artifacts (hack/build-versitygw.sh builds it at this version).
VERSITYGW_BIN="$CACHE/versitygw-${VERSITYGW_VERSION:-v1.8.0}/bin"
# The nodes' runc (hack/build-runc.sh builds it at this version), by absolute path: never Debian's.
RUNC_VERSION=${RUNC_VERSION:-v1.2.8}
RUNC_BIN="$CACHE/runc-$RUNC_VERSION/runc"
# The nodes' containerd, its runc shim and ctr (hack/build-containerd.sh builds them at this version),
# by absolute path and first on containerd's PATH: never Debian's 1.6.
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.3.7}
CONTAINERD_BIN="$CACHE/containerd-$CONTAINERD_VERSION/bin"
# The Node.js every part runs on (.node-version), installed from the npm registry by install-deps.sh.
NODE_VERSION=$(cat "$ROOT/.node-version")
NODE_BIN="$CACHE/node-v$NODE_VERSION/bin"
case ":$PATH:" in *":$NODE_BIN:"*) ;; *) export PATH="$NODE_BIN:$PATH" ;; esac

ETCD_PORT=${SVC_ETCD_PORT:-2379}
ETCD_PEER_PORT=${SVC_ETCD_PEER_PORT:-2380}
APISERVER_PORT=${SVC_APISERVER_PORT:-6443}
KCM_PORT=${SVC_KCM_PORT:-10257}
SCHEDULER_PORT=${SVC_SCHEDULER_PORT:-10259}
REGISTRY_PORT=${SVC_REGISTRY_PORT:-5000}
# The registry's token service (registry-auth/, the registry's realm), on loopback beside it.
REGISTRY_AUTH_PORT=${SVC_REGISTRY_AUTH_PORT:-5001}
# What the registry's tokens name as their audience and issuer (lib/config.ts has the same defaults).
REGISTRY_SERVICE=${SVC_REGISTRY_SERVICE:-svc-registry}
REGISTRY_ISSUER=${SVC_REGISTRY_TOKEN_ISSUER:-svc-registry-auth}
# The operator's and the nodes' registry passwords, and the clients file of their hashes (hack/nodes.sh).
REGISTRY_AUTH_DIR="$STATE/registry-auth"
# The host ports pods may reach: the API's machine listener, and the range test APIs' machine
# listeners use (test/support/api.ts). The nodes' firewall drops every other packet from a pod to
# the host (hack/nodes.sh); the controllers' NetworkPolicies allow the same.
MACHINE_PORTS=${SVC_MACHINE_PLATFORM_PORTS:-8079,18000-18099}
PG_PORT=${SVC_PG_PORT:-55432}
# The `dns` part (pebble-challtestsrv, hack/nodes.sh): the DNS server custom domains are verified
# against (SVC_DOMAINS_DNS_SERVERS), and its management API, which publishes and removes records.
DNS_PORT=${SVC_DNS_PORT:-8053}
# The object store (versitygw on loopback, the `s3` component of hack/dev.sh).
S3_PORT=${SVC_S3_PORT:-8060}
DNS_MANAGEMENT_PORT=${SVC_DNS_MANAGEMENT_PORT:-8055}
SERVICE_CIDR=${SVC_SERVICE_CIDR:-10.96.0.0/16}
# The `kubernetes` Service's ClusterIP (the first address of the range), which pods reach the
# apiserver by.
KUBERNETES_SERVICE_IP="$(echo "$SERVICE_CIDR" | cut -d. -f1-3).1"
# The cluster DNS's Service address (hack/manifests/coredns.yaml, the kubelets' clusterDNS): kubeadm's .10.
CLUSTER_DNS_IP="$(echo "$SERVICE_CIDR" | cut -d. -f1-3).10"
# The apiserver as pods see it: the first node's bridge gateway (hack/nodes.sh), published as the
# endpoint of the `kubernetes` Service.
POD_PREFIX=$(echo "${SVC_NODE_POD_SUBNET:-10.244.0.0/16}" | cut -d. -f1-2)
APISERVER_POD_ADDRESS="$POD_PREFIX.0.1"

mkdir -p "$RUN" "$LOGS"

say() { printf '%s\n' "$*"; }

pid_of() { [ -f "$RUN/$1.pid" ] && cat "$RUN/$1.pid"; }

# A zombie (dead, not yet reaped by an init that may never reap it) does not count as running.
is_running() {
  local pid state
  pid=$(pid_of "$1") || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ]
}

log_tail() {
  say "---- last lines of $LOGS/$1.log ----"
  tail -n "${2:-25}" "$LOGS/$1.log" 2>/dev/null || true
  say "----"
}

# reserve_port PORT : keeps Linux from handing PORT out as a client socket's source port, where
# the kernel lets us (root); a no-op elsewhere.
reserve_port() {
  local file=/proc/sys/net/ipv4/ip_local_reserved_ports current
  [ -w "$file" ] || return 0
  current=$(cat "$file")
  case ",$current," in *",$1,"*) return 0 ;; esac
  { echo "${current:+$current,}$1" >"$file"; } 2>/dev/null || true
}

# start_daemon NAME CMD... : start CMD in its own session unless NAME already runs.
start_daemon() {
  local name=$1; shift
  if is_running "$name"; then
    say "$name: already running (pid $(pid_of "$name"))"
    return 0
  fi
  printf '\n==== %s starting %s ====\n' "$(date -u +%FT%TZ)" "$name" >>"$LOGS/$name.log"
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

# wait_ready NAME SECONDS CHECK... : poll CHECK until it succeeds; fail with the log tail if NAME
# dies or the time runs out.
wait_ready() {
  local name=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! is_running "$name"; then
      say "$name: exited during start-up"
      log_tail "$name"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      say "$name: not ready after ${seconds}s"
      log_tail "$name"
      return 1
    fi
    sleep 0.3
  done
  say "$name: ready (pid $(pid_of "$name"))"
}

# stop_daemon NAME [GRACE] : SIGTERM the part's process group, SIGKILL after GRACE seconds.
stop_daemon() {
  local name=$1 grace=${2:-10} pid
  pid=$(pid_of "$name") || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + grace))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name: did not stop within ${grace}s, killing"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    say "$name: stopped"
  fi
  rm -f "$RUN/$name.pid"
}

# A running component whose compiled code changed since it started is restarted, so `make dev` and
# `make test` always run what was just built.
restart_if_rebuilt() {
  local name=$1 dir=$2
  is_running "$name" || return 0
  if [ -n "$(find "$ROOT/dist/$dir" "$ROOT/dist/lib" -name '*.js' -newer "$RUN/$name.pid" -print -quit 2>/dev/null)" ]; then
    say "$name: code changed since it started, restarting"
    stop_daemon "$name" 20
  fi
}

# started_since_last_start NAME TEXT : the component logged TEXT since its latest start.
started_since_last_start() {
  awk -v text="$2" '/^==== .* starting /{found=0} index($0, text){found=1} END{exit !found}' "$LOGS/$1.log"
}

# write_kubeconfig FILE USER [CERT] : a kubeconfig for the local apiserver, with the client
# certificate CERT (default USER) of the local PKI embedded. An existing file is kept.
write_kubeconfig() {
  local file=$1 user=$2 cert=${3:-$2}
  [ -f "$file" ] && return 0
  local k=("$K8S_BIN/kubectl" --kubeconfig "$file.tmp")
  rm -f "$file.tmp"
  "${k[@]}" config set-cluster svc-local --server "https://127.0.0.1:$APISERVER_PORT" \
    --certificate-authority "$PKI/ca.crt" --embed-certs >/dev/null
  "${k[@]}" config set-credentials "$user" --client-certificate "$PKI/$cert.crt" \
    --client-key "$PKI/$cert.key" --embed-certs >/dev/null
  "${k[@]}" config set-context svc-local --cluster svc-local --user "$user" >/dev/null
  "${k[@]}" config use-context svc-local >/dev/null
  chmod 600 "$file.tmp"
  mv "$file.tmp" "$file"
}

# The secret the controllers mint machines' artifact and builds' credentials with, and the API and
# the registry's token service check them by (lib/artifacts/credential.ts): made once, kept with the
# state, readable by root only. hack/nodes.sh needs it (registry-auth) before hack/dev.sh runs.
ensure_artifact_key() {
  local key="$STATE/artifact-key"
  [ -s "$key" ] && return 0
  mkdir -p "$STATE"
  (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '\n=' >"$key.tmp") && mv "$key.tmp" "$key"
}

# ensure_s3_secret : the local object store's secret key, made once.
ensure_s3_secret() {
  local key="$STATE/s3-secret"
  [ -s "$key" ] && return 0
  mkdir -p "$STATE"
  (umask 077 && head -c 30 /dev/urandom | base64 | tr -d '\n=/+' >"$key.tmp") && mv "$key.tmp" "$key"
}

# status_line NAME : one line saying whether NAME runs; a dead part shows its log tail.
status_line() {
  if is_running "$1"; then
    say "$1: running (pid $(pid_of "$1"))"
  elif [ -f "$RUN/$1.pid" ]; then
    say "$1: DEAD (pid file left behind)"
    log_tail "$1" 10
    return 1
  else
    say "$1: stopped"
  fi
}

# ---- releases built from a Go module (hack/build-helm.sh, hack/build-pebble.sh) -----------------
# go_module NAME MODULE@VERSION WORK : the release's module, downloaded through the Go module proxy
# into the cache's module cache (nothing is fetched when it is there already), its directory there
# (read-only) in GO_MODULE_DIR. Exports the Go environment the builds of the cache use.
go_module() {
  local name=$1 module=$2 work=$3
  command -v go >/dev/null || { echo "$name: go is required on PATH" >&2; exit 1; }
  export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" GOFLAGS="-mod=mod" GOTOOLCHAIN=local CGO_ENABLED=0
  mkdir -p "$work"
  # -json says what failed on stdout (its "Error"), which is shown when the download fails.
  local json
  json=$(cd "$work" && go mod download -json "$module") || true
  GO_MODULE_DIR=$(sed -n 's/.*"Dir": "\(.*\)",/\1/p' <<<"$json")
  if [ ! -f "$GO_MODULE_DIR/go.mod" ]; then
    echo "$name: could not download $module: $(sed -n 's/.*"Error": "\(.*\)",*$/\1/p' <<<"$json")" >&2
    exit 1
  fi
}

# go_build NAME MODULE@VERSION BIN WHAT BUILD : compiles a release from its own module (its go.mod
# pins every dependency, replace directives and all, so `go build` of its commands resolves exactly
# the versions the release pins), copied out of the read-only module cache into
# $CACHE/build-NAME-VERSION/src; the function BUILD runs there and writes the binaries into BIN.
# WHAT is said before it starts ("NAME: compiling WHAT"). The copy is removed afterwards.
go_build() {
  local name=$1 module=$2 bin=$3 what=$4 build=$5
  local work="$CACHE/build-$name-${module##*@}" start
  mkdir -p "$work" "$bin"
  go_module "$name" "$module" "$work"
  cd "$work"
  rm -rf src && cp -r "$GO_MODULE_DIR" src && chmod -R u+w src
  cd src
  echo "$name: compiling $what"
  start=$(date +%s)
  "$build"
  cd .. && rm -rf src
  echo "$name: built in $(($(date +%s) - start))s into $bin"
}
