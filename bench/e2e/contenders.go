package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// binaries are the programs under test, built once per driver run.
type binaries struct {
	head     string // cmd/watermark-connect of the working tree
	headOff  string // the same built with -pgo=off; "" when not built
	old      string // cmd/watermark-connect at -old-ref; "" when not built
	oldRef   string
	baseline string // bench/baseline
	rawloop  string // bench/rawloop
	pcJar    string // bench/parallelconsumer's shaded jar; "" when not built
}

// contender is one way of reading a cell's topic into drop.
type contender struct {
	key    string        // short column name
	name   string        // what it is, for the tables' legend
	scrape time.Duration // how often its /metrics is read
	// args writes what the process needs into dir and returns its binary
	// and arguments; addr is where it must serve /metrics.
	args func(dir string, c cell, group, addr string, debug bool) (string, []string, error)
	env  []string // added to the process's environment
}

// Variants of today's binary (-variants), for telling the parts of a gain
// apart: each is `wm` with one thing changed.
const (
	variantNoPGO = "nopgo" // built with -pgo=off: the gain of default.pgo is wm / wm-nopgo
	variantPlain = "plain" // built with -pgo=off and run with GOGC=100: neither the GC settings nor PGO
	variantGOGC  = "gogc"  // gogc<N>: run with GOGC=<N>, which wins over the binary's own GC settings
	// fetchmax<size> and partmax<size>: fetch_max_bytes and
	// fetch_max_partition_bytes at <size> (a size as the fields take it:
	// 8MiB), for the fetch sizing at many partitions (issue 31).
	variantFetchMax = "fetchmax"
	variantPartMax  = "partmax"
)

