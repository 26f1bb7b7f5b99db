#!/usr/bin/env bash
# The project's full test suite, as CI runs it (`make test`, from .ci/run):
#
#   1. gofmt (fails on unformatted files, committed or not), go vet and
#      golangci-lint (make lint, .golangci.yml);
#   2. the unit tests with the race detector: every package but tests/;
#      the owner's model test (TestOwnerModel) over 3,000 schedules from
#      a seed base drawn per run and printed;
#   3. the custom build: ./examples/custom-build (the README's recipe for a
#      Benthos binary of your own) built into a temporary directory, its
#      --version, and `lint` of config/minimal.yaml, which fails unless the
#      kafka_watermark input is registered; the binary is removed after;
#   4. the monitoring checks (resources/monitoring/test.sh), if present.
#      Outside CI they never install anything: a missing promtool or python3
#      skips the checks needing it, saying how to get it, and the last line
#      of this script repeats the skip (CI=true installs them, announced);
#   5. a real Kafka broker (resources/kafka/broker.sh start), stopped on exit
#      whatever happens; a broker that does not start fails the suite;
#   6. the end-to-end tests (tests/) against it. They drive the built binary
#      as a black box, so the race detector goes where the races would be:
#      the binary under test is built with -race (WMC_E2E_RACE=1, about 25%
#      slower here; its packages are already compiled for race by step 2)
#      and a "DATA RACE" in its output, or its exit status 66, fails the
#      test. The test process itself runs without -race (it is only the
#      harness). WMC_E2E_RACE=0 builds a plain binary. Some cases make the
#      binary fail on purpose (a wrong password, an untrusted CA, ...): a
#      line "EXPECTED: ..." precedes the errors they print;
#   7. the chaos harness's short profile (make chaos, tests/chaos, under 5
#      minutes) on a broker of its own, after the first one has stopped:
#      kill -9s, graceful restarts, broker restarts and sink faults against
#      three members, checked from outside the binary. CI runs the fixed
#      seed CHAOS_SEED (below), so a red run replays the same schedule;
#      WMC_CHAOS=0 leaves this stage out of a local run (never under CI).
#
# Run dirs: each run gives both brokers fresh directories of their own,
# made with mktemp -d in ${TMPDIR:-/tmp} (wmc-test-kafka.XXXXXX for the
# end-to-end broker, wmc-test-chaos.XXXXXX for the chaos harness's, and
# wmc-test-chaos-out.XXXXXX for its report unless CHAOS_OUT is given), so two
# runs (two checkouts, or a developer's `make broker-start`) never share one.
# They are removed when the run passes, and kept when it fails, their paths
# printed at the end (the brokers' logs are in <dir>/logs). The brokers'
# JVMs keep their temporary files in <run dir>/tmp, so nothing is left in
# the temporary directory. A KAFKA_RUN_DIR given by the caller is used for
# the end-to-end broker as it is, and never removed; so is a --run-dir in
# CHAOS_ARGS for the chaos harness.
#
# The broker honours broker.sh's settings (KAFKA_RUN_DIR, KAFKA_PORT, ...),
# so a second copy of the suite can run beside a developer's broker (whose
# ports the suite's broker would otherwise want):
#   KAFKA_RUN_DIR=/tmp/other KAFKA_PORT=29092 KAFKA_CONTROLLER_PORT=29093 \
#     KAFKA_SASL_SSL_PORT=29094 make test
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
stage() { echo "== $* (at $((SECONDS - t0)) s)"; }

tmp_root=${TMPDIR:-/tmp}
tmp_root=${tmp_root%/}
run_dirs=()    # run dirs this run made: removed if it passes, kept if not
scratch=()     # temporary files and dirs: removed however the run ends
skipped=()     # checks that did not run, for the last line
broker_up=0    # whether the end-to-end broker may be running
chaos_dir=     # the chaos harness's run dir, when this run made it
passed=0

