#!/usr/bin/env bash
# make bench-share: the kafka_share benchmark (bench/share; docs/BENCHMARKS.md,
# part 9) against a broker of its own on private ports, started here and
# stopped on exit. Arguments go to the driver, e.g.
#
#   bash bench/share.sh -out bin/bench-share/share.md -rounds 3
#
# About 2 minutes at one round on two cores. Set BENCH_SHARE_KAFKA_RUN_DIR and
# BENCH_SHARE_KAFKA_PORT (it uses that port and the next two; 29595 by
# default, beside bench/e2e.sh's 29592) to run it beside another broker.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${BENCH_SHARE_KAFKA_PORT:-29595}
export KAFKA_RUN_DIR=${BENCH_SHARE_KAFKA_RUN_DIR:-/tmp/wm-kafka-bench-share}
export KAFKA_PORT=$port KAFKA_CONTROLLER_PORT=$((port + 1)) KAFKA_SASL_SSL_PORT=$((port + 2))

trap 'bash resources/kafka/broker.sh stop' EXIT
bash resources/kafka/broker.sh start >/dev/null
KAFKA_ENV_FILE=$KAFKA_RUN_DIR/env go run ./bench/share "$@"
