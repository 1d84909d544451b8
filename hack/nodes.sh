#!/usr/bin/env bash
# The local platform's two worker nodes, as k3s and k0s run a node on a host: per node an upstream
# kubelet with its own containerd 2 (runc, the Debian CNI bridge and host-local plugins), plus for
# the host one kube-proxy, the NetworkPolicy agent, the volume provisioner, the local OCI registry
# both containerd instances pull from, the DNS server custom domains are verified against, and the
# ACME server their certificates come from.
#   nodes.sh images  start the registry, build and push what is missing or stale (make images)
#   nodes.sh up      start what is not running (the DNS and ACME servers, registry, images, containerd,
#                    kubelets, kube-proxy, the policy agent, the volume provisioner)
#   nodes.sh down    stop them, their pods with them
#   nodes.sh status  say what runs; a dead part is shown with its log tail
# Every node has its own cgroup root, root directory, ports, containerd and bridge/subnet, so the
# two never touch each other's pods (docs/decisions/0014-real-nodes.md).
source "$(dirname "$0")/lib.sh"

NODES=(${SVC_NODES:-local-a,local-b})
NODES=(${NODES[@]//,/ })
POD_CIDR=${SVC_NODE_POD_SUBNET:-10.244.0.0/16}
KUBELET_PORT=${SVC_NODE_KUBELET_PORT:-10250}
NODES_DIR="$STATE/nodes"
# CPU priority of the nodes' daemons and everything they start (nice; 0 to share the CPU evenly).
NODE_NICE=${SVC_NODE_NICE:-10}
KCONF_DIR="$STATE/kubeconfigs"
# Runtime state (sockets, mounts of running containers) lives on /run, as containerd expects.
RUN_DIR=/run/svc-nodes/$(printf '%s' "$STATE" | sha256sum | cut -c1-8)

kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }

node_index() { local i; for i in "${!NODES[@]}"; do [ "${NODES[$i]}" = "$1" ] && echo "$i" && return; done; return 1; }
node_subnet() { echo "$POD_PREFIX.$1.0/24"; }
node_gateway() { echo "$POD_PREFIX.$1.1"; }
node_bridge() { echo "svc-$1" | cut -c1-15; }

# ---- the registry and its token service --------------------------------------------------------
# The registry takes only tokens registry-auth/ signed (docs/decisions/0025-registry-auth.md): a
# node pulls the platform's repositories with the nodes' credential, an account's pods their
# account's with its pull Secret, hack/images.sh pushes with the operator's.

# ensure_registry_credentials : the operator's and the nodes' passwords (made once, root only), the
# clients file registry-auth checks them by (their SHA-256 only), and the operator's auth file that
# skopeo reads. Rotating one: remove its file and run make dev (containerd restarts on a new node
# password; registry-auth reads the clients file again when it changes).
ensure_registry_credentials() {
  mkdir -p "$REGISTRY_AUTH_DIR" && chmod 700 "$REGISTRY_AUTH_DIR"
  local who
  for who in operator node; do
    [ -s "$REGISTRY_AUTH_DIR/$who" ] ||
      (umask 077 && head -c 48 /dev/urandom | base64 -w0 | tr -d '=/+' | cut -c1-43 >"$REGISTRY_AUTH_DIR/$who.tmp" && mv "$REGISTRY_AUTH_DIR/$who.tmp" "$REGISTRY_AUTH_DIR/$who")
  done
  local operator node
  operator=$(cat "$REGISTRY_AUTH_DIR/operator") node=$(cat "$REGISTRY_AUTH_DIR/node")
  write_if_changed "$REGISTRY_AUTH_DIR/clients" <<CLIENTS
# Written by hack/nodes.sh: the SHA-256 of each platform credential's password (registry-auth/).
platform/operator $(printf '%s' "$operator" | sha256sum | cut -c1-64)
platform/node $(printf '%s' "$node" | sha256sum | cut -c1-64)
CLIENTS
  (umask 077 && write_if_changed "$REGISTRY_AUTH_DIR/operator-auth.json" <<JSON
{"auths": {"127.0.0.1:$REGISTRY_PORT": {"auth": "$(printf '%s' "platform/operator:$operator" | base64 -w0)"}}}
JSON
  )
}

# A part started before FILE last changed (a rotated token key) is stopped, to start again on it.
restart_if_older_than() {
  if is_running "$1" && [ "$2" -nt "$RUN/$1.pid" ]; then
    say "$1: $(basename "$2") changed since it started, restarting"
    stop_daemon "$1" 10
  fi
}

start_registry_auth() {
  ensure_artifact_key
  ensure_registry_credentials
  mkdir -p "$KCONF_DIR"
  write_kubeconfig "$KCONF_DIR/registry-auth.kubeconfig" svc:registry-auth registry-auth
  restart_if_rebuilt registry-auth registry-auth
  restart_if_older_than registry-auth "$PKI/registry-token.crt"
  SVC_STATE_DIR="$STATE" KUBECONFIG="$KCONF_DIR/registry-auth.kubeconfig" SVC_REGISTRY_AUTH_PORT="$REGISTRY_AUTH_PORT" \
    SVC_REGISTRY_SERVICE="$REGISTRY_SERVICE" SVC_REGISTRY_TOKEN_ISSUER="$REGISTRY_ISSUER" \
    start_daemon registry-auth node --enable-source-maps "$ROOT/dist/registry-auth/main.js"
  wait_ready registry-auth 30 curl -fsS --max-time 2 "http://127.0.0.1:$REGISTRY_AUTH_PORT/health"
}

start_registry() {
  start_registry_auth
  mkdir -p "$STATE/registry"
  # Errors only: every pull starts with a 401 challenge, which distribution logs as a warning.
  write_if_changed "$STATE/registry.yml" <<YAML
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $STATE/registry}
  delete: {enabled: true}
http:
  addr: 127.0.0.1:$REGISTRY_PORT
auth:
  token:
    realm: http://127.0.0.1:$REGISTRY_AUTH_PORT/token
    service: $REGISTRY_SERVICE
    issuer: $REGISTRY_ISSUER
    rootcertbundle: $PKI/registry-token.crt
YAML
  restart_if_changed registry "$STATE/registry.yml"
  restart_if_older_than registry "$PKI/registry-token.crt"
  start_daemon registry docker-registry serve "$STATE/registry.yml"
  # Any answer will do: /v2/ is a 401 to anyone without a token.
  wait_ready registry 30 curl -sS -o /dev/null --max-time 2 "http://127.0.0.1:$REGISTRY_PORT/v2/"
}

