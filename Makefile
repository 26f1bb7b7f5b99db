# Common commands. `make test` is what CI runs (.ci/run).
.PHONY: demo test unit model lint build bench bench-e2e fuzz broker-start broker-stop
.PHONY: bench-inprocess bench-ack bench-scale bench-tracker bench-freshness bench-keyorder bench-share pgo

# bash with pipefail: several recipes filter go test through grep, and the
# exit status must be go test's, not grep's, or a failing test passes.
SHELL       := bash
.SHELLFLAGS := -o pipefail -c

# The version comes from git through Go's build stamping (internal/version
# says the scheme: a release tag vX.Y.Z prints as is, any other commit as a
# pseudo-version marked "untagged"); -buildvcs=true overrides a GOFLAGS that
# turns stamping off, and is left out outside a git checkout, where it would
# fail. VERSION=... stamps a version of your own instead.
VERSION  ?=
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BUILDVCS := $(shell git rev-parse --is-inside-work-tree >/dev/null 2>&1 && echo true || echo false)
LDFLAGS  := $(if $(VERSION),-X main.version=$(VERSION) )-X main.dateBuilt=$(DATE)

# The demo, built first into bin/ so that the first run, which downloads and
# compiles Benthos and franz-go for about 1.5 minutes, says so instead of
# staying silent; later runs rebuild in seconds. DEMO_ARGS adds flags.
DEMO_ARGS ?=
demo:
	@if [ ! -x bin/watermark-connect ]; then echo "== building bin/watermark-connect: the first build downloads and compiles Benthos and franz-go, about 1.5 minutes on two cores"; else echo "== building bin/watermark-connect"; fi
	@go build -buildvcs=$(BUILDVCS) -ldflags '$(LDFLAGS)' -o bin/watermark-connect ./cmd/watermark-connect & pid=$$!; \
	  s=0; while kill -0 $$pid 2>/dev/null; do sleep 1; s=$$((s + 1)); \
	  [ $$((s % 15)) -ne 0 ] || echo "   still compiling ($$s s)"; done; wait $$pid
	@echo "== bin/watermark-connect demo $(DEMO_ARGS)"
	@bin/watermark-connect demo $(DEMO_ARGS)

# The full suite: formatting, vet, the race-enabled unit tests and the
# end-to-end tests against a real Kafka broker that this target starts.
test:
	bash resources/test.sh

# golangci-lint v2 with the project's .golangci.yml, built from the Go module
# proxy at a pinned version (cached after the first run). make test runs it.
GOLANGCI_LINT ?= go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.6.2
lint:
	$(GOLANGCI_LINT) run ./...

# promtool for the monitoring checks (resources/monitoring/test.sh, which
# looks for $PROMTOOL, then bin/promtool, then promtool on PATH), built from
# the Go module proxy at a pinned version into bin/promtool: about 6.5
# minutes once on 2 cores. Without it make test skips those checks, and says
# so; it never installs anything outside CI.
.PHONY: promtool
PROMTOOL_VERSION ?= v0.316.0
promtool:
	GOBIN=$(CURDIR)/bin go install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)

# Unit tests only (no broker; -short skips tests/): a quick local loop.
unit:
	go test -race -short ./...

# The owner's model tests (internal/engine, TestOwnerModel and the
# exactly-once TestTxnModel) over a range of seeds: SCHEDULES schedules from
# SEED_BASE, with the race detector. A
# failure prints the one command that replays its seed. CI runs 3,000 from
# a base that changes per run (resources/test.sh prints it).
SEED_BASE ?= 0
SCHEDULES ?= 2000
model:
	OWNER_MODEL_SEED_BASE=$(SEED_BASE) OWNER_MODEL_SCHEDULES=$(SCHEDULES) go test -race -count=1 -run 'TestOwnerModel$$' -v ./internal/engine/ | grep -v '^ *--- PASS\|^=== RUN'
	OWNER_TXN_MODEL_SEED_BASE=$(SEED_BASE) OWNER_TXN_MODEL_SCHEDULES=$(SCHEDULES) go test -race -count=1 -run 'TestTxnModel$$' -v ./internal/engine/ | grep -v '^ *--- PASS\|^=== RUN'

build:
	go build -buildvcs=$(BUILDVCS) -ldflags '$(LDFLAGS)' -o bin/watermark-connect ./cmd/watermark-connect

# In-process benchmarks (docs/BENCHMARKS.md): each prints a markdown table
# of medians and ranges over interleaved rounds (bench/rounds.sh). ROUNDS and
# BENCHTIME tune them; BENCH_BASE=<git rev> adds that revision as a second
# contender, with the ratios of this tree to it. bench-inprocess runs them all.
# ROUNDS is 5 by default, 3 under make bench (below) unless given.
ifeq ($(origin ROUNDS),undefined)
bench: ROUNDS := 3
endif
ROUNDS    ?= 5
BENCHTIME ?= 1s
export ROUNDS BENCHTIME

