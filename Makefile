# msgx — make help lists the targets.
SHELL := /bin/bash
GO    ?= go
PKGS  := ./...
# The build every binary reports (--version, msgx_build_info, the start-up log): pkg/buildinfo.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_LDFLAGS := -X github.com/msgx/msgx/pkg/buildinfo.Version=$(VERSION) -X github.com/msgx/msgx/pkg/buildinfo.Revision=$(REVISION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

.PHONY: build
build: ## build every binary into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(VERSION_LDFLAGS)' -o bin/ ./cmd/...

.PHONY: lint
# go vet with -race: the packages it compiles for its checks are the ones test-race links, so a
# cold build cache compiles everything once, not once for vet and again for the race tests.
lint: ## gofmt check, go vet, and third_party/sarama is released sarama plus its patch
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -race $(PKGS)
	bash scripts/third-party-sarama.sh

.PHONY: verify
verify: ## apply the migrations to fresh databases and fail if db/schema.sql differs
	scripts/verify-schema.sh

.PHONY: schema
schema: ## regenerate db/schema.sql from db/migrations
	scripts/verify-schema.sh --write

.PHONY: test-race
# GOTEST is go test through gotestsum (tools module): a line per package, then every skipped test
# with its reason (an optional suite a local run did not have) and every failure.
GOTEST = $(GO) tool gotestsum --format pkgname --
# The slowest packages first: go test starts packages in the order given, so the long ones run
# beside the many short ones instead of alone at the end (2 cores: the tail decides the time).
# TEST_P: packages tested at once. Three on two cores: many tests wait on their servers,
# processes and brokers, and two packages at a time left the cores idle part of the run.
TEST_P ?= 3
SLOW_PKGS = ./pkg/processor/flights ./pkg/dispatch ./e2e ./pkg/processor ./cmd/dispatcher ./cmd ./pkg/console ./cmd/demo
test-race: ## go test -race over everything (real PostgreSQL and MariaDB); lists the skipped tests and why
	$(GOTEST) -race -count=1 -p $(TEST_P) -timeout 12m $(SLOW_PKGS) $(PKGS)

.PHONY: setup
setup: ## install and start what the tests need (PostgreSQL, MariaDB, Chromium, promtool, ORY Hydra, Apache Kafka's jars, the AsyncAPI parser, the reference consumer's Python environment); a no-op when they are there
	bash scripts/ensure-db.sh
	bash scripts/ensure-tools.sh
	bash scripts/ensure-hydra.sh >/dev/null
	bash scripts/ensure-kafka.sh >/dev/null
	bash scripts/ensure-asyncapi.sh
	bash scripts/ensure-refconsumer.sh

.PHONY: test
# The manifest checks compile their own module (kustomize) while the race tests run: on 2 cores
# the race tests leave a core idle now and then, and the compile fills it.
test: setup lint verify ## what CI runs: set-up, lint, migration verify, race tests, manifest checks, alert rule tests
	$(MAKE) --no-print-directory -j2 test-race k8s-test
	$(MAKE) --no-print-directory rules-test

.PHONY: soak
soak: ## the full-size acceptance runs make test runs smaller (a whole generated airport day against the model, 100,000 events through a faulty broker, 10,000 messages batched one by one and by the hundred, 20 zombie rounds on Apache Kafka): MSGX_SOAK=1
	MSGX_SOAK=1 $(GOTEST) -race -count=1 -timeout 20m -run 'TestGeneratedDay|TestOrderingUnderFaults|TestBatchingIsInvisible' ./pkg/processor/flights ./pkg/processor ./pkg/dispatch
	MSGX_ZOMBIE_ROUNDS=20 $(GOTEST) -race -count=1 -timeout 20m -run 'TestConformance/apachekafka/DeposedDispatcherFenced' ./pkg/dispatch