# ---- the DNS server ----------------------------------------------------------------------------
# Pebble's pebble-challtestsrv (docs/decisions/0027-app-domains.md): the API verifies custom
# domains' records through it (SVC_DOMAINS_DNS_SERVERS, hack/dev.sh), tests publish and remove
# records through its management API (test/support/dns.ts). DNS only: every challenge server is off,
# and so are its default answers (by default any A or AAAA query it has no record for gets
# 127.0.0.1 or ::1, and a name that resolves whatever it is would verify any domain).
start_dns() {
  "$ROOT/hack/build-pebble.sh"
  local args=(-dnsserver "127.0.0.1:$DNS_PORT" -management "127.0.0.1:$DNS_MANAGEMENT_PORT"
    -defaultIPv4 "" -defaultIPv6 "" -http01 "" -https01 "" -tlsalpn01 "" -doh "")
  # Restarted when its flags (SVC_DNS_PORT, say) or its binary (PEBBLE_VERSION) changed. Not through
  # a pipe: write_if_changed's note of a change (CHANGED) would be lost in the pipe's subshell.
  write_if_changed "$STATE/dns.args" <<<"$(printf '%s\n' "${args[@]}")"
  restart_if_changed dns "$STATE/dns.args"
  restart_if_older_than dns "$PEBBLE_BIN/pebble-challtestsrv"
  start_daemon dns "$PEBBLE_BIN/pebble-challtestsrv" "${args[@]}"
  # Any answer will do: the management API has no health path (an unknown one is a 404).
  wait_ready dns 30 curl -sS -o /dev/null --max-time 2 "http://127.0.0.1:$DNS_MANAGEMENT_PORT/"
}

# ---- the ACME server ---------------------------------------------------------------------------
# Pebble, Let's Encrypt's test CA (docs/decisions/0028-https.md): the API orders custom domains'
# certificates from its directory (SVC_ACME_DIRECTORY_URL, trusting SVC_ACME_CA_FILE, hack/dev.sh).
# Its VA resolves a name through the `dns` part and asks for the HTTP-01 challenge at that address
# on ingress-auth's HTTP port, so a domain whose A record is 127.0.0.1 is validated by the local
# ingress-auth. It validates at once (no random sleep) and rejects no good nonce (5% by default).
# Its CA is made anew at each start: `curl -sk https://127.0.0.1:15000/roots/0` is the root of the
# certificates it issued since. Orders and accounts live in its memory only.
ACME_PORT=${SVC_ACME_PORT:-14000}
ACME_MANAGEMENT_PORT=${SVC_ACME_MANAGEMENT_PORT:-15000}
# Pebble's own HTTPS certificate, from the release (hack/build-pebble.sh copies it into the cache).
PEBBLE_CERTS="${PEBBLE_BIN%/bin}/certs"

start_acme() {
  "$ROOT/hack/build-pebble.sh"
  # TLS-ALPN-01 is not used (the issuer answers HTTP-01): its port is one nothing listens on.
  write_if_changed "$STATE/acme.json" <<JSON
{
  "pebble": {
    "listenAddress": "127.0.0.1:$ACME_PORT",
    "managementListenAddress": "127.0.0.1:$ACME_MANAGEMENT_PORT",
    "certificate": "$PEBBLE_CERTS/localhost/cert.pem",
    "privateKey": "$PEBBLE_CERTS/localhost/key.pem",
    "httpPort": ${SVC_PROXY_PORT:-8081},
    "tlsPort": 15001,
    "ocspResponderURL": "",
    "externalAccountBindingRequired": false,
    "domainBlocklist": [],
    "retryAfter": {"authz": 3, "order": 5}
  }
}
JSON
  local args=(PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 "$PEBBLE_BIN/pebble" -config "$STATE/acme.json" -dnsserver "127.0.0.1:$DNS_PORT")
  # Restarted when its configuration, its environment and flags or its binary changed (as the `dns` part).
  write_if_changed "$STATE/acme.args" <<<"$(printf '%s\n' "${args[@]}")"
  restart_if_changed acme "$STATE/acme.json"
  restart_if_changed acme "$STATE/acme.args"
  restart_if_older_than acme "$PEBBLE_BIN/pebble"
  start_daemon acme env "${args[@]}"
  # Pebble answers only a request with a User-Agent (curl sends one).
  wait_ready acme 30 curl -fsS -o /dev/null --max-time 2 --cacert "$PEBBLE_CERTS/pebble.minica.pem" "https://127.0.0.1:$ACME_PORT/dir"
}

