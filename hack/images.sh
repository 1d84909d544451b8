#!/usr/bin/env bash
# Builds the local platform's OCI images without any daemon and pushes them to the local registry
# (hack/nodes.sh runs it), so both nodes' containerd pull real images:
#   pause        the pod sandbox: pause.c of the Kubernetes release, compiled with gcc -static
#   busybox      busybox-static and its applets
#   svc/coredns  CoreDNS (hack/build-coredns.sh), the cluster DNS
#   svc/cnpg     CloudNativePG's operator (hack/build-cnpg.sh)
#   svc/cnpg-postgres  Debian's PostgreSQL as CloudNativePG runs it (uid 26)
#   svc/versitygw  versitygw (hack/build-versitygw.sh), an S3 object store (the chart test's)
#   debian       a minimal Debian (mmdebstrap --variant=minbase)
#   python       Debian with python3
#   node         debian + Node.js of .node-version
#   svc/runtime  python + Node.js + the platform's runtime (static, HTML, Markdown, handler apps)
#   svc/postgres Debian's PostgreSQL server, the server of each Database
#   svc/builder  Debian with Python, pip, Git, Node.js, npm and corepack, and the platform's builder
#   svc/sandbox  Debian with the sandbox runtimes (Python, Node.js, Bash, Perl, Ruby, PHP) and the
#                platform's sandbox agent (sandbox-agent/)
#   svc/buildkit Debian with BuildKit (hack/build-buildkit.sh) and the nodes' runc, the builder of
#                full Dockerfiles, run in a user namespace (docs/decisions/0040-buildkit.md)
#   svc/api, svc/controllers, svc/ingress-auth   node + the platform's own code
# Each image's tag is a digest of what went into it (plus the git commit for the platform's own), so
# an image is rebuilt only when its inputs change and a rebuilt one never reuses a name. Layers are
# deterministic tars kept in one OCI layout in the cache, so unchanged layers are shared and pushed
# once. The resulting references are written to $STATE/images.env for the other scripts. The
# registry takes tokens only (docs/decisions/0025-registry-auth.md): every call here goes with the
# operator's credential (hack/nodes.sh makes it; registry-auth/ grants it push).
#   images.sh [build]   build what is missing or stale, push it, write images.env
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

IMAGES="$CACHE/images"
LAYOUT="$IMAGES/oci"
LAYERS="$IMAGES/layers"
REGISTRY="127.0.0.1:$REGISTRY_PORT"
# Bumped when a recipe below changes in a way its inputs do not show.
RECIPE=1
DEBIAN_SUITE=${SVC_DEBIAN_SUITE:-bookworm}
mkdir -p "$LAYERS"
[ -d "$LAYOUT" ] || umoci init --layout "$LAYOUT"

sha() { sha256sum "$@" | cut -c1-64; }
short() { printf '%s' "$*" | sha256sum | cut -c1-16; }

# tar_dir DIR OUT : a reproducible layer tar of DIR (same files, same bytes, same digest).
tar_dir() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$1" -cf "$2.tmp" . && mv "$2.tmp" "$2"
}

# Whole output first: under pipefail, `... | grep -q` fails when grep stops reading early.
in_layout() { local tags; tags=$(umoci ls --layout "$LAYOUT"); [[ $'\n'"$tags"$'\n' == *$'\n'"$1"$'\n'* ]]; }
# skopeo reads the operator's credential from this file (for pushes and the copies alias_tag makes).
export REGISTRY_AUTH_FILE="$REGISTRY_AUTH_DIR/operator-auth.json"
# registry_token REPOSITORY : a token to pull REPOSITORY, asked with the operator's credential
# (given to curl on stdin, never on a command line).
registry_token() {
  printf 'user = "platform/operator:%s"\n' "$(cat "$REGISTRY_AUTH_DIR/operator")" |
    curl -fsS -K - "http://127.0.0.1:$REGISTRY_AUTH_PORT/token?service=$REGISTRY_SERVICE&scope=repository:$1:pull" |
    sed -n 's/.*"token":"\([^"]*\)".*/\1/p'
}
in_registry() {
  local token; token=$(registry_token "$1") && [ -n "$token" ] || return 1
  curl -fs -o /dev/null -I -H "Authorization: Bearer $token" -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REGISTRY/v2/$1/manifests/$2"
}

