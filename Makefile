# msgx — make help lists the targets.
SHELL := /bin/bash
GO    ?= go
PKGS  := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

.PHONY: build
build: ## build every binary into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/ ./cmd/...

.PHONY: lint
lint: ## gofmt check and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: verify
verify: ## apply the migrations to fresh databases and fail if db/schema.sql differs
	scripts/verify-schema.sh

.PHONY: schema
schema: ## regenerate db/schema.sql from db/migrations
	scripts/verify-schema.sh --write

.PHONY: test-race
test-race: ## go test -race over everything (real PostgreSQL and MariaDB)
	$(GO) test -race -count=1 -timeout 8m $(PKGS)

.PHONY: test
test: lint verify test-race ## what CI runs: lint, migration verify, race tests

.PHONY: bench
bench: ## benchmarks (separate from make test)
	$(GO) test -run '^$$' -bench . -benchmem -count 5 -timeout 30m $(PKGS)

.PHONY: up
up: ## local stack: PostgreSQL, MariaDB, in-process Kafka, migrations, mailbox tables and the four binaries
	bash scripts/ensure-db.sh
	$(GO) run ./cmd/devstack

.PHONY: demo
demo: up ## run the system (the simulated airport day arrives with the simulator issue)