# Every figure of docs/BENCHMARKS.md, parts 1 to 9 (bench/all.sh; not run by
# CI): one docs/BENCHMARKS.md-ready file, $(BENCH_OUT), headed by the
# machine, the versions, the revision and the date, with the load average at
# the start of each part; each part's markdown and log in $(BENCH_DIR)/parts,
# the CPU profiles of parts 1 and 7 in $(BENCH_DIR)/profiles. It fails, and
# writes no $(BENCH_OUT), if any part fails.
#
# About 30 to 35 minutes on two cores (parts 1 to 6: 15m18s at 56c8f94 on a
# quiet machine; part 7, bench-keyorder: 15m52s at fc4c161 at load 7 to 13);
# each part's wall time is in the file. The per-part defaults take over 45
# (bench-e2e 17, bench-keyorder 16, the in-process parts at 5 rounds about
# 15), so make bench runs 3 rounds of
# each, as docs/BENCHMARKS.md's in-process figures were: the in-process parts
# at ROUNDS=3 unless ROUNDS is given, and bench/e2e with -rounds 3
# -replay-rounds 3 before BENCH_E2E_FLAGS (which can override them).
BENCH_DIR ?= bin/bench
BENCH_OUT ?= $(BENCH_DIR)/BENCHMARKS.md
bench:
	BENCH_E2E_FLAGS='-rounds 3 -replay-rounds 3 $(BENCH_E2E_FLAGS)' bash bench/all.sh $(BENCH_OUT) $(BENCH_DIR)

bench-inprocess: bench-ack bench-scale bench-tracker bench-freshness

bench-ack:
	@echo '### Ack path'
	@bench/rounds.sh internal/engine 'AckPath' ns/op,acks/s,batches/s,cpu-ns/op,allocs/op,B/op

bench-scale:
	@echo '### Scale: commit cycle, metadata encoding, gauge tick'
	@bench/rounds.sh internal/engine 'CommitCycle|MetadataEncoding|GaugeTick' ns/op,req-B,meta-B,meta-B/partition,allocs/op
	@echo '### Scale: owner state, Go heap'
	@ROUNDS=1 BENCHTIME=1x bench/rounds.sh internal/engine '^BenchmarkStateSize$$' B/idle-partition,B/pending-batch,partState-B,Batch-B,windowBatch-B,rawBatch-B,Record-B
	@echo '### Scale: RSS, each consumer in a process of its own (kfake in the driver)'
	@go run ./bench/rss -rounds $(ROUNDS)

bench-tracker:
	@echo '### Tracker against Jeffail/checkpoint Uncapped'
	@SPLIT='s#^main Benchmark(Tracker|Uncapped)/#\1 Benchmark/#' TRIM=Benchmark/ BASE_NAME=Uncapped bench/rounds.sh tracker 'Tracker|Uncapped' ns/op,allocs/op,B/op

bench-freshness:
	@echo '### Commit freshness'
	@go run ./bench/freshness -rounds $(ROUNDS)

# The end-to-end benchmark on a real broker that it starts and stops (about
# 17 minutes; not run by CI): docs/BENCHMARKS.md-ready tables in
# $(BENCH_E2E_DIR)/e2e.md, CPU profiles beside them.
BENCH_E2E_DIR ?= bin/bench-e2e
BENCH_E2E_FLAGS ?=
bench-e2e:
	bash bench/e2e.sh -out $(BENCH_E2E_DIR)/e2e.md -profile-dir $(BENCH_E2E_DIR)/profiles $(BENCH_E2E_FLAGS)

# The profile behind the binary's profile-guided optimisation: a CPU profile
# of kafka_watermark (wm, its defaults, into drop) over one run of each of
# bench-e2e's 8 cells, on a broker of its own, merged into
# cmd/watermark-connect/default.pgo, which go build uses (-pgo=auto). About
# 5 minutes on two cores. Refresh it after a change to the per-record path
# (the conversion, the engine's hot loop), a Benthos, franz-go or Go upgrade,
# or when bench-e2e's `wm-nopgo` variant shows the gain shrinking
# (docs/BENCHMARKS.md, "Profile-guided optimisation"); commit the new file
# with the figures. PGO_FLAGS adds bench/e2e flags.
PGO_FLAGS ?=
pgo:
	bash bench/e2e.sh -sections pgo -contenders wm -pgo-out cmd/watermark-connect/default.pgo -profile-dir $(BENCH_E2E_DIR)/pgo-profiles $(PGO_FLAGS)

# Key-ordered delivery (docs/BENCHMARKS.md, section 7; issue 21): ordering:
# key against ordering: none and Confluent's Parallel Consumer (KEY
# ordering) into one HTTP sink that checks each key's order, 3 interleaved
# rounds at 100,000 and 1,000 keys, then one key failing for 30 s, on a
# broker of its own (bench/e2e.sh; about 15 minutes on two cores; not run by
# CI). The Parallel Consumer contender is built with Maven (Java 17); without
# them, BENCH_KEY_FLAGS='-key-contenders key,none'. The markdown goes to
# $(BENCH_KEY_DIR)/keyorder.md, the CPU profiles of key and none beside it;
# BENCH_KEY_FLAGS adds bench/e2e flags
# (go run ./bench/e2e -h: -key-records, -key-counts, -key-fail-for, ...).
BENCH_KEY_DIR ?= bin/bench-keyorder
BENCH_KEY_FLAGS ?=
bench-keyorder:
	bash bench/e2e.sh -sections keyorder -rounds 3 -out $(BENCH_KEY_DIR)/keyorder.md -profile-dir $(BENCH_KEY_DIR)/profiles $(BENCH_KEY_FLAGS)