.PHONY: bench-modes
E2E_BENCH = $(GO) test -run '^$$' -bench BenchmarkEndToEnd -benchtime 1x -timeout 20m ./e2e/
bench-modes: ## the end-to-end benchmark's iteration modes, each run briefly to its end (MSGX_BENCH_BRIEF=1: small sizes, nothing written): the full run with the 1M step, drain only, sustained only
	MSGX_BENCH_BRIEF=1 MSGX_BENCH_1M=1 $(E2E_BENCH)
	MSGX_BENCH_BRIEF=1 MSGX_BENCH_DRAIN_ONLY=1 $(E2E_BENCH)
	MSGX_BENCH_BRIEF=1 MSGX_BENCH_SUSTAINED_ONLY=1 $(E2E_BENCH)

.PHONY: bench-ab
BASE ?= main
PAIRS ?= 3
bench-ab: ## A/B of the end-to-end drain: this tree against BASE (a commit; default main), PAIRS interleaved fresh-stack drains of the 100k backlog each, medians and ratios (scripts/bench-ab.sh)
	bash scripts/bench-ab.sh $(BASE) $(PAIRS)

.PHONY: bench
# AB_BASE: the commit make bench compares this tree with (this wave's base).
AB_BASE ?= 9afce9e
bench: bench-modes ## benchmarks (separate from make test): an A/B of the drain against AB_BASE (PAIRS pairs), package benchmarks, then the end-to-end one, which writes its run to docs/runs/benchmarks with the A/B's ratios (MSGX_BENCH_1M=1 adds the 1,000,000-message backlog run)
	mkdir -p .bench
	AB_OUT=$(CURDIR)/.bench/ab.txt bash scripts/bench-ab.sh $(AB_BASE) $(PAIRS)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1s -count 3 -timeout 30m ./pkg/...
	MSGX_BENCH_WRITE=1 MSGX_BENCH_AB=$(CURDIR)/.bench/ab.txt $(GO) test -run '^$$' -bench BenchmarkEndToEnd -benchtime 1x -timeout 60m ./e2e/

.PHONY: chaos
chaos: ## the fault suite (≤ 20 min on 2 cores): every scenario on private databases in production's configuration (roles, verified TLS, Kafka TLS + SCRAM-SHA-512, MSGX_ENV=production; a single-node Apache Kafka but for the broker faults); writes its run to docs/runs/reliability; non-zero when a scenario fails
	$(GO) run ./cmd/chaos -write docs/runs/reliability

.PHONY: chaos-kafka
chaos-kafka: ## the fault suite on a real three-node Apache Kafka cluster (broker kills, two down, rolling restart, freeze; ≈ 15 min); writes its run to docs/runs/reliability
	$(GO) run ./cmd/chaos -kafka -write docs/runs/reliability

.PHONY: chaos-short
chaos-short: ## the short form of the fault suite (one kill per binary, a PostgreSQL restart, a broker freeze) in the same configuration; make test runs it as e2e TestChaosShort
	$(GO) run ./cmd/chaos -short

KAFKA ?= dev

.PHONY: up
up: ## local stack: PostgreSQL, MariaDB, Kafka (KAFKA=dev: the development broker, cmd/devbroker; KAFKA=apache: a real Apache Kafka node, fresh databases), migrations, roles, mailbox tables and the four binaries, each as its own database role
	bash scripts/ensure-db.sh
	@$(GO) build -o .devstack/devstack ./cmd/devstack
	@# exec: the devstack alone answers Ctrl-C (go run would exit 1 on it) and ends 0 once stopped
	@if [ "$(KAFKA)" = apache ]; then bash scripts/ensure-kafka.sh >/dev/null && exec .devstack/devstack -kafka apache -fresh; else exec .devstack/devstack -kafka $(KAFKA); fi

.PHONY: demo
demo: ## run the system: local stack (each binary as its own database role), a simulated airport day, live progress, a summary that compares every flight with the model (exit 1 on a difference); leaves nothing running
	bash scripts/ensure-db.sh
	$(GO) run ./cmd/demo

# Container images, built without a container daemon, buildah or a registry: the host compiles
# static binaries and tools/ociimage packs them as an OCI image layout (docs/deploy.md).
IMAGE     ?= localhost/msgx:dev
IMAGE_DIR := bin/image
OCIIMAGE  := $(GO) tool ociimage
IMAGE_PKGS := ./cmd/ingest ./cmd/processor ./cmd/dispatcher ./cmd/jobs ./cmd/console ./cmd/msgxctl

