#!/usr/bin/env bash
# Installs what the local platform and the tests need on a fresh machine, and nothing when it is
# all there: Debian packages with apt-get, npm packages with npm ci (skipped while package-lock.json
# is unchanged). Go must already be on the machine; Kubernetes is built by hack/build-k8s.sh.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v curl >/dev/null || missing+=(curl)
command -v runuser >/dev/null || missing+=(util-linux)
command -v nsenter >/dev/null || missing+=(util-linux)
command -v ip >/dev/null || missing+=(iproute2)
command -v bwrap >/dev/null || missing+=(bubblewrap)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
# The nodes (hack/nodes.sh): the CNI plugins, iptables and ipset for kube-proxy and the policy agent,
# the local registry, and what hack/images.sh builds images with. Their containerd and runc are not
# Debian's (1.6.20, past its end of life, and 1.1.5, without the November 2025 fixes) but built
# from source (hack/build-containerd.sh, hack/build-runc.sh): runc with cgo against libseccomp.
command -v gcc >/dev/null || missing+=(gcc)
command -v pkg-config >/dev/null || missing+=(pkg-config)
[ -f /usr/include/seccomp.h ] || missing+=(libseccomp-dev)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
command -v ipset >/dev/null || missing+=(ipset)
command -v conntrack >/dev/null || missing+=(conntrack)
command -v docker-registry >/dev/null || missing+=(docker-registry)
# local-volumes formats each volume's own filesystem (a loop-mounted ext4 image of the claim's size).
command -v mkfs.ext4 >/dev/null || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ] || missing+=(e2fsprogs)
command -v umoci >/dev/null || missing+=(umoci)
command -v skopeo >/dev/null || missing+=(skopeo)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
# The API asks Git repositories what a ref points at (lib/builds/git.ts); tests serve one.
command -v git >/dev/null || missing+=(git)
# The DNS-01 tests' authoritative server (test/support/named.ts), which takes RFC 2136 updates signed with TSIG.
command -v named >/dev/null || [ -x /usr/sbin/named ] || missing+=(bind9)
# The static busybox (the `busybox` package is dynamic): ldd fails on a static binary, hence `|| true`.
bb_ldd=$(command -v busybox >/dev/null && { ldd "$(command -v busybox)" 2>&1 || true; }) || true
[[ "$bb_ldd" == *"not a dynamic"* ]] || missing+=(busybox-static)
# Headless browser of the sign-in tests (driven by playwright-core).
command -v chromium >/dev/null || missing+=(chromium)
# The CLI's interactive tests type into a real terminal (test/support/terminal.ts).
command -v tmux >/dev/null || missing+=(tmux)
# The shell completion tests load svc's zsh script in zsh (test/unit/cli-completion.test.ts).
command -v zsh >/dev/null || missing+=(zsh)
# `install-deps.sh bench`: the reference proxy and the load generator of bench/proxy too.
if [ "${1:-}" = bench ]; then
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
  command -v wrk >/dev/null || missing+=(wrk)
fi
if ((${#missing[@]})); then
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  say "deps: installing Debian packages: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v go >/dev/null || { say "deps: Go is required (1.26.8 or newer) to build Kubernetes and the nodes' containerd; install it from go.dev" >&2; exit 1; }

# Node.js $NODE_VERSION (the current LTS) from the npm registry's node-linux-<arch> package, into the
# cache: whatever Node the machine has only runs npm for this.
if [ ! -x "$NODE_BIN/node" ]; then
  command -v npm >/dev/null || { say "deps: npm is required once, to fetch Node.js $NODE_VERSION from the npm registry" >&2; exit 1; }
  case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) say "deps: no Node.js package for $(uname -m)" >&2; exit 1 ;; esac
  say "deps: Node.js $NODE_VERSION (npm package node-linux-$arch)"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$NODE_VERSION" >/dev/null && tar xzf ./*.tgz package/bin/node)
  mkdir -p "$NODE_BIN"
  mv "$tmp/package/bin/node" "$NODE_BIN/node.tmp" && mv "$NODE_BIN/node.tmp" "$NODE_BIN/node"
  rm -rf "$tmp"
fi
[ "$(node --version)" = "v$NODE_VERSION" ] || { say "deps: node on PATH is $(node --version), expected v$NODE_VERSION" >&2; exit 1; }

stamp=node_modules/.svc-package-lock.sha256
want=$( (sha256sum package-lock.json; node --version) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "deps: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi
