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

issue apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
issue admin "/O=system:masters/CN=kubernetes-admin" clientAuth
issue kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
issue kube-scheduler "/CN=system:kube-scheduler" clientAuth
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
issue front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca
# node-agent: a client identity per node (Node authorizer and NodeRestriction apply to it, as to a
# kubelet) and one serving certificate for its kubelet endpoints: on loopback, and on the host's
# address on the pod bridge, which is the nodes' InternalIP when pods have their own network (the
# apiserver's node proxy refuses loopback). A certificate from before the bridge address is reissued.
for node in ${SVC_NODES:-local-a local-b}; do
  issue "node-$node" "/O=system:nodes/CN=system:node:$node" clientAuth
done
pod_subnet=${SVC_NODE_POD_SUBNET:-10.244.0.0/16}
node_ip=$(echo "$pod_subnet" | cut -d. -f1-2).0.1
if [ -f kubelet-serving.crt ] && ! openssl x509 -in kubelet-serving.crt -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:$node_ip\b"; then
  rm -f kubelet-serving.crt
fi
issue kubelet-serving "/CN=svc-node-agent" serverAuth "IP:127.0.0.1,IP:$node_ip,DNS:localhost"

if [ ! -f sa.key ]; then
  newkey sa
  openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
fi
chmod 600 ./*.key
