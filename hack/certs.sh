#!/usr/bin/env bash
# Generates the local control plane's PKI once: a CA, serving and client certificates, and the
# service-account signing key. Existing files are kept, so restarting the cluster keeps every
# kubeconfig and token valid.
source "$(dirname "$0")/lib.sh"
mkdir -p "$PKI"
cd "$PKI"

newkey() { [ -f "$1.key" ] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

# new_ca NAME CN : a self-signed CA.
new_ca() {
  [ -f "$1.crt" ] && return 0
  newkey "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 3650 -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
}
new_ca ca svc-local-ca
# The front-proxy CA authenticates the apiserver to aggregated API servers (and lets components
# read requestheader settings without complaint); it must differ from the client CA.
new_ca front-proxy-ca svc-local-front-proxy-ca

# issue NAME SUBJECT USAGE [SANS] [CA] : a certificate signed by the CA (default: ca).
issue() {
  local name=$1 subject=$2 usage=$3 sans=${4:-} ca=${5:-ca}
  [ -f "$name.crt" ] && return 0
  newkey "$name"
  local ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$usage"
  [ -n "$sans" ] && ext="$ext
subjectAltName=$sans"
  openssl req -new -key "$name.key" -subj "$subject" 2>/dev/null |
    openssl x509 -req -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 3650 -out "$name.crt" \
      -extfile <(printf '%s\n' "$ext") 2>/dev/null
}

# The apiserver: on loopback (the host's parts), and as pods reach it: the `kubernetes` Service's
# ClusterIP and the address it advertises (hack/cluster.sh). One that lacks those is reissued.
if [ -f apiserver.crt ]; then
  have="$(openssl x509 -in apiserver.crt -noout -ext subjectAltName 2>/dev/null | tr -d ' \n'),"
  for ip in "$KUBERNETES_SERVICE_IP" "$APISERVER_POD_ADDRESS"; do [[ "$have" == *"IPAddress:$ip,"* ]] || rm -f apiserver.crt; done
fi
issue apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1,IP:$KUBERNETES_SERVICE_IP,IP:$APISERVER_POD_ADDRESS,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
issue admin "/O=system:masters/CN=kubernetes-admin" clientAuth
issue kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
issue kube-scheduler "/CN=system:kube-scheduler" clientAuth
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
issue front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca
# The kubelets (hack/nodes.sh): a client identity per node (the Node authorizer and NodeRestriction
# apply to it) and one serving certificate for every node's kubelet endpoint: on loopback and on
# each node's InternalIP, its bridge gateway x.y.<i>.1 (the apiserver refuses to proxy logs and exec
# to loopback). A certificate that lacks one of those addresses is reissued.
nodes=(${SVC_NODES:-local-a local-b})
nodes=(${nodes[@]//,/ })
pod_prefix=$POD_PREFIX
sans="IP:127.0.0.1,DNS:localhost"
for i in "${!nodes[@]}"; do
  issue "node-${nodes[$i]}" "/O=system:nodes/CN=system:node:${nodes[$i]}" clientAuth
  sans="$sans,IP:$pod_prefix.$i.1"
done
if [ -f kubelet-serving.crt ]; then
  have=$(openssl x509 -in kubelet-serving.crt -noout -ext subjectAltName 2>/dev/null | tr -d ' \n')
  for i in "${!nodes[@]}"; do [[ "$have" == *"IPAddress:$pod_prefix.$i.1,"* || "$have" == *"IPAddress:$pod_prefix.$i.1" ]] || rm -f kubelet-serving.crt; done
fi
issue kubelet-serving "/CN=svc-kubelet" serverAuth "$sans"
issue kube-proxy "/CN=system:kube-proxy" clientAuth
# The host's own parts, each with the ClusterRole of hack/manifests/local-storage.yaml.
issue policy-agent "/CN=svc:policy-agent" clientAuth
issue local-volumes "/CN=svc:local-volumes" clientAuth
issue registry-auth "/CN=svc:registry-auth" clientAuth

# The registry's token key, which registry-auth/ signs tokens with, and its self-signed certificate:
# the registry's rootcertbundle (hack/nodes.sh), the one signer of tokens it accepts. Rotating it:
# remove both files and run make dev (the registry and registry-auth restart on the new pair).
if [ ! -f registry-token.crt ]; then
  rm -f registry-token.key
  newkey registry-token
  openssl req -x509 -new -key registry-token.key -subj "/CN=svc-registry-auth" -days 3650 -out registry-token.crt 2>/dev/null
fi

if [ ! -f sa.key ]; then
  newkey sa
  openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
fi
chmod 600 ./*.key
