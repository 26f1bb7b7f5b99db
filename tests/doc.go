// Package tests holds the end-to-end tests of watermark-connect: black-box
// runs of the built binary (./cmd/watermark-connect) against a real Apache
// Kafka broker, with an HTTP sink inside the test process that records every
// record it acknowledges.
//
// The tests need a broker started by resources/kafka/broker.sh. They read its
// env file from $KAFKA_ENV_FILE (default: <run dir>/env, the run dir being
// what `bash resources/kafka/broker.sh run-dir` prints, where `make
// broker-start` puts it), or KAFKA_BROKERS and friends from the environment. Without a reachable
// broker they skip, except with CI=true, where they fail. `make test` starts
// a broker and runs them. With -short they always skip (a quick unit loop).
//
// Every test uses its own topic and consumer group (random suffix), so tests
// share one broker and can be re-run against it. Figures meant for humans
// (duplicates after a crash or a rebalance) are printed on lines starting
// with "E2E-FIGURE ", which `go test -v` shows and resources/test.sh greps.
//
// Knobs (environment):
//
//	WMC_E2E_BINARY     use this prebuilt binary instead of building one
//	WMC_E2E_RACE=1     build the binary with -race (resources/test.sh sets it)
//	WMC_BROKER_SH      the broker script (default resources/kafka/broker.sh)
//	WMC_E2E_KEEP_LOGS  a directory to copy every process log into
package tests