# ---- user namespaces ---------------------------------------------------------------------------
# A pod with hostUsers: false gets 65536 host IDs (idsPerPod) for its user namespace from the kubelet,
# out of the subordinate IDs of the user `kubelet` (/etc/subuid and /etc/subgid, which it reads with
# getsubids); with no such user it takes every ID from 65536 up. Two kubelets on one host would then
# give the same IDs to pods of both nodes. So the host's range is registered for `kubelet` (useradd
# gives it to no other user then), and each node's kubelet has on its PATH a getsubids answering
# with the node's own slice of it: 256 pods' worth, as maxPods is 250. write_userns_ids returns 1
# (and `up` stops) when those IDs cannot be had: a user namespace would otherwise share them.
USERNS_IDS_PER_POD=65536
USERNS_NODE_IDS=$((256 * USERNS_IDS_PER_POD))
# 2^30 up, 16 nodes' worth, unless /etc/subuid gives `kubelet` a range already.
USERNS_FIRST_ID=${SVC_USERNS_FIRST_ID:-1073741824}
USERNS_IDS=$((16 * USERNS_NODE_IDS))

# write_userns_ids NODE INDEX : the node's getsubids ($NODES_DIR/NODE/bin, first on its kubelet's PATH).
write_userns_ids() {
  local node=$1 i=$2 f line first count start
  id -u kubelet >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kubelet
  for f in /etc/subuid /etc/subgid; do
    [ -f "$f" ] || touch "$f"
    grep -q '^kubelet:' "$f" || echo "kubelet:$USERNS_FIRST_ID:$USERNS_IDS" >>"$f"
  done
  line=$(grep -m1 '^kubelet:' /etc/subuid)
  if [ "$line" != "$(grep -m1 '^kubelet:' /etc/subgid)" ]; then
    say "nodes: the kubelet user's ranges in /etc/subuid and /etc/subgid differ; the kubelet needs one range for both" >&2
    return 1
  fi
  IFS=: read -r _ first count <<<"$line"
  start=$((first + i * USERNS_NODE_IDS))
  if ((first % USERNS_IDS_PER_POD != 0 || start + USERNS_NODE_IDS > first + count)); then
    say "nodes: the kubelet user's range in /etc/subuid ($line) has no slice of $USERNS_NODE_IDS IDs for $node (node $i), or does not start at a multiple of $USERNS_IDS_PER_POD" >&2
    return 1
  fi
  mkdir -p "$NODES_DIR/$node/bin"
  write_if_changed "$NODES_DIR/$node/bin/getsubids" <<SH
#!/bin/sh
# getsubids for the kubelet of $node (hack/nodes.sh): its slice of the kubelet user's range ($line).
[ "\$1" = -g ] && shift
[ "\$1" = kubelet ] || { echo "getsubids: only the kubelet's IDs are known here" >&2; exit 1; }
echo "0: kubelet $start $USERNS_NODE_IDS"
SH
  chmod 755 "$NODES_DIR/$node/bin/getsubids"
}

