#!/usr/bin/env bash
# make bench: every figure of docs/BENCHMARKS.md, parts 1 to 9 in its order,
# in one markdown file headed by the machine, the versions, the revision and
# the date, ready to go into docs/BENCHMARKS.md.
#
#   bash bench/all.sh OUT [DIR]
#
# Parts 2, 3, 4 and 6 are the Makefile's bench-ack, bench-scale,
# bench-freshness and bench-tracker; parts 1, 5 and 7 are three runs of
# bench/e2e.sh (its broker started and stopped by each), one of the
# throughput, profile and convert sections, one of the replay, one of
# key-ordered delivery (make bench-keyorder; it builds the Parallel Consumer
# contender with Maven); part 9 is bench/share.sh (the kafka_share input,
# its broker started and stopped by it). Each part's
# markdown is kept in DIR/parts/N-name.md and its log in DIR/parts/N-name.log
# (DIR defaults to OUT's directory), the CPU profiles of parts 1 and 7 in
# DIR/profiles. Every section of OUT gives the command, the load average
# (uptime) at its start and its wall time.
#
# OUT is written only once every part has succeeded: a failed part stops the
# run with a non-zero status, and OUT (removed at the start) stays absent.
#
# Environment: ROUNDS, BENCHTIME and BENCH_BASE (the in-process parts; see
# the Makefile, whose defaults apply when they are unset), BENCH_E2E_FLAGS
# (flags for both bench/e2e runs; none: bench/e2e's defaults),
# BENCH_KAFKA_PORT and BENCH_KAFKA_RUN_DIR (bench/e2e.sh), MAKE. make bench
# sets ROUNDS and BENCH_E2E_FLAGS to fit its time budget (see the Makefile).

# The backquotes in single-quoted strings here are markdown's, not the shell's.
# shellcheck disable=SC2016
set -euo pipefail

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 OUT [DIR]" >&2; exit 2; }
out=$(realpath -m "$1")
dir=$(realpath -m "${2:-$(dirname "$out")}")
cd "$(dirname "$0")/.."

read -r -a e2e_flags <<<"${BENCH_E2E_FLAGS:-}"
make=${MAKE:-make}

parts=$dir/parts
rm -f "$out"
mkdir -p "$parts" "$(dirname "$out")"
body=$parts/.body.md
: >"$body"

log() { printf 'bench/all.sh: %s\n' "$*" >&2; }

# words ARGS...: ARGS as a shell would take them back, each after a space,
# quoted only when it must be (an empty -old-ref ''), unlike printf %q,
# which also escapes the commas of -sections a,b.
words() {
	local a
	for a; do
		if [[ -z $a || $a == *[!A-Za-z0-9_./,=:@%+-]* ]]; then
			printf " '%s'" "${a//\'/\'\\\'\'}"
		else
			printf ' %s' "$a"
		fi
	done
}

# e2e ARGS...: bench/e2e.sh with ARGS; its markdown on stdout, its progress
# (and a copy of the markdown) on stderr.
e2e() {
	local md=$parts/.e2e.md
	rm -f "$md"
	bash bench/e2e.sh "${e2e_flags[@]}" "$@" -out "$md" >&2 || return
	cat "$md" && rm "$md"
}

# part N NAME TITLE COMMAND...: runs COMMAND, whose stdout is the part's
# markdown, and adds it to the body as section "N. TITLE".
part() {
	local n=$1 name=$2 title=$3
	shift 3
	local md=$parts/$n-$name.md logf=$parts/$n-$name.log
	local shown load t0=$SECONDS
	case $1 in
	e2e) shown="bash bench/e2e.sh$(words "${e2e_flags[@]}" "${@:2}")" ;;
	"$make") shown="make ${*: -1}" ;;
	*) shown=$* ;;
	esac
	load=$(uptime | sed 's/.*load average: *//')
	log "part $n ($title), load average $load: $shown"
	if ! "$@" >"$md" 2> >(tee "$logf" >&2); then
		log "part $n ($title) failed after $((SECONDS - t0)) s: see $logf; $out not written"
		exit 1
	fi
	local took=$((SECONDS - t0))
	log "part $n ($title) done in $((took / 60))m$((took % 60))s"
	{
		printf '## %s. %s\n\n' "$n" "$title"
		printf '`%s`: load average (`uptime`) at the start %s; took %dm%02ds.\n\n' "$shown" "$load" $((took / 60)) $((took % 60))
		cat "$md"
		echo
	} >>"$body"
}

