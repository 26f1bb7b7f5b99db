// Package testkit holds the tools that the project's test programs share:
// the end-to-end tests (tests/), the chaos harness (tests/chaos), the
// benchmarks (bench/) and the command's own tests (cmd/watermark-connect).
// Each used to carry a copy of these; the copies drifted (two env-file
// readers unquoted values differently, three sinks repeated one pacing
// line). What differs between the users stays with them, as options and
// hooks on the shared core.
//
// The tools, one file each:
//
//   - Sink (sink.go): the HTTP endpoint the pipelines under test post their
//     batches to, with its Ledger (ledger.go) of every record it
//     acknowledged, a Pacer (pace.go) that throttles it to a records-per-second
//     rate, and a Gate (gate.go) that holds chosen requests until released.
//   - Build and Binary (build.go): go build of a main package, from the
//     working tree or from a git revision, once per process when asked.
//   - ParseMetrics and ScrapeMetrics (prom.go): the Prometheus text format
//     that a binary serves at /metrics, as samples.
//   - BrokerEnv (brokerenv.go): the env file resources/kafka/broker.sh
//     writes, read with the shell's quoting rules.
//   - Silent (silent.go): a broker address that accepts connections and
//     never answers.
//
// # Vocabulary
//
// A batch is one HTTP request of the pipeline's http_client output: the
// pipeline's mapping renders each message as a Record and its archive
// processor joins a batch into one JSON array. A batch holds records of one
// partition. A record is delivered when the sink recorded it before
// answering 200: from then on the pipeline may count it as acknowledged, so
// the ledger holds every record any member could have seen acknowledged.
// A partition's prefix is the first offset never delivered: every offset
// below it was delivered at least once, and a commit above it passes a
// record no sink ever had. An output that posts something else (a message's
// content as it is, lines) gets a Decode of its own, whose records have no
// place in the ledger (NoPartition) and are only counted.
//
// # Concurrency
//
// Each exported type says whether it is safe for concurrent use. Sink,
// Pacer, Gate, Binary and Silent are; Ledger is not (a Sink guards its own and
// hands out copies or views under its lock); Record, Batch, Metrics,
// BrokerEnv and Build are plain values.
// A Sink runs one goroutine per request (net/http's) and one that serves
// its listener; Close ends both. A Silent runs one goroutine that accepts;
// Close ends it.
package testkit