# ---- one node ----------------------------------------------------------------------------------
# The cgroup the node's kubelet puts every pod under, in each v1 hierarchy (or the v2 tree).
make_cgroup_root() {
  local name=$1 d
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p "/sys/fs/cgroup/$name"
    for c in cpu cpuset memory pids io; do echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true; done
  else
    for d in /sys/fs/cgroup/*/; do
      [ "$(basename "$d")" = unified ] && continue
      mountpoint -q "$d" && mkdir -p "$d$name"
    done
  fi
}

setup_network() {
  local i=$1 bridge gateway
  bridge=$(node_bridge "${NODES[$i]}") gateway=$(node_gateway "$i")
  # The bridge exists before the kubelet starts: its gateway address is the node's InternalIP.
  ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
  # Read whole before matching: under pipefail, `ip ... | grep -q` fails when grep stops reading early.
  local addrs; addrs=$(ip -4 addr show dev "$bridge")
  [[ "$addrs" == *"inet $gateway/"* ]] || ip addr add "$gateway/24" dev "$bridge"
  ip link set "$bridge" up
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 2>/dev/null || sysctl -qw net.ipv4.ip_forward=1
}

# The host's process IDs: 32,768 by default, which one account at its quota of pods (50 x podPidsLimit
# 1,024) could take whole (issue 30). Raised to the kernel's maximum, so that an account holds under
# 2% of them and the kubelets' eviction on PID pressure comes first.
host_limits() {
  local max=4194304
  (($(cat /proc/sys/kernel/pid_max) >= max)) || sysctl -qw kernel.pid_max=$max
}

# The host's firewall for pods, before any policy: a pod reaches the host only on the machine ports
# of the nodes' gateways (MACHINE_PORTS: the API's machine listener), and nothing outside the pod network at all (Services
# are translated to pod addresses before this). Rejected, not dropped: a refused connection fails
# at once instead of hanging a tenant's request until its timeout.
host_firewall() {
  local ports=${MACHINE_PORTS//-/:} chain
  for chain in SVC-PODS-INPUT SVC-PODS-FORWARD; do iptables -w -N "$chain" 2>/dev/null || iptables -w -F "$chain"; done
  # NetworkPolicy (policy-agent fills SVC-POLICY; until it runs, the chain is empty and admits).
  iptables -w -N SVC-POLICY 2>/dev/null || true
  # The machine ports only on the nodes' gateways (where pods are told the listener is), never on the
  # host's other addresses: a sandbox with its network on, whose policy excepts the gateways, reached
  # the listener on the host's own address (issue 30).
  local gateways="" i
  for i in "${!NODES[@]}"; do gateways+="${gateways:+,}$(node_gateway "$i")"; done
  iptables -w -A SVC-PODS-INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  iptables -w -A SVC-PODS-INPUT -p tcp -d "$gateways" -m multiport --dports "$ports" -j SVC-POLICY
  iptables -w -A SVC-PODS-INPUT -p tcp -d "$gateways" -m multiport --dports "$ports" -j ACCEPT
  # The apiserver, only as the `kubernetes` Service (what in-cluster clients use), and only for pods
  # whose egress policy admits it: tenants' machines and builds are not admitted; a sandbox with its
  # network on is, as on any cluster, and meets the apiserver's authentication like anyone.
  local api="-p tcp --dport $APISERVER_PORT -m conntrack --ctstate DNAT --ctorigdst $KUBERNETES_SERVICE_IP --ctorigdstport 443"
  iptables -w -A SVC-PODS-INPUT $api -j SVC-POLICY
  iptables -w -A SVC-PODS-INPUT $api -j ACCEPT
  iptables -w -A SVC-PODS-INPUT -p tcp -j REJECT --reject-with tcp-reset
  iptables -w -A SVC-PODS-INPUT -j REJECT
  iptables -w -A SVC-PODS-FORWARD -d "$POD_CIDR" -j RETURN
  iptables -w -A SVC-PODS-FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
  iptables -w -A SVC-PODS-FORWARD -p tcp -j REJECT --reject-with tcp-reset
  iptables -w -A SVC-PODS-FORWARD -j REJECT
  # By the interface a packet came in on (the nodes' bridges, svc-*), not by its source address: the
  # host's own connections to its bridge addresses carry those as source too. Policy applies to
  # pod-to-pod traffic (FORWARD, bridged or routed) and host-to-pod traffic (OUTPUT to a bridge).
  iptables -w -C INPUT -i svc-+ -j SVC-PODS-INPUT 2>/dev/null || iptables -w -I INPUT 1 -i svc-+ -j SVC-PODS-INPUT
  iptables -w -C FORWARD -j SVC-POLICY 2>/dev/null || iptables -w -I FORWARD 1 -j SVC-POLICY
  iptables -w -C FORWARD -i svc-+ -j SVC-PODS-FORWARD 2>/dev/null || iptables -w -I FORWARD 1 -i svc-+ -j SVC-PODS-FORWARD
  iptables -w -C OUTPUT -o svc-+ -j SVC-POLICY 2>/dev/null || iptables -w -I OUTPUT 1 -o svc-+ -j SVC-POLICY
}

# The OCI base spec of the svc-sandbox runtime: containerd's default, with no capabilities in any
# set (CRI only adds to the base what a pod asks, and PSA restricted refuses adds), a read-only root
# whatever the pod says, and 128 processes per container, which the pod spec cannot raise. (No new
# privileges is set too, but CRI overrides it from the pod's allowPrivilegeEscalation.) No rlimits:
# runc sets those with prlimit() from outside the container, which for a user-namespaced pod (a
# process of another uid) needs CAP_SYS_RESOURCE, and this machine's root lacks it: the sandbox
# image's entrypoint lowers them itself (hack/images.sh; docs/decisions/0022-runtime.md).
write_sandbox_spec() {
  # Made first, written after: the last command of a pipeline runs in a subshell, where
  # write_if_changed's note of a change (CHANGED, which restarts containerd) would be lost.
  local spec
  spec=$("$CONTAINERD_BIN/ctr" oci spec | node -e '
    let text = ""; process.stdin.on("data", (d) => (text += d)).on("end", () => {
      const spec = JSON.parse(text);
      for (const set of Object.keys(spec.process.capabilities)) spec.process.capabilities[set] = [];
      spec.process.noNewPrivileges = true;
      delete spec.process.rlimits;
      spec.root = { ...spec.root, readonly: true };
      spec.linux.resources = { ...spec.linux.resources, pids: { limit: 128 } };
      process.stdout.write(JSON.stringify(spec, null, 2) + "\n");
    });')
  write_if_changed "$NODES_DIR/sandbox-spec.json" <<<"$spec"
}

write_node_config() {
  local node=$1 i=$2 dir="$NODES_DIR/$1" run="$RUN_DIR/$1"
  local sock="$run/containerd.sock"
  mkdir -p "$dir/cni" "$dir/kubelet" "$dir/pods" "$dir/containerd" "$run" "$NODES_DIR/registry-hosts/127.0.0.1:$REGISTRY_PORT"
  cat >"$NODES_DIR/registry-hosts/127.0.0.1:$REGISTRY_PORT/hosts.toml" <<TOML
server = "http://127.0.0.1:$REGISTRY_PORT"
[host."http://127.0.0.1:$REGISTRY_PORT"]
  capabilities = ["pull", "resolve"]
TOML
  # shellcheck disable=SC1091
  source "$STATE/images.env"
  # containerd 2.3's configuration (version 4; `containerd config default` shows every key). Since
  # 2.0 the CRI plugin is split into images (io.containerd.cri.v1.images), runtime
  # (io.containerd.cri.v1.runtime) and the gRPC service with the streaming server
  # (io.containerd.grpc.v1.cri); since 2.3 the grpc/ttrpc listeners are plugins too. Everything
  # that defaults to a path of the host is the node's own: two containerd run here. NRI is off: its
  # socket is one per host (/var/run/nri/nri.sock), and nothing here uses it.
  write_if_changed "$dir/containerd.toml" <<TOML
version = 4
root = "$dir/containerd"
state = "$run/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing", "io.containerd.nri.v1.nri"]
[plugins."io.containerd.server.v1.grpc"]
  address = "$sock"
[plugins."io.containerd.server.v1.ttrpc"]
  address = "$run/containerd.sock.ttrpc"
# The shims' sockets (by default /run/containerd/s, the host's).
[plugins."io.containerd.shim.v1.manager"]
  socket_dir = "$run/s"
# Its bin/ goes first on containerd's PATH (by default /opt/containerd, the host's).
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$SVC_IMAGE_PAUSE"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$NODES_DIR/registry-hosts"
    # The nodes' own credential for the platform's registry, which opens its platform repositories
    # and no tenant's (docs/decisions/0025-registry-auth.md): what containerd pulls with when the
    # kubelet passes none (the pause image, pods that name no pull Secret). hosts.toml carries no
    # credentials, so it stays in the configs table (deprecated; kept through the 2.3 line).
    [plugins."io.containerd.cri.v1.images".registry.configs."127.0.0.1:$REGISTRY_PORT".auth]
      username = "platform/node"
      password = "$(cat "$REGISTRY_AUTH_DIR/node")"
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # This machine drops CAP_SYS_RESOURCE: a negative oom_score_adj cannot be written, so containers
  # keep the score they inherit instead of runc failing to start them.
  restrict_oom_score_adj = true
  max_container_log_line_size = 16384
  # Pods' network namespaces are mounted under the node's state ($run/state/...), not the host's
  # /var/run/netns: a node stopped with its pods (down, clear_other_runtime) leaves none behind.
  netns_mounts_under_state_dir = true
  # containerd 2.3's CRI asks every container's and sandbox's shim for its cgroup metrics once a
  # second by default (to compute CPU usage in nano-cores), about 30 cgroup files each: with 300
  # machines on this host that alone took most of both CPUs and stalled pod starts for minutes.
  # The kubelet takes its own stats from cAdvisor every 10 s, so 10 s loses nothing it uses.
  stats_collect_period = "10s"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    # The shim (containerd-shim-runc-v2) is found on containerd's PATH, which start_node puts
    # CONTAINERD_BIN first on; runc (RUNC_BIN) by absolute path.
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$RUNC_BIN"
        SystemdCgroup = false
    # The svc-sandbox RuntimeClass: runc too (gVisor's runsc does not build here, see
    # docs/decisions/0014-real-nodes.md), from a stricter base spec (write_sandbox_spec).
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.svc-sandbox]
      runtime_type = "io.containerd.runc.v2"
      base_runtime_spec = "$NODES_DIR/sandbox-spec.json"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.svc-sandbox.options]
        BinaryName = "$RUNC_BIN"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$dir/cni"
    max_conf_num = 1
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
  # It holds the nodes' registry password.
  chmod 600 "$dir/containerd.toml"
  cat >"$dir/cni/10-svc.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "svc-$node",
  "plugins": [
    {
      "type": "bridge", "bridge": "$(node_bridge "$node")", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$dir/ipam",
        "ranges": [[{"subnet": "$(node_subnet "$i")", "gateway": "$(node_gateway "$i")"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
  # The resolv.conf of pods with dnsPolicy Default (CoreDNS itself): no nameserver, nothing resolved
  # outside the cluster. Every other pod asks the cluster DNS (clusterDNS, start_cluster_dns).
  printf 'options ndots:1\n' >"$dir/resolv.conf"
  write_if_changed "$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(node_gateway "$i")
port: $((KUBELET_PORT + i))
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((KUBELET_PORT + 10 + i))
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$sock
cgroupDriver: cgroupfs
cgroupRoot: /svc-$node
failCgroupV1: false
failSwapOn: false
podCIDR: $(node_subnet "$i")
resolvConf: $dir/resolv.conf
clusterDomain: cluster.local
clusterDNS: [$CLUSTER_DNS_IP]
podLogsDir: $dir/pods
serializeImagePulls: false
# A /24 per node holds 253 addresses.
maxPods: 250
podPidsLimit: 1024
syncFrequency: 10s
fileCheckFrequency: 0s
nodeStatusUpdateFrequency: 5s
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
# Evicts before the host runs out of process IDs (with pid_max raised, host_limits, and podPidsLimit
# above: one account at its quota of pods holds a small share of them; test/security/pids.test.ts).
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%", pid.available: "10%"}
containerLogMaxSize: 10Mi
containerLogMaxFiles: 2
shutdownGracePeriod: 0s
# Pods with hostUsers: false (docs/decisions/0022-runtime.md): IDs from the node's getsubids.
userNamespaces: {idsPerPod: $USERNS_IDS_PER_POD}
YAML
  # The seccomp profiles pods name as Localhost: the kubelet reads them relative to seccomp/ under its
  # root directory (--root-dir, start_kubelet) when it creates a container, so a changed one restarts
  # nothing. svc-buildkit.json: BuildKit's pod, moby's default with runc's keyring calls and pivot_root
  # (hack/images/buildkit-seccomp.json, docs/decisions/0040-buildkit.md).
  mkdir -p "$dir/kubelet/seccomp"
  write_if_changed "$dir/kubelet/seccomp/svc-buildkit.json" <"$ROOT/hack/images/buildkit-seccomp.json"
}

# The volumes' filesystems (local-volumes: an ext4 image per volume, pvc-<uid>.img, mounted at the
# directory beside it), mounted again before the kubelets start: after `nodes.sh down` (which
# unmounts everything under the nodes) or a host restart, a kubelet would otherwise hand a pod the
# bare directory, unbounded and without the volume's data. A half-made image (.partial) is not one.
mount_volumes() {
  local img dir
  for img in "$NODES_DIR"/*/volumes/pvc-*.img; do
    [ -f "$img" ] || continue
    dir=${img%.img}
    mkdir -p "$dir"
    mountpoint -q "$dir" || mount -o loop,nosuid,nodev "$img" "$dir"
  done
}

