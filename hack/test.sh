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

say "test: ${#files[@]} files"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
# spec for each test as it ends, and at the end a table of each file's time, slowest first.
node --enable-source-maps --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=./dist/test/support/timings-reporter.js --test-reporter-destination=stdout \
  "${files[@]}" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
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
  sed -n '/^✖ failing tests:/,$p' "$out" | grep -v '^ *at ' | head -200 | cut -c1-400
fi
exit "$rc"