# The kafka_share input (docs/BENCHMARKS.md, section 9; issue 33): records/s
# of 1, 2 and 4 processes on one partition into a sink taking 5ms per batch,
# beside kafka_watermark with max_in_flight 64, and CPU per record against
# kafka_watermark on 8 partitions into drop, on a broker of its own
# (bench/share.sh; about 2 minutes at one round; not run by CI).
# BENCH_SHARE_FLAGS adds bench/share flags (go run ./bench/share -h).
BENCH_SHARE_DIR ?= bin/bench-share
BENCH_SHARE_FLAGS ?=
bench-share:
	bash bench/share.sh -out $(BENCH_SHARE_DIR)/share.md $(BENCH_SHARE_FLAGS)

FUZZTIME ?= 60s
fuzz:
	go test ./tracker -run '^$$' -fuzz FuzzTracker -fuzztime $(FUZZTIME)

broker-start:
	bash resources/kafka/broker.sh start

# broker-stop also removes the broker's run dir (its data and logs, 13-16 MB
# in the temporary directory): broker-start wipes it anyway.
broker-stop:
	bash resources/kafka/broker.sh stop
	bash resources/kafka/broker.sh clean

# The chaos harness (tests/chaos, docs/RELIABILITY.md): the real broker (its
# own, in a run dir of this checkout's, on ports 29692-29694) and the real binary,
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

# The opt-in fault kinds (docs/RELIABILITY.md), in no default weights and so
# not in make chaos or CI: retention (a stalled partition's log start moved
# past its watermark by DeleteRecords) and unclean-election (an unclean
# leader election truncates a partition; 3 nodes only) are checked against
# the members' loss reports (reported_lost must equal the offsets deleted
# before any sink had them); replay-rebalance and kill-in-outage are
# compound faults. chaos-loss runs the single-broker ones, chaos-unclean the
# unclean election on the 3-node cluster (formatted with KIP-966 off).
.PHONY: chaos-loss chaos-unclean
chaos-loss:
	go run ./tests/chaos --duration 2m --fault-gap 3s --seed $(CHAOS_SEED) --weights retention=2,replay-rebalance=1,kill-in-outage=1 $(CHAOS_ARGS)
chaos-unclean:
	go run ./tests/chaos --cluster 3 --duration 2m --fault-gap 5s --seed $(CHAOS_SEED) --weights unclean-election=1 $(CHAOS_ARGS)

# The poison fault (opt-in): records the sink refuses for the rest of the
# run, which the members (dead_letter, max_attempts 3) write to a dead-letter
# topic; the checker counts a dead letter as delivered only with its
# provenance right, and fails a poison record in neither the sink nor the
# topic and a dead letter the sink never refused.
.PHONY: chaos-poison
chaos-poison:
	go run ./tests/chaos --duration 2m --fault-gap 5s --seed $(CHAOS_SEED) --weights poison=2,member-kill=2,member-stop=1,sink-fail=1,broker-kill=1 $(CHAOS_ARGS)

# Key order (opt-in): the members on ordering: key, the records keyed over a
# bounded key space (the empty key and null keys among them); the checker
# holds each key's first deliveries to its log order and fails a request of
# a process holding a record while an earlier record of its key is in
# another of its requests still unanswered. Its negative control, members on
# ordering: none with the same check, must FAIL: make chaos-key-none.
.PHONY: chaos-key chaos-key-none
CHAOS_KEY_WEIGHTS = member-kill=3,member-stop=2,broker-kill=1,broker-term=1,sink-reverse=1,sink-slow=1,sink-fail=2
chaos-key:
	go run ./tests/chaos --duration 2m --fault-gap 5s --seed $(CHAOS_SEED) --ordering key --weights $(CHAOS_KEY_WEIGHTS) $(CHAOS_ARGS)
chaos-key-none:
	go run ./tests/chaos --duration 2m --fault-gap 5s --seed $(CHAOS_SEED) --key-check --weights $(CHAOS_KEY_WEIGHTS) $(CHAOS_ARGS)

# Exactly once (docs/RELIABILITY.md): every member runs Kafka to Kafka with
# exactly_once (split, a random 0-5 ms sleep, a processor failing one message
# in 2000 behind reject_errored, an output bound to the group with
# max_in_flight 16) under member kills and graceful restarts, member pauses
# past the session timeout (zombies), broker restarts; the checker reads the
# output topic read_committed and fails a source record with no output or
# more than one.
.PHONY: chaos-eos
chaos-eos:
	go run ./tests/chaos --eos --duration 2m40s --seed $(CHAOS_SEED) $(CHAOS_ARGS)