# clear_other_runtime NODE : a node last run on another containerd (Debian's 1.6 before
# docs/decisions/0022, or another build) starts afresh: containerd 2 would have to take over the old
# one's tasks and sandboxes, so the node's pods are stopped and containerd's root and state removed
# (its images come again from the local registry); the kubelet then makes the pods again.
clear_other_runtime() {
  local node=$1 dir="$NODES_DIR/$1" run="$RUN_DIR/$1"
  if [ -e "$dir/containerd/io.containerd.metadata.v1.bolt/meta.db" ] && [ "$(cat "$dir/runtime" 2>/dev/null)" != "$CONTAINERD_BIN" ]; then
    say "containerd-$node: the runtime is now $CONTAINERD_BIN; stopping the node's pods and clearing its containerd"
    stop_daemon "kubelet-$node" 15
    stop_pods "$node"
    stop_daemon "containerd-$node" 15
    unmount_node "$node"
    rm -rf "$dir/containerd" "$run/state"
  fi
  mkdir -p "$dir"
  echo "$CONTAINERD_BIN" >"$dir/runtime"
}

start_node() {
  local node=$1 i; i=$(node_index "$node")
  local dir="$NODES_DIR/$node" run="$RUN_DIR/$node"
  setup_network "$i"
  make_cgroup_root "svc-$node"
  write_node_config "$node" "$i"
  write_userns_ids "$node" "$i"
  write_kubeconfig "$KCONF_DIR/kubelet-$node.kubeconfig" "system:node:$node" "node-$node"
  clear_other_runtime "$node"
  # Clearing a node unmounts everything under it, its volumes' filesystems too: mounted again.
  mount_volumes
  restart_if_changed "kubelet-$node" "$dir/kubelet.yaml"
  restart_if_changed "kubelet-$node" "$dir/bin/getsubids"
  restart_if_changed "containerd-$node" "$dir/containerd.toml"
  restart_if_changed "containerd-$node" "$NODES_DIR/sandbox-spec.json"
  # The nodes run at a lower CPU priority than the control plane and the platform (nice, inherited by
  # shims, runc and every container): on a cluster they are other machines, and here starting pods
  # (about a CPU-second each: bench/sandboxes) would otherwise starve the apiserver, the controllers
  # and the API that claims and serves the pods already running (docs/decisions/0016-sandboxes.md).
  # Runtime state of a containerd of this checkout that is gone with no shim of it left (a machine
  # whose last run was never stopped): started on it, containerd spends its start cleaning up tasks
  # whose shims and snapshots are gone, and fails. A containerd restarted under running pods keeps it.
  if ! is_running "containerd-$node" && ! pgrep -f "containerd-shim.*-address $run/containerd.sock" >/dev/null && [ -d "$run/state" ]; then
    say "containerd-$node: clearing runtime state left by an earlier run ($run/state)"
    { grep " $run/state" /proc/mounts || true; } | awk '{print $2}' | sort -r | xargs -r umount -l
    rm -rf "$run/state"
  fi
  # A socket left by a containerd that is gone (the same checkout's earlier run: the same $run) would
  # pass the wait below at once, and the kubelet started then finds nothing answering on it.
  is_running "containerd-$node" || rm -f "$run/containerd.sock" "$run/containerd.sock.ttrpc"
  # CONTAINERD_BIN first on PATH: containerd finds the shim (containerd-shim-runc-v2) there.
  start_daemon "containerd-$node" nice -n "$NODE_NICE" env PATH="$CONTAINERD_BIN:$PATH" \
    "$CONTAINERD_BIN/containerd" --config "$dir/containerd.toml" --log-level warn
  wait_ready "containerd-$node" 30 test -S "$run/containerd.sock"
  start_kubelet "$node"
}

