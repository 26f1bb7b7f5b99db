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
