#!/usr/bin/env bash
# The local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler as local processes (no Docker), built by hack/build-k8s.sh.
#   cluster.sh up      start what is not running, wait until healthy, install the CRDs
#   cluster.sh down    stop everything it started
#   cluster.sh status  say what runs; a dead part is shown with its log tail
source "$(dirname "$0")/lib.sh"

PARTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
KUBECONFIG_ADMIN="$STATE/kubeconfig"
KCONF_DIR="$STATE/kubeconfigs"

kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

https_ok() { curl -fsS --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$1"; }
insecure_ok() { curl -fsSk --max-time 2 "$1"; }

up() {
  "$ROOT/hack/build-k8s.sh"
  "$ROOT/hack/build-helm.sh"
  "$ROOT/hack/certs.sh"
  mkdir -p "$KCONF_DIR" "$STATE/etcd"
  write_kubeconfig "$KUBECONFIG_ADMIN" admin
  write_kubeconfig "$KCONF_DIR/kube-controller-manager.kubeconfig" kube-controller-manager
  write_kubeconfig "$KCONF_DIR/kube-scheduler.kubeconfig" kube-scheduler

  # --unsafe-no-fsync: this etcd holds a throw-away development cluster; skipping fsync makes
  # every apiserver write several times faster on virtual disks.
  start_daemon etcd "$K8S_BIN/etcd" --name svc-local --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "svc-local=http://127.0.0.1:$ETCD_PEER_PORT" \
    --listen-metrics-urls "" --unsafe-no-fsync --log-level warn
  wait_ready etcd 30 curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  # Pods reach the apiserver as on any cluster, through the `kubernetes` Service, whose endpoint is
  # the advertised address: the first node's bridge gateway (its bridge comes up with the nodes,
  # hence every address is bound). The nodes' firewall lets pods reach this port only through that
  # Service, and NetworkPolicy applies to it (hack/nodes.sh host_firewall).
  start_daemon kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 0.0.0.0 --advertise-address "$APISERVER_POD_ADDRESS" --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP,Hostname \
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --endpoint-reconciler-type lease \
    --profiling=false --event-ttl 2h -v 1
  wait_ready kube-apiserver 90 https_ok "https://127.0.0.1:$APISERVER_PORT/readyz"

  start_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$KCONF_DIR/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$KCONF_DIR/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$KCONF_DIR/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials=true --service-cluster-ip-range "$SERVICE_CIDR" \
    --controllers '*' --leader-elect=false --profiling=false -v 1 \
    --node-monitor-period 2s --node-monitor-grace-period 20s
  start_daemon kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig "$KCONF_DIR/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$KCONF_DIR/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$KCONF_DIR/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
    --leader-elect=false --profiling=false -v 1
  wait_ready kube-controller-manager 60 insecure_ok "https://127.0.0.1:$KCM_PORT/healthz"
  wait_ready kube-scheduler 60 insecure_ok "https://127.0.0.1:$SCHEDULER_PORT/healthz"

  install_crds
  say "cluster: up. export KUBECONFIG=$KUBECONFIG_ADMIN"
}

install_crds() {
  kubectl apply --server-side --force-conflicts --field-manager svc-platform -f "$ROOT/crds/" >/dev/null
  kubectl wait --for condition=Established --timeout 60s -f "$ROOT/crds/" >/dev/null
  say "crds: $(ls "$ROOT"/crds/*.yaml | wc -l) established"
  # A StorageClass's provisioner and a RuntimeClass's handler cannot change: one left by an older
  # checkout (node-agent's) is replaced.
  [ "$(kubectl get storageclass svc-local -o jsonpath='{.provisioner}' 2>/dev/null)" = svc.dev/node-agent ] && kubectl delete storageclass svc-local >/dev/null
  [ "$(kubectl get runtimeclass svc-sandbox -o jsonpath='{.handler}' 2>/dev/null)" = runsc ] && kubectl delete runtimeclass svc-sandbox >/dev/null
  # node-agent's provisioner rights were granted to every node (system:nodes): no longer.
  kubectl delete clusterrolebinding,clusterrole svc:node-agent-provisioner --ignore-not-found >/dev/null
  kubectl apply --server-side --force-conflicts --field-manager svc-platform \
    -f "$ROOT/hack/manifests/runtimeclass.yaml" -f "$ROOT/hack/manifests/local-storage.yaml" >/dev/null
}

down() {
  local i
  for ((i = ${#PARTS[@]} - 1; i >= 0; i--)); do stop_daemon "${PARTS[$i]}" 15; done
}

status() {
  local rc=0 p
  for p in "${PARTS[@]}"; do status_line "$p" || rc=1; done
  return $rc
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  crds) install_crds ;;
  *) say "usage: $0 up|down|status|crds" >&2; exit 2 ;;
esac