start_kubelet() {
  local node=$1 i dir="$NODES_DIR/$1"
  i=$(node_index "$node")
  # The node's bin/ first on PATH: its getsubids (write_userns_ids).
  start_daemon "kubelet-$node" nice -n "$NODE_NICE" env PATH="$dir/bin:$PATH" "$K8S_BIN/kubelet" --config "$dir/kubelet.yaml" \
    --kubeconfig "$KCONF_DIR/kubelet-$node.kubeconfig" --hostname-override "$node" \
    --node-ip "$(node_gateway "$i")" --root-dir "$dir/kubelet" --cert-dir "$dir/kubelet/pki" \
    --node-labels "svc.dev/node=$node" -v 1
}

# wait_kubelet NODE : until the node reports Ready from this kubelet. The socket of a containerd
# just restarted answers before its CRI is initialized, and a kubelet started then exits at once
# ("server is not initialized yet"): it is started again, a few times.
wait_kubelet() {
  local node=$1 attempt
  for attempt in 1 2 3 4 5; do
    wait_ready "kubelet-$node" 90 node_ready "$node" 2>/dev/null && return 0
    started_since_last_start "kubelet-$node" 'server is not initialized yet' || break
    say "kubelet-$node: containerd's CRI was not initialized yet, starting the kubelet again"
    sleep 2
    start_kubelet "$node"
  done
  wait_ready "kubelet-$node" 1 node_ready "$node"
}

