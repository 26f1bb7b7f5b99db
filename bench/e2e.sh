#!/usr/bin/env bash
# make bench-e2e and make bench-keyorder: the end-to-end benchmark
# (bench/e2e; docs/BENCHMARKS.md, sections 1, 5 and 7) against a broker of
# its own on private ports, started here and stopped on exit. Arguments go
# to the driver, e.g.
#
#   bash bench/e2e.sh -out bin/bench-e2e/e2e.md -rounds 5
#   bash bench/e2e.sh -sections keyorder -rounds 3 -out bin/bench-keyorder/keyorder.md
#
# Its default sections take about 17 minutes on two cores. Set BENCH_KAFKA_RUN_DIR and
# BENCH_KAFKA_PORT (it uses that port and the next two) to run it beside
# another broker of the same ports.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${BENCH_KAFKA_PORT:-29592}
export KAFKA_RUN_DIR=${BENCH_KAFKA_RUN_DIR:-/tmp/wm-kafka-bench}
export KAFKA_PORT=$port KAFKA_CONTROLLER_PORT=$((port + 1)) KAFKA_SASL_SSL_PORT=$((port + 2))

trap 'bash resources/kafka/broker.sh stop' EXIT
bash resources/kafka/broker.sh start >/dev/null
KAFKA_ENV_FILE=$KAFKA_RUN_DIR/env go run ./bench/e2e "$@"
