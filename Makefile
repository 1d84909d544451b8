# The two commands a newcomer needs: `make dev` (the whole platform, locally) and `make test`.
# Everything else here is a part of those two.
SHELL := /bin/bash
.DEFAULT_GOAL := help
export SVC_STATE_DIR ?= $(CURDIR)/.svc
export KUBECONFIG ?= $(SVC_STATE_DIR)/kubeconfig
# Every recipe runs on the Node.js of .node-version, which `deps` installs into the cache.
export SVC_CACHE ?= $(HOME)/.cache/svc-platform
export PATH := $(SVC_CACHE)/node-v$(shell cat .node-version)/bin:$(PATH)

.PHONY: help dev down status deps build k8s cluster cluster-down nodes nodes-down images postgres \
        postgres-down migrate crds gen-types gen-client lint format test test-unit kind-up bench

help:
	@echo "make dev     run the whole platform locally (cluster, PostgreSQL, platform components)"
	@echo "make test    install what is missing, start what the tests need, run every test"
	@echo "make down    stop everything make dev started;  make status  what runs"

deps:
	@hack/install-deps.sh

# The web console (console/, decision 0031) and the HTML data client (ingress-auth/data/client,
# decision 0034): type-checked with the DOM's types, then bundled by esbuild into dist/console,
# which the API serves at /console/, and dist/ingress-auth/data/client.js, which ingress-auth serves.
build: deps
	@node_modules/.bin/tsc -p tsconfig.json
	@node_modules/.bin/tsc -p console/tsconfig.json
	@node_modules/.bin/tsc -p ingress-auth/data/client/tsconfig.json
	@node dist/hack/build-console.js

k8s:
	@hack/build-k8s.sh

cluster: deps
	@hack/cluster.sh up

cluster-down:
	@hack/cluster.sh down

crds:
	@hack/cluster.sh crds

# The two worker nodes (kubelet + containerd each), kube-proxy, the policy agent and the registry;
# `images` builds and pushes what is missing or stale (nodes runs it too).
nodes: build cluster
	@hack/nodes.sh up

nodes-down:
	@hack/nodes.sh down

images: build
	@hack/nodes.sh images

postgres: deps
	@hack/postgres.sh up

postgres-down:
	@hack/postgres.sh down

migrate: build postgres
	@node dist/lib/db/migrate-cli.js up

gen-types: build
	@node dist/hack/gen-types.js

# lib/client/schema.gen.ts, the API client's types, from the document GET /api/openapi.json serves
# (decision 0029); test/unit/client-schema.test.ts fails while it is stale.
gen-client: build
	@node dist/hack/gen-client.js

dev: build cluster postgres migrate nodes
	@hack/dev.sh

down:
	@hack/dev.sh down
	@hack/nodes.sh down
	@hack/postgres.sh down
	@hack/cluster.sh down

status:
	@hack/cluster.sh status; hack/nodes.sh status; hack/postgres.sh status; hack/dev.sh status

# typescript-eslint (eslint.config.js) and Prettier (.prettierrc.json), first: a finding fails the
# run before anything starts (docs/decisions/0026-format-lint-test-phases.md). `make format` fixes
# what Prettier would.
lint: deps
	@node_modules/.bin/eslint --max-warnings 0 .
	@node_modules/.bin/prettier --check --log-level warn . && echo "lint: eslint and prettier found nothing"

format: deps
	@node_modules/.bin/prettier --write --log-level warn .

test: lint build cluster postgres nodes
	@hack/dev.sh up s3 controllers
	@hack/test.sh

test-unit: build
	@hack/test.sh unit

# Benchmarks print ratios against a baseline measured in the same run (docs/benchmarks.md).
bench: build cluster postgres nodes
	@hack/install-deps.sh bench
	@hack/dev.sh up s3 controllers
	@SVC_LOG_LEVEL=silent node dist/bench/api.js
	@node dist/bench/pods.js
	@SVC_LOG_LEVEL=silent node dist/bench/deploy.js
	@node dist/bench/reconcile.js
	@node dist/bench/proxy.js
	@node dist/bench/https.js
	@node dist/bench/console.js
	@SVC_LOG_LEVEL=silent node dist/bench/events.js
	@SVC_LOG_LEVEL=silent node dist/bench/databases.js
	@node dist/bench/html-data.js
	@SVC_LOG_LEVEL=silent node dist/bench/builds.js
	@SVC_SANDBOX_POOL_SIZE=16 hack/dev.sh restart controllers
	@SVC_LOG_LEVEL=silent node dist/bench/sandboxes.js; status=$$?; hack/dev.sh restart controllers; exit $$status

kind-up:
	@hack/kind-up.sh
