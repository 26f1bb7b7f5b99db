# Common commands. `make test` is what CI runs (.ci/run).
.PHONY: demo test unit lint build bench fuzz broker-start broker-stop

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.dateBuilt=$(DATE)

demo:
	go run ./cmd/watermark-connect demo

# The full suite: formatting, vet, the race-enabled unit tests and the
# end-to-end tests against a real Kafka broker that this target starts.
test:
	bash resources/test.sh

# golangci-lint v2 with the project's .golangci.yml, built from the Go module
# proxy at a pinned version (cached after the first run). make test runs it.
GOLANGCI_LINT ?= go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.6.2
lint:
	$(GOLANGCI_LINT) run ./...

# Unit tests only (no broker; -short skips tests/): a quick local loop.
unit:
	go test -race -short ./...

build:
	go build -ldflags '$(LDFLAGS)' -o bin/watermark-connect ./cmd/watermark-connect

bench:
	go test ./tracker -run '^$$' -bench . -benchtime 2s -count 5

fuzz:
	go test ./tracker -run '^$$' -fuzz FuzzTracker -fuzztime 60s

broker-start:
	bash resources/kafka/broker.sh start

broker-stop:
	bash resources/kafka/broker.sh stop

# The chaos harness (tests/chaos, docs/RELIABILITY.md): the real broker (its
# own, KAFKA_RUN_DIR=/tmp/wm-chaos on ports 29692-29694) and the real binary,
# three members of one group, a live and a transactional producer, a seeded
# schedule of kill -9s, graceful restarts, broker restarts and sink faults,
# then a drain and an independent check. The short profile, under 5 minutes;
# it exits non-zero when a record was lost, a commit passed an unreceived
# record or went backwards, or a fault's duplicates exceed its exposure.
# CHAOS_SEED picks the schedule (0: from the clock, printed with the command
# that reproduces it); CHAOS_ARGS adds flags, e.g. CHAOS_ARGS='--protocol
# consumer'. Reports: $(or $(CHAOS_OUT),chaos-out)/chaos-report.{md,json}.
.PHONY: chaos
CHAOS_SEED ?= 0
CHAOS_ARGS ?=
chaos:
	go run ./tests/chaos --duration 2m40s --seed $(CHAOS_SEED) $(CHAOS_ARGS)