# finish runs however the script ends (a failure, Ctrl-C, set -e), keeping
# its exit status: it stops the end-to-end broker, removes the temporary
# files, and the run dirs when the run passed; otherwise it says where they
# are.
finish() {
  if [ "$broker_up" = 1 ]; then
    echo "== stopping the Kafka broker"
    bash resources/kafka/broker.sh stop || true
  fi
  if [ "${#scratch[@]}" -gt 0 ]; then rm -rf "${scratch[@]}"; fi
  if [ -n "$chaos_dir" ] && [ -d "$chaos_dir-cluster" ]; then run_dirs+=("$chaos_dir-cluster"); fi
  if [ "${#run_dirs[@]}" -gt 0 ]; then
    if [ "$passed" = 1 ]; then
      # The harness stops its broker itself; this only guards the removal.
      if [ -n "$chaos_dir" ]; then KAFKA_RUN_DIR=$chaos_dir bash resources/kafka/broker.sh stop >/dev/null 2>&1 || true; fi
      rm -rf "${run_dirs[@]}"
    else
      echo "== run dirs kept for a look (broker logs in <dir>/logs; remove them when done):" >&2
      printf '   %s\n' "${run_dirs[@]}" >&2
    fi
  fi
}
trap finish EXIT

stage "gofmt"
# Tracked files and new ones not yet committed (but not ignored ones).
files=$(git ls-files --cached --others --exclude-standard -- '*.go' 2>/dev/null ||
  find . -name '*.go' -not -path './.git/*')