# pull_runtime_image NODE : the runtime image (every static, HTML, Markdown and handler-tree machine
# runs it) pulled into the node's containerd as the kubelet would, with the nodes' credential, so the
# first machine on the node does not wait for it (decision 0036; on a cluster the chart's prepull
# DaemonSet does this). Run at every `up`, after images.sh: a changed image is pulled when it changes.
pull_runtime_image() {
  local node=$1
  # shellcheck disable=SC1091
  source "$STATE/images.env"
  [ -n "${SVC_RUNTIME_IMAGE:-}" ] || return 0
  "$CONTAINERD_BIN/ctr" --address "$RUN_DIR/$node/containerd.sock" -n k8s.io images pull --plain-http \
    --hosts-dir "$NODES_DIR/registry-hosts" --user "platform/node:$(cat "$REGISTRY_AUTH_DIR/node")" \
    "$SVC_RUNTIME_IMAGE" >"$LOGS/pull-$node.log" 2>&1 ||
    say "nodes: $node could not pull $SVC_RUNTIME_IMAGE ahead of its first machine (see $LOGS/pull-$node.log); it will with that machine"
}

# write_if_changed FILE : stdin into FILE, unless FILE holds exactly that already.
# A running part whose configuration changed is restarted by the caller (CHANGED names the files).
CHANGED=()
write_if_changed() {
  local tmp="$1.tmp"
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1" && CHANGED+=("$1"); fi
}
# restart_if_changed NAME FILE : stop NAME when FILE was rewritten with new content this run.
restart_if_changed() {
  local f
  for f in "${CHANGED[@]}"; do
    if [ "$f" = "$2" ] && is_running "$1"; then
      say "$1: configuration changed, restarting"
      stop_daemon "$1" 15
    fi
  done
}

# node_ready NODE : Ready, as posted by the kubelet running now (a Node keeps the Ready condition
# of a kubelet gone for up to the controller manager's grace period).
node_ready() {
  local started ready
  started=$(date -u -r "$RUN/kubelet-$1.pid" +%FT%TZ) || return 1
  ready=$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null) || return 1
  [ "${ready%% *}" = True ] && [[ ! "${ready#* }" < "$started" ]]
}

start_kube_proxy() {
  write_kubeconfig "$KCONF_DIR/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  # Written only when it changes: kube-proxy exits when its configuration file is touched.
  write_if_changed "$NODES_DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $KCONF_DIR/kube-proxy.kubeconfig}
hostnameOverride: ${NODES[0]}
mode: iptables
clusterCIDR: $POD_CIDR
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
YAML
  start_daemon kube-proxy "$K8S_BIN/kube-proxy" --config "$NODES_DIR/kube-proxy.yaml" -v 1
  wait_ready kube-proxy 30 curl -fsS --max-time 2 http://127.0.0.1:10256/healthz
}

parts() {
  local n
  echo dns acme registry-auth registry
  for n in "${NODES[@]}"; do echo "containerd-$n" "kubelet-$n"; done
  echo kube-proxy policy-agent local-volumes
}