# image NAME TAG BASE_REF CONFIG_ARGS... -- LAYER_TAR... : the image NAME:TAG in the layout, made of
# BASE_REF's layers ("" for none) and the given layers, unless it is there already.
image() {
  local name=$1 tag=$2 base=$3; shift 3
  local config=() ref="${1+}"
  while [ $# -gt 0 ] && [ "$1" != -- ]; do config+=("$1"); shift; done
  shift
  ref="${name//\//_}-$tag"
  if ! in_layout "$ref"; then
    say "images: building $name:$tag"
    if [ -n "$base" ]; then umoci tag --image "$LAYOUT:$base" "$ref"; else umoci new --image "$LAYOUT:$ref"; fi
    local layer
    for layer in "$@"; do
      umoci raw add-layer --image "$LAYOUT:$ref" --history.created 1970-01-01T00:00:00Z \
        --history.created_by "svc-platform hack/images.sh: $(basename "$layer")" "$layer"
    done
    umoci config --no-history --image "$LAYOUT:$ref" --author svc-platform --created 1970-01-01T00:00:00Z \
      --os linux --architecture "$(go env GOARCH 2>/dev/null || echo amd64)" "${config[@]}"
  fi
  if ! in_registry "$name" "$tag"; then
    say "images: pushing $REGISTRY/$name:$tag"
    skopeo copy --quiet --dest-tls-verify=false "oci:$LAYOUT:$ref" "docker://$REGISTRY/$name:$tag"
  fi
  BUILT_REF="$ref"
}

ENVFILE_LINES=()
record() { ENVFILE_LINES+=("$1=$REGISTRY/$2:$3"); }

# ---- pause and busybox: static binaries --------------------------------------------------------
pause_src="$(ls -d "$CACHE"/gomod/k8s.io/kubernetes@"$K8S_VERSION"/build/pause/linux/pause.c)"
tag=$(short "$RECIPE" "$(sha "$pause_src")" "$(gcc --version | head -1)")
if [ ! -f "$LAYERS/pause-$tag.tar" ]; then
  d=$(mktemp -d)
  gcc -Os -static -DVERSION="$K8S_VERSION-svc" -o "$d/pause" "$pause_src" && strip "$d/pause"
  tar_dir "$d" "$LAYERS/pause-$tag.tar"; rm -rf "$d"
fi
image svc/pause "$tag" "" --config.entrypoint /pause --config.user 65535:65535 -- "$LAYERS/pause-$tag.tar"
record SVC_IMAGE_PAUSE svc/pause "$tag"

# A user database for images that have none of their own: root, and the uid machines run as.
passwd_layer() {
  mkdir -p "$1/etc" "$1/tmp" "$1/home/app"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$1/etc/passwd"
  printf 'root:x:0:\napp:x:1000:\nnogroup:x:65534:\n' >"$1/etc/group"
  chown 1000:1000 "$1/home/app"
}

busybox_bin=$(command -v busybox)
tag=$(short "$RECIPE" "$(sha "$busybox_bin")")
if [ ! -f "$LAYERS/busybox-$tag.tar" ]; then
  d=$(mktemp -d)
  mkdir -p "$d/bin"
  cp "$busybox_bin" "$d/bin/busybox"
  for applet in $("$busybox_bin" --list); do [ "$applet" = busybox ] || ln -s busybox "$d/bin/$applet"; done
  passwd_layer "$d"
  tar --numeric-owner -C "$d" -cf /dev/null . # fail early on unreadable files
  tar_dir "$d" "$LAYERS/busybox-$tag.tar"; rm -rf "$d"
fi
image busybox "$tag" "" --config.cmd sh --config.env PATH=/bin -- "$LAYERS/busybox-$tag.tar"
record SVC_IMAGE_BUSYBOX busybox "$tag"
busybox_tag=$tag

# static_image NAME BINARY RECORD : an image of one static binary (/NAME, the entrypoint) and a user
# database, run as nobody; recorded as RECORD in images.env.
static_image() {
  local name=$1 bin=$2 record_as=$3 t d
  [ -x "$bin" ] || { echo "images: no $name binary at $bin (hack/build-$name.sh)" >&2; exit 1; }
  t=$(short "$RECIPE" "$(sha "$bin")")
  if [ ! -f "$LAYERS/$name-$t.tar" ]; then
    d=$(mktemp -d)
    install -D -m 0755 "$bin" "$d/$name"
    passwd_layer "$d"
    tar_dir "$d" "$LAYERS/$name-$t.tar"; rm -rf "$d"
  fi
  image "svc/$name" "$t" "" --config.entrypoint "/$name" --config.user 65534:65534 -- "$LAYERS/$name-$t.tar"
  record "$record_as" "svc/$name" "$t"
}

# The cluster DNS (hack/nodes.sh start_cluster_dns): CoreDNS (hack/build-coredns.sh).
"$ROOT/hack/build-coredns.sh"
static_image coredns "$COREDNS_BIN/coredns" SVC_IMAGE_COREDNS
# CloudNativePG's operator (hack/build-cnpg.sh), laid out as its own Dockerfile does: the binary at
# /operator/manager_<arch> (the operator lists the architectures it can copy into instances from
# there, relative to / as its working directory) and /manager linking to it, the entrypoint and what
# the bootstrap-controller init container of every instance runs.
"$ROOT/hack/build-cnpg.sh"
[ -x "$CNPG_BIN/manager" ] || { echo "images: no CloudNativePG manager at $CNPG_BIN/manager (hack/build-cnpg.sh)" >&2; exit 1; }
arch=$(go env GOARCH 2>/dev/null || echo amd64)
cnpg_tag=$(short "$RECIPE" "$(sha "$CNPG_BIN/manager")" "$arch")
if [ ! -f "$LAYERS/cnpg-$cnpg_tag.tar" ]; then
  d=$(mktemp -d)
  install -D -m 0755 "$CNPG_BIN/manager" "$d/operator/manager_$arch"
  ln -s "operator/manager_$arch" "$d/manager"
  passwd_layer "$d"
  tar_dir "$d" "$LAYERS/cnpg-$cnpg_tag.tar"; rm -rf "$d"
fi
image svc/cnpg "$cnpg_tag" "" --config.entrypoint /manager --config.workingdir / --config.user 65532:65532 -- "$LAYERS/cnpg-$cnpg_tag.tar"
record SVC_IMAGE_CNPG svc/cnpg "$cnpg_tag"
# The object store as a pod (the chart test's S3 endpoint): versitygw (hack/build-versitygw.sh).
"$ROOT/hack/build-versitygw.sh"
static_image versitygw "$VERSITYGW_BIN/versitygw" SVC_IMAGE_VERSITYGW

# ---- Debian bases ------------------------------------------------------------------------------
# debootstrap_layer NAME INCLUDES : a minbase Debian rootfs with INCLUDES as one layer.
debian_layer() {
  local name=$1 includes=$2 key
  key=$(short "$RECIPE" "$DEBIAN_SUITE" "$includes")
  DEBIAN_TAG=$key
  [ -f "$LAYERS/$name-$key.tar" ] && return 0
  say "images: mmdebstrap $DEBIAN_SUITE ($name${includes:+, with $includes}); about a minute"
  local d; d=$(mktemp -d)
  # Docs, man pages, locales and apt lists are not needed in a container's root.
  mmdebstrap --quiet --variant=minbase --mode=root ${includes:+--include="$includes"} \
    --dpkgopt='path-exclude=/usr/share/{doc,man,locale,info}/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*' \
    "$DEBIAN_SUITE" "$d/rootfs" >/dev/null
  printf 'app:x:1000:1000:app:/home/app:/bin/sh\n' >>"$d/rootfs/etc/passwd"
  printf 'app:x:1000:\n' >>"$d/rootfs/etc/group"
  mkdir -p "$d/rootfs/home/app" && chown 1000:1000 "$d/rootfs/home/app"
  tar_dir "$d/rootfs" "$LAYERS/$name-$key.tar"; rm -rf "$d"
}
path_env=--config.env=PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin

debian_layer debian ""
image debian "$DEBIAN_TAG" "" --config.cmd bash "$path_env" -- "$LAYERS/debian-$DEBIAN_TAG.tar"
debian_ref=$BUILT_REF debian_tag=$DEBIAN_TAG
record SVC_IMAGE_DEBIAN debian "$debian_tag"

debian_layer python "python3"
image python "$DEBIAN_TAG" "" --config.cmd python3 "$path_env" -- "$LAYERS/python-$DEBIAN_TAG.tar"
python_ref=$BUILT_REF python_tag=$DEBIAN_TAG
record SVC_IMAGE_PYTHON python "$python_tag"

# ---- Node.js -----------------------------------------------------------------------------------
node_key=$(short "$RECIPE" "$(sha "$NODE_BIN/node")")
if [ ! -f "$LAYERS/node-$node_key.tar" ]; then
  d=$(mktemp -d)
  mkdir -p "$d/usr/local/bin" && cp "$NODE_BIN/node" "$d/usr/local/bin/node"
  tar_dir "$d" "$LAYERS/node-$node_key.tar"; rm -rf "$d"
fi
tag=$(short "$debian_tag" "$node_key")
image node "$tag" "$debian_ref" --config.cmd node -- "$LAYERS/node-$node_key.tar"
node_ref=$BUILT_REF node_tag=$tag
record SVC_IMAGE_NODE node "$node_tag"

# ---- the platform's code -----------------------------------------------------------------------
# Production dependencies, keyed by the lock file: one layer every platform image shares.
deps_key=$(short "$RECIPE" "$(sha package-lock.json)" "$NODE_VERSION")
if [ ! -f "$LAYERS/deps-$deps_key.tar" ]; then
  say "images: production node_modules (npm ci --omit=dev)"
  d=$(mktemp -d)
  mkdir -p "$d/app"
  cp package.json package-lock.json "$d/app/"
  (cd "$d/app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  rm -f "$d/app/package-lock.json"
  tar_dir "$d" "$LAYERS/deps-$deps_key.tar"; rm -rf "$d"
fi
# The compiled code (dist/ without the tests) and the console the API serves (dist/console: its
# index.html, hashed script and styles), keyed by its content.
d=$(mktemp -d)
mkdir -p "$d/app/dist"
(cd dist && find . -path ./test -prune -o -path ./bench -prune -o -type f \( -name '*.js' -o -path './console/*' \) -print0 | tar --null -T - -cf -) | tar -x -C "$d/app/dist"
tar_dir "$d" "$d.tar"; rm -rf "$d"
code_key=$(sha "$d.tar" | cut -c1-16)
[ -f "$LAYERS/code-$code_key.tar" ] || mv "$d.tar" "$LAYERS/code-$code_key.tar"
rm -f "$d.tar"

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo nogit)
tag="$(short "$python_tag" "$node_key" "$deps_key" "$code_key")"
image svc/runtime "$tag" "$python_ref" --clear=config.cmd --config.workingdir /app --config.user 1000:1000 \
  --config.entrypoint node --config.entrypoint /app/dist/runtime/main.js "$path_env" --config.env NODE_ENV=production -- \
  "$LAYERS/node-$node_key.tar" "$LAYERS/deps-$deps_key.tar" "$LAYERS/code-$code_key.tar"
record SVC_RUNTIME_IMAGE svc/runtime "$tag"

# Sandboxes: the runtimes GET /runtimes lists come from Debian's packages (and Node.js of the
# platform), found by the agent at start (lib/sandbox/runtimes.ts).
debian_layer sandbox "python3,ruby,php-cli"
image sandbox-base "$DEBIAN_TAG" "" "$path_env" -- "$LAYERS/sandbox-$DEBIAN_TAG.tar"
sandbox_base_ref=$BUILT_REF sandbox_base_tag=$DEBIAN_TAG
# The agent runs on its own copy of node that its user may execute but not read: the kernel makes
# a process of such a file non-dumpable, so the tenant's code, the same uid, can neither read the
# agent's memory or environment (/proc/<agent>/mem, environ) nor ptrace it; --disable-sigusr1 keeps
# its inspector shut (docs/decisions/0016-sandboxes.md).
agent_node_key=$(short "$RECIPE" "$node_key" agent-node-0111)
if [ ! -f "$LAYERS/agent-node-$agent_node_key.tar" ]; then
  d=$(mktemp -d)
  install -D -m 0111 "$NODE_BIN/node" "$d/usr/local/lib/svc/agent-node"
  tar_dir "$d" "$LAYERS/agent-node-$agent_node_key.tar"; rm -rf "$d"
fi
# The entrypoint lowers the limits every command inherits before the agent starts, hard and soft, so
# nothing it runs can raise them again: 256 open files, no core dumps, files up to 2 GiB (the largest
# sandbox disk; the tmpfs size bounds the rest). The runtime's base spec cannot set them for a pod in
# a user namespace here (hack/nodes.sh, write_sandbox_spec); a process may always lower its own.
sandbox_entry='ulimit -n 256 && ulimit -c 0 && ulimit -f 4194304 && exec /usr/local/lib/svc/agent-node --disable-sigusr1 /app/dist/sandbox-agent/main.js'
tag="$(short "$sandbox_base_tag" "$node_key" "$agent_node_key" "$deps_key" "$code_key" "$sandbox_entry")"
image svc/sandbox "$tag" "$sandbox_base_ref" --clear=config.cmd --config.workingdir /home/app --config.user 1000:1000 \
  --config.entrypoint=/bin/sh --config.entrypoint=-c --config.entrypoint="$sandbox_entry" \
  "$path_env" --config.env NODE_ENV=production -- \
  "$LAYERS/node-$node_key.tar" "$LAYERS/agent-node-$agent_node_key.tar" "$LAYERS/deps-$deps_key.tar" "$LAYERS/code-$code_key.tar"
record SVC_SANDBOX_IMAGE svc/sandbox "$tag"

# Databases (controllers/database/): Debian's PostgreSQL server and an entrypoint that initializes
# an empty volume on first start (hack/images/postgres-entrypoint.sh).
debian_layer postgres "postgresql,curl"
image postgres-base "$DEBIAN_TAG" "" "$path_env" -- "$LAYERS/postgres-$DEBIAN_TAG.tar"
postgres_base_ref=$BUILT_REF postgres_base_tag=$DEBIAN_TAG
entry_key=$(short "$RECIPE" "$(sha hack/images/postgres-entrypoint.sh)")
if [ ! -f "$LAYERS/postgres-entry-$entry_key.tar" ]; then
  d=$(mktemp -d)
  install -D -m 0755 hack/images/postgres-entrypoint.sh "$d/usr/local/bin/svc-postgres"
  tar_dir "$d" "$LAYERS/postgres-entry-$entry_key.tar"; rm -rf "$d"
fi
tag=$(short "$postgres_base_tag" "$entry_key")
image svc/postgres "$tag" "$postgres_base_ref" --config.entrypoint /usr/local/bin/svc-postgres --config.user 1000:1000 "$path_env" -- \
  "$LAYERS/postgres-entry-$entry_key.tar"
record SVC_IMAGE_POSTGRES svc/postgres "$tag"

# CloudNativePG's operand (docs/decisions/0039-cloudnative-pg.md): the same Debian PostgreSQL, its
# binaries on PATH and its user at uid/gid 26, what the operator runs instances as. The operator
# copies its instance manager in; the image needs nothing else of ours.
# (All the matches, then the first: `| head -1` under pipefail fails when the writer is cut off.)
pg_bin=$(tar -tf "$LAYERS/postgres-$DEBIAN_TAG.tar" | sed -n 's|^\./\(usr/lib/postgresql/[0-9]*/bin\)/postgres$|/\1|p')
pg_bin=${pg_bin%%$'\n'*}
[ -n "$pg_bin" ] || { echo "images: no PostgreSQL server in $LAYERS/postgres-$DEBIAN_TAG.tar" >&2; exit 1; }
users_key=$(short "$RECIPE" "$DEBIAN_TAG" uid26)
if [ ! -f "$LAYERS/cnpg-users-$users_key.tar" ]; then
  d=$(mktemp -d)
  mkdir -p "$d/etc"
  tar -xOf "$LAYERS/postgres-$DEBIAN_TAG.tar" ./etc/passwd | awk -F: -v OFS=: '$1=="postgres"{$3=26;$4=26}1' >"$d/etc/passwd"
  tar -xOf "$LAYERS/postgres-$DEBIAN_TAG.tar" ./etc/group | awk -F: -v OFS=: '$1=="postgres"{$3=26}1' >"$d/etc/group"
  tar_dir "$d" "$LAYERS/cnpg-users-$users_key.tar"; rm -rf "$d"
fi
# The tag starts with the major version: the operator reads it from there (its webhook refuses
# an image whose tag does not).
pg_tag="$(basename "$(dirname "$pg_bin")")-$postgres_base_tag-$users_key"
image svc/cnpg-postgres "$pg_tag" "$postgres_base_ref" --config.user 26:26 \
  "--config.env=PATH=$pg_bin:/usr/local/bin:/usr/bin:/bin" -- "$LAYERS/cnpg-users-$users_key.tar"
record SVC_IMAGE_CNPG_POSTGRES svc/cnpg-postgres "$pg_tag"

# Builds (controllers/build/): Debian with Python, pip and Git, Node.js with npm and corepack (from the
# npm registry, at the versions below), and the platform's builder (builder/). Services built from a
# plan run on it too (api/builds/image.ts): it has both languages' runtimes.
debian_layer builder "python3,python3-pip,python3-venv,git,curl,ca-certificates"
image builder-base "$DEBIAN_TAG" "" "$path_env" -- "$LAYERS/builder-$DEBIAN_TAG.tar"
builder_base_ref=$BUILT_REF builder_base_tag=$DEBIAN_TAG
npm_tools="npm@10.9.8 corepack@0.36.0"
tools_key=$(short "$RECIPE" "$npm_tools")
if [ ! -f "$LAYERS/node-tools-$tools_key.tar" ]; then
  say "images: $npm_tools from the npm registry"
  d=$(mktemp -d)
  # shellcheck disable=SC2086
  npm install --global --prefix "$d/usr/local" --no-audit --no-fund --loglevel=error $npm_tools >/dev/null
  tar_dir "$d" "$LAYERS/node-tools-$tools_key.tar"; rm -rf "$d"
fi
tag="$(short "$builder_base_tag" "$node_key" "$tools_key" "$deps_key" "$code_key")"
image svc/builder "$tag" "$builder_base_ref" --clear=config.cmd --config.workingdir /workspace --config.user 1000:1000 \
  --config.entrypoint node --config.entrypoint /app/dist/builder/main.js "$path_env" -- \
  "$LAYERS/node-$node_key.tar" "$LAYERS/node-tools-$tools_key.tar" "$LAYERS/deps-$deps_key.tar" "$LAYERS/code-$code_key.tar"
record SVC_IMAGE_BUILDER svc/builder "$tag"

# BuildKit, the builder of full Dockerfiles (docs/decisions/0040-buildkit.md): buildkitd and buildctl
# (hack/build-buildkit.sh) and the nodes' runc (hack/build-runc.sh), which buildkitd's OCI worker runs
# each step with and finds on PATH, on the Debian base (runc links against its libc6 and
# libseccomp2), with the builder base's CA bundle (Debian's ca-certificates) for registries it pulls
# from. It runs as root only in a user namespace of its own (hostUsers: false) and the seccomp
# profile hack/nodes.sh installs as svc-buildkit.json.
"$ROOT/hack/build-buildkit.sh"
"$ROOT/hack/build-runc.sh"
BUILDKIT_BIN="$CACHE/buildkit-${BUILDKIT_VERSION:-v0.34.2}/bin"
for bin in "$BUILDKIT_BIN/buildkitd" "$BUILDKIT_BIN/buildctl" "$RUNC_BIN"; do
  [ -x "$bin" ] || { echo "images: no $(basename "$bin") at $bin (hack/build-buildkit.sh, hack/build-runc.sh)" >&2; exit 1; }
done
buildkit_key=$(short "$RECIPE" "$(sha "$BUILDKIT_BIN/buildkitd" "$BUILDKIT_BIN/buildctl" "$RUNC_BIN")" "$builder_base_tag")
if [ ! -f "$LAYERS/buildkit-$buildkit_key.tar" ]; then
  d=$(mktemp -d)
  install -D -m 0755 "$BUILDKIT_BIN/buildkitd" "$d/usr/local/bin/buildkitd"
  install -D -m 0755 "$BUILDKIT_BIN/buildctl" "$d/usr/local/bin/buildctl"
  install -D -m 0755 "$RUNC_BIN" "$d/usr/local/sbin/runc"
  mkdir -p "$d/etc/ssl/certs"
  tar -xOf "$LAYERS/builder-$builder_base_tag.tar" ./etc/ssl/certs/ca-certificates.crt >"$d/etc/ssl/certs/ca-certificates.crt"
  tar_dir "$d" "$LAYERS/buildkit-$buildkit_key.tar"; rm -rf "$d"
fi
tag=$(short "$debian_tag" "$buildkit_key")
image svc/buildkit "$tag" "$debian_ref" --clear=config.cmd --config.user 0:0 --config.entrypoint /usr/local/bin/buildkitd "$path_env" -- \
  "$LAYERS/buildkit-$buildkit_key.tar"
record SVC_IMAGE_BUILDKIT svc/buildkit "$tag"

for component in api controllers ingress-auth; do
  tag="$commit-$(short "$node_tag" "$deps_key" "$code_key")"
  image "svc/$component" "$tag" "$node_ref" --clear=config.cmd --config.workingdir /app --config.user 1000:1000 \
    --config.entrypoint node --config.entrypoint "/app/dist/$component/main.js" --config.env NODE_ENV=production -- \
    "$LAYERS/deps-$deps_key.tar" "$LAYERS/code-$code_key.tar"
  var=$(echo "SVC_IMAGE_${component//-/_}" | tr a-z A-Z)
  record "$var" "svc/$component" "$tag"
done

# ---- stable names for docs/examples -----------------------------------------------------------
# Examples are deployed as written (test/integration/compose-services.test.ts), so they name images
# by tags that do not change with every rebuild; each points at the image of this checkout.
alias_tag() {
  local name=$1 tag=$2 alias=$3
  skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false "docker://$REGISTRY/$name:$tag" "docker://$REGISTRY/$name:$alias"
}
alias_tag python "$python_tag" 3
alias_tag busybox "$busybox_tag" 1

printf '%s\n' "# Written by hack/images.sh: the local registry's images of this checkout." "${ENVFILE_LINES[@]}" >"$STATE/images.env.tmp"
mv "$STATE/images.env.tmp" "$STATE/images.env"
say "images: $(( ${#ENVFILE_LINES[@]} )) images in $REGISTRY ($STATE/images.env)"