// contenders returns the contenders named in keys (of raw, base, wm,
// wm-nometa and wm-old; wm-old only when it was built), then one per
// variant.
func contenders(b binaries, brokers string, keys, variants []string) ([]contender, error) {
	var cs []contender
	for _, c := range standardContenders(b, brokers) {
		if slices.Contains(keys, c.key) {
			cs = append(cs, c)
		}
	}
	for _, v := range variants {
		c, err := variant(b, brokers, v)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// variant is `wm` (kafka_watermark, commit_metadata: true) of today's
// binary with one thing changed.
func variant(b binaries, brokers, v string) (contender, error) {
	wm := wmArgs(b.head, brokers, "    commit_metadata: true\n")
	switch {
	case v == variantNoPGO:
		return contender{"wm-" + v, "`wm` built with -pgo=off (no profile-guided optimisation)", scrapeBenthos, wmArgs(b.headOff, brokers, "    commit_metadata: true\n"), nil}, nil
	case v == variantPlain:
		return contender{"wm-" + v, "`wm` built with -pgo=off and run with GOGC=100 (Go's defaults: neither the binary's GC settings nor PGO)", scrapeBenthos, wmArgs(b.headOff, brokers, "    commit_metadata: true\n"), []string{"GOGC=100"}}, nil
	case strings.HasPrefix(v, variantGOGC):
		n, err := strconv.Atoi(strings.TrimPrefix(v, variantGOGC))
		if err != nil || n < 1 {
			return contender{}, fmt.Errorf("-variants %q: want gogc<percent>, e.g. gogc200", v)
		}
		return contender{"wm-" + v, fmt.Sprintf("`wm` run with GOGC=%d in its environment (which wins over the binary's own GC settings)", n), scrapeBenthos, wm, []string{fmt.Sprintf("GOGC=%d", n)}}, nil
	case strings.HasPrefix(v, variantFetchMax), strings.HasPrefix(v, variantPartMax):
		field, size := "fetch_max_bytes", strings.TrimPrefix(v, variantFetchMax)
		if strings.HasPrefix(v, variantPartMax) {
			field, size = "fetch_max_partition_bytes", strings.TrimPrefix(v, variantPartMax)
		}
		if size == "" {
			return contender{}, fmt.Errorf("-variants %q: want %s<size> or %s<size>, e.g. %s8MiB", v, variantFetchMax, variantPartMax, variantFetchMax)
		}
		extra := fmt.Sprintf("    commit_metadata: true\n    %s: %s\n", field, size)
		return contender{"wm-" + v, fmt.Sprintf("`wm` with `%s: %s`", field, size), scrapeBenthos, wmArgs(b.head, brokers, extra), nil}, nil
	}
	return contender{}, fmt.Errorf("-variants %q: want %s, %s, %s<percent>, %s<size> or %s<size>", v, variantNoPGO, variantPlain, variantGOGC, variantFetchMax, variantPartMax)
}

// needsNoPGO says whether a variant runs the head binary built with -pgo=off.
func needsNoPGO(variants []string) bool {
	return slices.Contains(variants, variantNoPGO) || slices.Contains(variants, variantPlain)
}

// wmArgs runs bin with a kafka_watermark input; extra is more of its fields.
func wmArgs(bin, brokers, extra string) func(string, cell, string, string, bool) (string, []string, error) {
	seeds := yamlList(strings.Split(brokers, ","))
	return func(dir string, c cell, group, addr string, debug bool) (string, []string, error) {
		input := fmt.Sprintf("kafka_watermark:\n    seed_brokers: %s\n    topics: [ %q ]\n    consumer_group: %q\n%s", seeds, c.topic, group, extra)
		return benthos(dir, bin, input, addr, debug)
	}
}

func standardContenders(b binaries, brokers string) []contender {
	seeds := yamlList(strings.Split(brokers, ","))
	wm := func(bin, extra string) func(string, cell, string, string, bool) (string, []string, error) {
		return wmArgs(bin, brokers, extra)
	}
	cs := []contender{
		{"raw", "raw franz-go poll loop (bench/rawloop): poll and count, no Benthos", scrapeRaw, func(_ string, c cell, group, addr string, _ bool) (string, []string, error) {
			return b.rawloop, []string{"-brokers", brokers, "-topic", c.topic, "-group", group, "-http", addr}, nil
		}, nil},
		{"base", "baseline (bench/baseline): franz-go autocommit input, no tracking, plugin.RecordsToBatch", scrapeBenthos, func(dir string, c cell, group, addr string, debug bool) (string, []string, error) {
			input := fmt.Sprintf("baseline_kafka:\n    seed_brokers: %s\n    topics: [ %q ]\n    consumer_group: %q\n", seeds, c.topic, group)
			return benthos(dir, b.baseline, input, addr, debug)
		}, nil},
		{"wm", "kafka_watermark, commit_metadata: true (the default)", scrapeBenthos, wm(b.head, "    commit_metadata: true\n"), nil},
		{"wm-nometa", "kafka_watermark, commit_metadata: false", scrapeBenthos, wm(b.head, "    commit_metadata: false\n"), nil},
		{keyK2K, "kafka_watermark into the kafka_watermark output (at least once), to the cell's topic + `-out`, `max_in_flight: 16`", scrapeBenthos, k2kArgs(b.head, brokers, false), nil},
		{keyK2KEOS, "the same, exactly once: the output bound to the input's group, `exactly_once: true`, `commit_period: 1s`", scrapeBenthos, k2kArgs(b.head, brokers, true), nil},
	}
	if b.old != "" {
		// That commit has no commit_metadata field: its defaults otherwise.
		cs = append(cs, contender{"wm-old", "kafka_watermark at " + b.oldRef + " (the fixed \"before\"), its defaults", scrapeBenthos, wm(b.old, ""), nil})
	}
	return cs
}

// The Kafka to Kafka contenders (issue 32): records/s and CPU per record of
// the kafka_watermark output, at least once and exactly once, beside the
// input into drop (wm). Their output topic is the cell's with outSuffix,
// made with the cell (newMatrix).
const (
	keyK2K    = "k2k"
	keyK2KEOS = "k2k-eos"
	outSuffix = "-out"
)

// isK2K says whether a contender writes to the cell's output topic.
func isK2K(key string) bool { return key == keyK2K || key == keyK2KEOS }

// k2kArgs runs bin from the cell's topic to its output topic through the
// kafka_watermark output; eos binds it to the input's group.
func k2kArgs(bin, brokers string, eos bool) func(string, cell, string, string, bool) (string, []string, error) {
	seeds := yamlList(strings.Split(brokers, ","))
	return func(dir string, c cell, group, addr string, debug bool) (string, []string, error) {
		in, out := "", ""
		if eos {
			in = "    exactly_once: true\n    commit_period: 1s\n    transactional_id: " + strconv.Quote("bench-"+group) + "\n"
			out = fmt.Sprintf("    exactly_once: { consumer_group: %q }\n", group)
		}
		input := fmt.Sprintf("kafka_watermark:\n    seed_brokers: %s\n    topics: [ %q ]\n    consumer_group: %q\n%s", seeds, c.topic, group, in)
		output := fmt.Sprintf("kafka_watermark:\n    seed_brokers: %s\n    topic: %q\n    key: ${! @kafka_key }\n    max_in_flight: 16\n%s", seeds, c.topic+outSuffix, out)
		return benthosTo(dir, bin, input, output, addr, debug)
	}
}

// benthos writes a config reading input into drop, with the Prometheus
// exporter on addr (and /debug/pprof with debug), and returns the command.
func benthos(dir, bin, input, addr string, debug bool) (string, []string, error) {
	return benthosTo(dir, bin, input, "drop: {}", addr, debug)
}

// benthosTo is benthos with output instead of drop.
func benthosTo(dir, bin, input, output, addr string, debug bool) (string, []string, error) {
	yaml := fmt.Sprintf(`http:
  enabled: true
  address: %s
  debug_endpoints: %v
logger:
  level: WARN
metrics:
  prometheus: {}
input:
  %s
output:
  %s
`, addr, debug, input, output)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return "", nil, err
	}
	return bin, []string{"-c", path}, nil
}

func yamlList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[ " + strings.Join(q, ", ") + " ]"
}
