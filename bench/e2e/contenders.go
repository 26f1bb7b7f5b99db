package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// binaries are the programs under test, built once per driver run.
type binaries struct {
	head     string // cmd/watermark-connect of the working tree
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
}

func contenders(b binaries, brokers string) []contender {
	seeds := yamlList(strings.Split(brokers, ","))
	wm := func(bin, extra string) func(string, cell, string, string, bool) (string, []string, error) {
		return func(dir string, c cell, group, addr string, debug bool) (string, []string, error) {
			input := fmt.Sprintf("kafka_watermark:\n    seed_brokers: %s\n    topics: [ %q ]\n    consumer_group: %q\n%s", seeds, c.topic, group, extra)
			return benthos(dir, bin, input, addr, debug)
		}
	}
	cs := []contender{
		{"raw", "raw franz-go poll loop (bench/rawloop): poll and count, no Benthos", scrapeRaw, func(_ string, c cell, group, addr string, _ bool) (string, []string, error) {
			return b.rawloop, []string{"-brokers", brokers, "-topic", c.topic, "-group", group, "-http", addr}, nil
		}},
		{"base", "baseline (bench/baseline): franz-go autocommit input, no tracking, plugin.RecordsToBatch", scrapeBenthos, func(dir string, c cell, group, addr string, debug bool) (string, []string, error) {
			input := fmt.Sprintf("baseline_kafka:\n    seed_brokers: %s\n    topics: [ %q ]\n    consumer_group: %q\n", seeds, c.topic, group)
			return benthos(dir, b.baseline, input, addr, debug)
		}},
		{"wm", "kafka_watermark, commit_metadata: true (the default)", scrapeBenthos, wm(b.head, "    commit_metadata: true\n")},
		{"wm-nometa", "kafka_watermark, commit_metadata: false", scrapeBenthos, wm(b.head, "    commit_metadata: false\n")},
	}
	if b.old != "" {
		// That commit has no commit_metadata field: its defaults otherwise.
		cs = append(cs, contender{"wm-old", "kafka_watermark at " + b.oldRef + " (the fixed \"before\"), its defaults", scrapeBenthos, wm(b.old, "")})
	}
	return cs
}

// benthos writes a config reading input into drop, with the Prometheus
// exporter on addr (and /debug/pprof with debug), and returns the command.
func benthos(dir, bin, input, addr string, debug bool) (string, []string, error) {
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
  drop: {}
`, addr, debug, input)
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
