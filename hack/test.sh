#!/usr/bin/env bash
# Runs the test suite with the Node test runner and ends with its summary.
#   test.sh        unit and integration tests (make test starts the cluster and PostgreSQL first)
#   test.sh unit   unit tests only, nothing started
#   test.sh FILE.. only these compiled test files (dist/test/...)
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

if [[ "${1:-}" == *.js ]]; then
  files=("$@")
else
  dirs=(dist/test/unit)
  [ "${1:-all}" = unit ] || dirs+=(dist/test/integration dist/test/security)
  mapfile -t files < <(find "${dirs[@]}" -name '*.test.js' 2>/dev/null | sort)
fi
((${#files[@]})) || { say "test: no test files under ${dirs[*]} (did the build run?)" >&2; exit 1; }

export KUBECONFIG="$STATE/kubeconfig"
export SVC_K8S_BIN="$K8S_BIN"
export SVC_HELM_BIN="$HELM_BIN"
# Tests create a fresh database of their own on this server and drop it afterwards.
export SVC_TEST_PG_ADMIN_URL=${SVC_TEST_PG_ADMIN_URL:-postgres://svc@127.0.0.1:$PG_PORT/postgres}
export SVC_LOG_LEVEL=${SVC_LOG_LEVEL:-silent}
# The local DNS server (the `dns` part, hack/nodes.sh): tests publish records through its management
# API (test/support/dns.ts), and the APIs they start verify custom domains against it.
export SVC_TEST_DNS_MANAGEMENT_URL=${SVC_TEST_DNS_MANAGEMENT_URL:-http://127.0.0.1:$DNS_MANAGEMENT_PORT}
export SVC_DOMAINS_DNS_SERVERS=${SVC_DOMAINS_DNS_SERVERS:-127.0.0.1:$DNS_PORT}
# Pebble and its certificates (hack/build-pebble.sh; certs/ beside bin/): a test file that issues
# certificates starts a Pebble of its own (test/support/pebble.ts), which resolves through that server.
export SVC_PEBBLE_BIN="$PEBBLE_BIN"
# The local object store (hack/dev.sh's `s3` component): every test API keeps its artifacts in a
# bucket of its own there (test/support/object-store.ts).
export SVC_TEST_S3_ENDPOINT=${SVC_TEST_S3_ENDPOINT:-http://127.0.0.1:$S3_PORT}
export SVC_TEST_S3_ACCESS_KEY_ID=${SVC_TEST_S3_ACCESS_KEY_ID:-svc-dev}
# (Unit tests run without it: the secret is read only when the store has made one.)
if [ -z "${SVC_TEST_S3_SECRET_ACCESS_KEY:-}" ] && [ -s "$STATE/s3-secret" ]; then SVC_TEST_S3_SECRET_ACCESS_KEY=$(cat "$STATE/s3-secret"); fi
export SVC_TEST_S3_SECRET_ACCESS_KEY=${SVC_TEST_S3_SECRET_ACCESS_KEY:-}

# Files run SVC_TEST_CONCURRENCY at a time (most of an integration file's time is waiting on the
# cluster; 2 by default, one per core: two clean-clone runs in a row passed at 2 on containerd 2,
# docs/decisions/0026-format-lint-test-phases.md; 1 runs them one at a time), except those that stop
# or load a part the others use: a file whose first lines say `// test-runs-alone: <why>` runs after
# the others.
alone=() together=()
for f in "${files[@]}"; do
  if head -n 20 "$f" | grep -q '^// test-runs-alone:'; then alone+=("$f"); else together+=("$f"); fi
done
# The kubelets evict pods and refuse new ones below 2% free (hack/nodes.sh): a run on a nearly full
# disk fails in every pod-starting file at once, so say so before it starts.
disk_summary() { df -h --output=avail,size "$STATE" | awk 'NR==2 {print $1 " free of " $2 " on the state disk"}'; }
nodes_under_pressure() {
  "$K8S_BIN/kubectl" --kubeconfig "$STATE/kubeconfig" get nodes --request-timeout=5s -o jsonpath='{range .items[*]}{.metadata.name}{range .status.conditions[?(@.status=="True")]}{" "}{.type}{end}{"\n"}{end}' 2>/dev/null |
    awk '{ for (i = 2; i <= NF; i++) if ($i != "Ready") printf "%s%s %s", (n++ ? ", " : ""), $1, $i } END { if (!n) printf "none" }' || true
}
if [ "${1:-all}" != unit ]; then
  free_kib=$(df --output=avail "$STATE" | tail -1)
  ((free_kib > 10 * 1024 * 1024)) || say "test: warning: only $(disk_summary): pods may be evicted (DiskPressure) and fail" >&2
fi
concurrency=${SVC_TEST_CONCURRENCY:-2}
say "test: ${#files[@]} files (${#together[@]} at most $concurrency at a time, then ${#alone[@]} alone)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# spec for each test as it ends, and at the end a table of each file's time, slowest first.
run_files() {
  node --enable-source-maps --test --test-concurrency="$1" --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=./dist/test/support/timings-reporter.js --test-reporter-destination=stdout \
    "${@:2}" 2>&1 | tee -a "$out"
  return "${PIPESTATUS[0]}"
}
set +e
rc=0 started=$SECONDS
if ((${#together[@]})); then run_files "$concurrency" "${together[@]}" || rc=1; fi
together_s=$((SECONDS - started))
if ((${#alone[@]})); then run_files 1 "${alone[@]}" || rc=1; fi
set -e
if ((${#together[@]} && ${#alone[@]})); then
  say "test: ${#together[@]} files ($concurrency at a time) in ${together_s} s, ${#alone[@]} alone in $((SECONDS - started - together_s)) s$( ((rc)) && echo ': failures above')"
fi
# A red run on a machine nobody can log into (CI) must explain itself: most failures that are not
# one test's own come from a platform part that died or a full disk, so show both.
if ((rc)) && [ "${1:-all}" != unit ] && [[ "${1:-}" != *.js ]]; then
  say "==== test: diagnostics after a failed run ===="
  df -h "$ROOT" "$STATE" /tmp 2>/dev/null | uniq || true
  free -m || true
  "$ROOT/hack/cluster.sh" status || true
  "$ROOT/hack/postgres.sh" status || true
  "$ROOT/hack/dev.sh" status || true
  "$ROOT/hack/nodes.sh" status || true
  for part in kubelet-local-a kubelet-local-b policy-agent controllers kube-apiserver etcd; do log_tail "$part" 30 | cut -c1-400; done
  # Last, so that a tail of this output (what CI shows) holds the failures themselves: each failing
  # test's assertion, without the stack frames.
  say "==== test: the failures again ===="
  # Without the stack frames and the timing tables; `|| true`: head closing the pipe early must
  # not turn the exit code into SIGPIPE's 141.
  { sed -n '/^✖ failing tests:/,$p' "$out" | grep -v '^ *at ' | grep -vE '^ +[0-9.]+ s +test/' | head -200 | cut -c1-400; } || true
  say "test: $(disk_summary); nodes under pressure: $(nodes_under_pressure)"
fi
exit "$rc"