started=$(date -u '+%Y-%m-%d %H:%M')
t_all=$SECONDS
kafka_version=${KAFKA_VERSION:-$(sed -n 's/^KAFKA_VERSION=\${KAFKA_VERSION:-\(.*\)}$/\1/p' resources/kafka/broker.sh)}
mod() { go list -m -f '{{.Version}}' "$1"; }
header=$(
	printf '# Benchmarks: a `make bench` run\n\n'
	printf 'Every part of docs/BENCHMARKS.md, produced by `make bench` (bench/all.sh).\n\n'
	printf -- '- **Revision**: %s (%s)\n' "$(git describe --always --dirty)" "$(git rev-parse HEAD)"
	printf -- '- **Machine**: `nproc` %s; `lscpu` model %s (%s); %s GiB RAM; Linux %s\n' \
		"$(nproc)" "$(lscpu | sed -n 's/^Model name: *//p')" "$(uname -m)" \
		"$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" "$(uname -r)"
	printf -- '- **Versions**: %s; Benthos %s, franz-go %s (kadm %s, kfake %s), Jeffail/checkpoint %s (`go list -m`); Apache Kafka %s (resources/kafka/broker.sh)\n' \
		"$(go version | sed 's/^go version //')" "$(mod github.com/redpanda-data/benthos/v4)" \
		"$(mod github.com/twmb/franz-go)" "$(mod github.com/twmb/franz-go/pkg/kadm)" \
		"$(mod github.com/twmb/franz-go/pkg/kfake)" "$(mod github.com/Jeffail/checkpoint)" "$kafka_version"
	printf -- '- **Settings**: ROUNDS=%s BENCHTIME=%s%s; bench/e2e flags `%s`\n' \
		"${ROUNDS:-5}" "${BENCHTIME:-1s}" "${BENCH_BASE:+ BENCH_BASE=$BENCH_BASE}" "${e2e_flags[*]}"
)

part 1 e2e 'End to end on the real broker' e2e -sections throughput,profile,convert -profile-dir "$dir/profiles"
part 2 ack 'The ack path' "$make" -s --no-print-directory bench-ack
part 3 scale 'Scale' "$make" -s --no-print-directory bench-scale
part 4 freshness 'Commit freshness' "$make" -s --no-print-directory bench-freshness
part 5 replay 'Replay cost' e2e -sections replay -old-ref ''
part 6 tracker 'The tracker against Jeffail/checkpoint' "$make" -s --no-print-directory bench-tracker
part 7 keyorder 'Key-ordered delivery' e2e -sections keyorder -profile-dir "$dir/profiles"
part 8 k2k 'Kafka to Kafka, at least once and exactly once' e2e -sections throughput -contenders wm,k2k,k2k-eos -partitions 8 -sizes 100,1024 -codecs none -old-ref ''
part 9 share 'The kafka_share input: scaling past the partitions, CPU per record' bash bench/share.sh

took=$((SECONDS - t_all))
{
	printf '%s\n' "$header"
	printf -- '- **Date**: %s to %s UTC (%dm%02ds)\n\n' "$started" "$(date -u '+%H:%M')" $((took / 60)) $((took % 60))
	cat "$body"
} >"$out.tmp"
mv "$out.tmp" "$out"
rm -f "$body"
log "wrote $out in $((took / 60))m$((took % 60))s; the parts are in $parts"