unformatted=$(echo "$files" | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

stage "go vet"
go vet ./...

stage "golangci-lint (make lint)"
make --no-print-directory lint

stage "unit tests: go test -race (all packages but tests/)"
unit_pkgs=$(go list ./... | grep -v '/tests$')
# The owner's model test runs more schedules than its default, from a base
# that changes per run so that CI keeps sampling new seeds; a failure prints
# the command that replays its seed, and this line says which range ran.
export OWNER_MODEL_SEED_BASE=${OWNER_MODEL_SEED_BASE:-$(( (RANDOM << 15 | RANDOM) * 100 ))}
export OWNER_MODEL_SCHEDULES=${OWNER_MODEL_SCHEDULES:-3000}
echo "model: TestOwnerModel runs seeds $OWNER_MODEL_SEED_BASE to $((OWNER_MODEL_SEED_BASE + OWNER_MODEL_SCHEDULES - 1))" \
  "(make model SEED_BASE=$OWNER_MODEL_SEED_BASE SCHEDULES=$OWNER_MODEL_SCHEDULES replays them)"
# The exactly-once model (TestTxnModel) samples from the same base.
export OWNER_TXN_MODEL_SEED_BASE=${OWNER_TXN_MODEL_SEED_BASE:-$OWNER_MODEL_SEED_BASE}
export OWNER_TXN_MODEL_SCHEDULES=${OWNER_TXN_MODEL_SCHEDULES:-3000}
echo "model: TestTxnModel runs seeds $OWNER_TXN_MODEL_SEED_BASE to $((OWNER_TXN_MODEL_SEED_BASE + OWNER_TXN_MODEL_SCHEDULES - 1))"
# shellcheck disable=SC2086 # a list of packages
go test -race -count=1 $unit_pkgs

stage "custom build: ./examples/custom-build with the kafka_watermark input"
custom_dir=$(mktemp -d "$tmp_root/wmc-custom-build.XXXXXX")
scratch+=("$custom_dir")
go build -o "$custom_dir/custom-build" ./examples/custom-build
"$custom_dir/custom-build" --version
# lint fails on an input type it does not know: passing proves the plugin
# is registered in the custom binary.
"$custom_dir/custom-build" lint config/minimal.yaml
rm -rf "$custom_dir"
echo "custom build: --version and lint of config/minimal.yaml (kafka_watermark input) passed"

if [ -f resources/monitoring/test.sh ]; then
  stage "monitoring checks"
  mon_log=$(mktemp "$tmp_root/wmc-monitoring.XXXXXX")
  scratch+=("$mon_log")
  bash resources/monitoring/test.sh 2>&1 | tee "$mon_log"
  # Its "SKIP (no promtool): ..." lines, as "no promtool, no python3".
  mon_skips=$(sed -n 's/^SKIP (\([^)]*\)).*/\1/p' "$mon_log" | paste -sd, - | sed 's/,/, /g')
  if [ -n "$mon_skips" ]; then skipped+=("monitoring checks skipped ($mon_skips)"); fi
fi

stage "Kafka broker"
if [ -z "${KAFKA_RUN_DIR:-}" ]; then
  KAFKA_RUN_DIR=$(mktemp -d "$tmp_root/wmc-test-kafka.XXXXXX")
  run_dirs+=("$KAFKA_RUN_DIR")
fi
export KAFKA_RUN_DIR
echo "run dir $KAFKA_RUN_DIR"
broker_up=1 # finish stops it, even a half-started one
bash resources/kafka/broker.sh start
export KAFKA_ENV_FILE="$KAFKA_RUN_DIR/env"
[ -s "$KAFKA_ENV_FILE" ] || { echo "broker.sh start wrote no env file at $KAFKA_ENV_FILE" >&2; exit 1; }

stage "end-to-end tests: go test ./tests/"
echo "Some cases make the binary fail on purpose (a wrong password, an untrusted CA, ...): a line"
echo "'EXPECTED: ...' precedes the errors they print, which are part of the test, not failures."
export WMC_E2E_RACE="${WMC_E2E_RACE:-1}"
e2e_log=$(mktemp "$tmp_root/wmc-e2e-log.XXXXXX")
scratch+=("$e2e_log")
e2e_start=$SECONDS
rc=0
go test -count=1 -timeout 20m -v ./tests/ 2>&1 | tee "$e2e_log" || rc=$?
e2e_secs=$((SECONDS - e2e_start))
echo "== end-to-end figures"
grep '^E2E-FIGURE ' "$e2e_log" || echo "(none)"
echo "E2E-FIGURE suite=tests seconds=$e2e_secs"
if [ "$rc" -ne 0 ]; then
  echo "end-to-end tests FAILED (exit $rc)" >&2
  exit "$rc"
fi

# The chaos harness starts its own broker (ports 29692-29694): stop this
# one first, so the two do not share 2 cores.
echo "== stopping the Kafka broker of the end-to-end tests"
bash resources/kafka/broker.sh stop
broker_up=0
if [ "${WMC_CHAOS:-1}" = 0 ] && [ "${CI:-}" != true ]; then
  echo "== chaos harness skipped (WMC_CHAOS=0)"
  skipped+=("chaos harness skipped (WMC_CHAOS=0)")
else
  chaos_args=${CHAOS_ARGS:-}
  case " $chaos_args" in
    *" --run-dir"* | *" -run-dir"*) ;; # the caller's
    *)
      chaos_dir=$(mktemp -d "$tmp_root/wmc-test-chaos.XXXXXX")
      run_dirs+=("$chaos_dir")
      chaos_args="$chaos_args --run-dir $chaos_dir"
      ;;
  esac
  stage "chaos harness, short profile: make chaos CHAOS_SEED=${CHAOS_SEED:-20261202} CHAOS_ARGS='${chaos_args# }'"
  # The harness's report goes to a run dir of its own (removed when the
  # run passes, kept and printed when it fails), not to chaos-out/ in the
  # checkout, which a make test left behind (issue 30).
  if [ -z "${CHAOS_OUT:-}" ]; then
    CHAOS_OUT=$(mktemp -d "$tmp_root/wmc-test-chaos-out.XXXXXX")
    run_dirs+=("$CHAOS_OUT")
  fi
  export CHAOS_OUT
  rc=0
  make --no-print-directory chaos CHAOS_SEED="${CHAOS_SEED:-20261202}" CHAOS_ARGS="$chaos_args" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "chaos harness FAILED (exit $rc); its report:" >&2
    cat "$CHAOS_OUT/chaos-report.md" >&2 || true
    exit "$rc"
  fi
fi

passed=1
if [ "${#skipped[@]}" -gt 0 ]; then
  except=$(printf '%s; ' "${skipped[@]}")
  echo "== all tests passed in $((SECONDS - t0)) s, except: ${except%; }"
else
  echo "== all tests passed in $((SECONDS - t0)) s"
fi