.PHONY: image
image: ## container image: OCI layout bin/image/msgx and bin/image/msgx.tar (docker/podman/kind load); static binaries, CA, zoneinfo, user 65532; unpacks it and checks its msgxctl --version names the commit
	rm -rf $(IMAGE_DIR)/msgx-bin && mkdir -p $(IMAGE_DIR)/msgx-bin
	CGO_ENABLED=0 $(GO) build -trimpath -tags timetzdata -ldflags='-s -w $(VERSION_LDFLAGS)' -o $(IMAGE_DIR)/msgx-bin/ $(IMAGE_PKGS)
	$(OCIIMAGE) build -bin $(IMAGE_DIR)/msgx-bin -ref $(IMAGE) -out $(IMAGE_DIR)/msgx -tar $(IMAGE_DIR)/msgx.tar \
		-version $(VERSION) -revision $(REVISION)
	$(OCIIMAGE) unpack -layout $(IMAGE_DIR)/msgx -to $(IMAGE_DIR)/rootfs
	out=$$($(IMAGE_DIR)/rootfs/usr/local/bin/msgxctl --version) && echo "image: $$out" && \
		[[ $$out == *"(revision $(REVISION)"* ]] || { echo "image: msgxctl --version does not name $(REVISION)"; exit 1; }
	rm -rf $(IMAGE_DIR)/rootfs

DEVBROKER_IMAGE ?= localhost/msgx-devbroker:dev

.PHONY: image-devbroker
image-devbroker: ## development Kafka broker image for the dev Kubernetes overlay (cmd/devbroker only; never in production): bin/image/msgx-devbroker and .tar
	rm -rf $(IMAGE_DIR)/devbroker-bin && mkdir -p $(IMAGE_DIR)/devbroker-bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w $(VERSION_LDFLAGS)' -o $(IMAGE_DIR)/devbroker-bin/ ./cmd/devbroker
	$(OCIIMAGE) build -bin $(IMAGE_DIR)/devbroker-bin -zoneinfo '' -ref $(DEVBROKER_IMAGE) \
		-out $(IMAGE_DIR)/msgx-devbroker -tar $(IMAGE_DIR)/msgx-devbroker.tar -version $(VERSION) -revision $(REVISION) \
		-title msgx-devbroker -description 'development Kafka broker for msgx (never in production)'

.PHONY: rules-test
# promtool comes from Debian's prometheus package, pinned in scripts/ensure-tools.sh: building it
# from Go source (github.com/prometheus/prometheus/cmd/promtool) compiles most of Prometheus and
# would blow make test's 10-minute cold-cache budget on 2 cores.
rules-test: ## promtool test rules on deploy/observability (series labelled as a Prometheus scrape labels them)
	@command -v promtool >/dev/null || { echo "promtool missing: run scripts/ensure-tools.sh"; exit 1; }
	promtool check rules deploy/observability/alerts.yaml
	cd deploy/observability && promtool test rules alerts_test.yaml

.PHONY: rehearse
rehearse: setup ## the production overlay run for real (docs/deploy.md, "Rehearsal"): every container with its manifest's environment against PostgreSQL verify-full, MariaDB TLS, three Apache Kafka nodes over TLS/SCRAM with docs/kafka.md's ACLs; a rolling restart under traffic, the demo's checks, kafka verify, console and API logins. make test runs its short form
	cd deploy/k8s && MSGX_REHEARSE=full $(GO) test -count=1 -v -timeout 30m -run 'TestRehearse$$' ./rehearse/

.PHONY: rehearse-upgrade
FROM ?= 9afce9e
rehearse-upgrade: setup ## upgrade and rollback rehearsed under traffic in the production configuration: release FROM (default this wave's base), the upgrade to this tree as docs/deploy.md says, the rollback to FROM; leaderless time per role and latency (docs/reliability.md)
	cd deploy/k8s && MSGX_REHEARSE_FROM=$(FROM) $(GO) test -count=1 -v -timeout 40m -run 'TestRehearseUpgrade$$' ./rehearse/

.PHONY: k8s-test
k8s-test: ## render the Kubernetes overlays and check them (separate module deploy/k8s)
	cd deploy/k8s && $(GO) test -count=1 ./...