up() {
  # The nodes' runc and containerd, by absolute path: built (once, into the cache) before any node
  # starts, or every pod fails at its sandbox with "fork/exec …/runc: no such file".
  "$ROOT/hack/build-runc.sh"
  "$ROOT/hack/build-containerd.sh"
  "$ROOT/hack/certs.sh"
  start_dns
  start_acme
  start_registry
  "$ROOT/hack/images.sh"
  host_firewall
  host_limits
  mkdir -p "$NODES_DIR"
  write_sandbox_spec
  mount_volumes
  local n
  for n in "${NODES[@]}"; do start_node "$n"; done
  for n in "${NODES[@]}"; do
    wait_kubelet "$n"
    # A misspelt field of kubelet.yaml is only logged (lenient decoding), and silently ignored.
    if started_since_last_start "kubelet-$n" 'strict decoding error'; then
      say "kubelet-$n: its configuration has fields the kubelet does not know:"
      grep 'strict decoding error' "$LOGS/kubelet-$n.log" | tail -1
      exit 1
    fi
  done
  # The Node's podCIDR is the subnet its CNI hands out (set once: no controller allocates them here).
  local i
  for i in "${!NODES[@]}"; do
    [ -n "$(kubectl get node "${NODES[$i]}" -o jsonpath='{.spec.podCIDR}')" ] ||
      kubectl patch node "${NODES[$i]}" --type merge -p "{\"spec\":{\"podCIDR\":\"$(node_subnet "$i")\",\"podCIDRs\":[\"$(node_subnet "$i")\"]}}" >/dev/null
  done
  # Both nodes at once; `wait` on these only (the daemons started above are this shell's children too).
  local pulls=()
  for n in "${NODES[@]}"; do
    pull_runtime_image "$n" &
    pulls+=($!)
  done
  wait "${pulls[@]}"
  start_kube_proxy
  write_kubeconfig "$KCONF_DIR/policy-agent.kubeconfig" svc:policy-agent policy-agent
  write_kubeconfig "$KCONF_DIR/local-volumes.kubeconfig" svc:local-volumes local-volumes
  restart_if_rebuilt policy-agent policy-agent
  KUBECONFIG="$KCONF_DIR/policy-agent.kubeconfig" start_daemon policy-agent node --enable-source-maps "$ROOT/dist/policy-agent/main.js"
  wait_ready policy-agent 30 started_since_last_start policy-agent 'Policy agent started'
  restart_if_rebuilt local-volumes local-volumes
  KUBECONFIG="$KCONF_DIR/local-volumes.kubeconfig" start_daemon local-volumes node --enable-source-maps "$ROOT/dist/local-volumes/main.js"
  wait_ready local-volumes 30 started_since_last_start local-volumes 'Local volume provisioner started'
  start_cluster_dns
  say "nodes: ${NODES[*]} ready"
}

# start_cluster_dns : CoreDNS as kubeadm runs it (hack/manifests/coredns.yaml, the image hack/images.sh
# built), applied at every `up` (a changed image or Corefile rolls it), and waited for: a pod started
# before it answers would find no name.
start_cluster_dns() {
  # shellcheck disable=SC1091
  source "$STATE/images.env"
  sed -e "s|\${SVC_IMAGE_COREDNS}|$SVC_IMAGE_COREDNS|" -e "s|\${CLUSTER_DNS_IP}|$CLUSTER_DNS_IP|" "$ROOT/hack/manifests/coredns.yaml" |
    kubectl apply --server-side --force-conflicts --field-manager svc-local -f - >/dev/null
  if ! kubectl -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null; then
    say "cluster DNS: coredns is not ready after 120 s:"
    kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide >&2 || true
    exit 1
  fi
  say "cluster DNS: coredns ready at $CLUSTER_DNS_IP (kube-system/kube-dns)"
}

# Stopping a kubelet leaves its containers running; they go with their containerd's shims, and the
# mounts the kubelet made (emptyDirs, projected volumes) are undone so the state can be removed.
down() {
  local n pid
  stop_daemon local-volumes 10
  stop_daemon policy-agent 10
  stop_daemon kube-proxy 10
  for n in "${NODES[@]}"; do
    stop_daemon "kubelet-$n" 15
    stop_pods "$n"
    stop_daemon "containerd-$n" 15
    unmount_node "$n"
  done
  stop_daemon registry 5
  stop_daemon registry-auth 5
  stop_daemon acme 5
  stop_daemon dns 5
}

# unmount_node NODE : what the containers and the kubelet left mounted: root filesystems, shm, volumes.
unmount_node() {
  awk -v a="$NODES_DIR/$1/" -v b="$RUN_DIR/$1/" 'index($2, a) == 1 || index($2, b) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

# stop_pods NODE : kill every process in the node's cgroup root (its pods' containers), then the
# containerd shims that supervised them.
stop_pods() {
  local node=$1 root pid
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then root=/sys/fs/cgroup/svc-$node; else root=/sys/fs/cgroup/pids/svc-$node; fi
  if [ -d "$root" ]; then
    find "$root" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  fi
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $RUN_DIR/$node/containerd.sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done
}

status() {
  local rc=0 p
  for p in $(parts); do status_line "$p" || rc=1; done
  return $rc
}

case "${1:-}" in
  images) "$ROOT/hack/certs.sh" && start_registry && "$ROOT/hack/images.sh" ;;
  up) up ;;
  down) down ;;
  status) status ;;
  *) say "usage: $0 up|down|status" >&2; exit 2 ;;
esac
