#!/usr/bin/env bash
# Runs Go benchmarks in interleaved rounds and prints a markdown table
# (bench/benchtab): every round runs each contender once, in an order that
# rotates from round to round, so the noise of a shared machine falls on all
# of them alike.
#
#   bench/rounds.sh PKG BENCH_REGEX [UNITS]
#
# The contender is the working tree ("main"). With BENCH_BASE set to a git
# revision, that revision is a second contender ("base", listed first, so
# the ratios read main / base): its package is built from `git archive` of
# the revision with the working tree's benchmark files (PKG/bench_*_test.go)
# copied in, so both run the same benchmarks on their own code. BASE_PKG
# names the package in that revision when it is not PKG (code that moved
# since, as the engine from plugin to internal/engine): the base then runs
# its own benchmark files, which must carry the same benchmark names.
#
# Environment: ROUNDS (default 5), BENCHTIME (default 1s), SPLIT (a sed -E
# expression that names the contender from the benchmark name instead, for
# contenders that are benchmarks of one binary, as tracker vs checkpoint)
# BASE_NAME (the contender the ratios compare to, default the first) and
# TRIM (a prefix to drop from the benchmark names), ROUNDS_RAW (a file to
# keep every round's benchmark lines in, "contender Benchmark... values", for
# per-round figures).
set -euo pipefail
pkg=$1 regex=$2 units=${3:-}
rounds=${ROUNDS:-5} benchtime=${BENCHTIME:-1s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

names=() bins=()
if [[ -n "${BENCH_BASE:-}" ]]; then
	mkdir "$tmp/base"
	git archive "$BENCH_BASE" | tar -x -C "$tmp/base"
	base_pkg=${BASE_PKG:-$pkg}
	if [[ $base_pkg == "$pkg" ]]; then
		cp "$pkg"/bench_*_test.go "$tmp/base/$pkg/" 2>/dev/null || true
	fi
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" "./$base_pkg")
	names+=(base) bins+=("$tmp/base.test")
fi
go test -c -o "$tmp/main.test" "./$pkg"
names+=(main) bins+=("$tmp/main.test")

n=${#bins[@]}
for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < n; k++)); do
		i=$(((r + k) % n))
		# The test binary runs in the package's directory, as go test does.
		dir=$pkg
		if [[ ${names[$i]} == base ]]; then dir=${BASE_PKG:-$pkg}; fi
		(cd "$dir" && "${bins[$i]}" -test.run '^$' -test.bench "$regex" -test.benchtime "$benchtime" -test.count 1) |
			grep '^Benchmark' | sed "s/^/${names[$i]} /" >>"$tmp/out"
	done
done
if [[ -n "${SPLIT:-}" ]]; then
	sed -E "$SPLIT" "$tmp/out" >"$tmp/split" && mv "$tmp/split" "$tmp/out"
fi
if [[ -n "${ROUNDS_RAW:-}" ]]; then
	cp "$tmp/out" "$ROUNDS_RAW"
fi
go run ./bench/benchtab ${units:+-units "$units"} ${BASE_NAME:+-base "$BASE_NAME"} ${TRIM:+-trim "$TRIM"} <"$tmp/out"
