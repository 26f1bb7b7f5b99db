package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// pipelineConfig is a kafka_watermark → file pipeline: every record becomes
// one JSON line naming its topic, partition and offset.
func pipelineConfig(addr, topic, group, outFile string) string {
	return fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: [ %q ]
    topics: [ %q ]
    consumer_group: %q
    commit_period: 100ms
    fetch_max_wait: 250ms
    batch_max_records: 10
pipeline:
  processors:
    - mapping: |
        root.topic = @kafka_topic
        root.partition = @kafka_partition
        root.offset = @kafka_offset
        root.value = content().string()
output:
  file:
    path: %q
    codec: lines
`, addr, topic, group, outFile)
}

type outLine struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
}

// readLines returns the JSON lines written so far to a file output; a
// missing file or a partly written last line count as not there yet.
func readLines(t testingT, path string) []outLine {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []outLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l outLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// distinct counts the distinct records among lines.
func distinct(lines []outLine) int {
	seen := map[string]bool{}
	for _, l := range lines {
		seen[fmt.Sprintf("%s/%d/%d", l.Topic, l.Partition, l.Offset)] = true
	}
	return len(seen)
}

// `watermark-connect run x.yaml` and `watermark-connect -c x.yaml` run a
// pipeline the way Benthos users expect: it consumes, and on SIGINT it
// shuts down gracefully, exits 0, and has committed everything delivered.
func TestRunPipeline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args func(cfg string) []string
	}{
		{"run", func(cfg string) []string { return []string{"run", cfg} }},
		{"-c", func(cfg string) []string { return []string{"-c", cfg} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const (
				topic      = "events"
				partitions = 3
				n          = 300
			)
			k := newTestKafka(t, partitions, topic)
			k.produce(t, topic, partitions, n)
			dir := t.TempDir()
			out := filepath.Join(dir, "out.jsonl")
			cfg := writeFile(t, dir, "pipeline.yaml", pipelineConfig(k.addr, topic, "g-"+tc.name, out)+`
http:
  enabled: false
logger:
  level: warn
`)
			p := startBinary(t, nil, tc.args(cfg)...)
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				assert.Equal(ct, n, distinct(readLines(ct, out)), "distinct records in %s", out)
			}, 30*time.Second, poll)
			require.False(t, p.exited(), "the pipeline keeps running: %s", p.out.String())
			require.Equal(t, 0, p.interrupt(t), "graceful shutdown exits 0:\n%s", p.out.String())
			assert.Equal(t, k.endOffsets(t, topic), k.committed(t, "g-"+tc.name, topic),
				"after a graceful shutdown the group has committed everything delivered")
		})
	}
}

// byTopic turns committed-offset series into topic -> partition -> offset;
// a series whose partition does not parse fails ct.
func byTopic(ct assert.TestingT, series []testkit.Sample) map[string]map[int32]int64 {
	got := map[string]map[int32]int64{}
	for _, s := range series {
		p, err := strconv.ParseInt(s.Labels["partition"], 10, 32)
		if !assert.NoError(ct, err, "partition of %v", s) {
			continue
		}
		if got[s.Labels["topic"]] == nil {
			got[s.Labels["topic"]] = map[int32]int64{}
		}
		got[s.Labels["topic"]][int32(p)] = int64(s.Value)
	}
	return got
}

// committedSeries scrapes http://addr/metrics and returns every
// kafka_watermark_committed_offset series.
func committedSeries(addr string) ([]testkit.Sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := testkit.ScrapeMetrics(ctx, addr)
	if err != nil {
		return nil, err
	}
	return m.Find("kafka_watermark_committed_offset"), nil
}

// Two streams in one process (streams mode), each with its own group and
// topic on one cluster: each stream's sink gets only its topic's records,
// and the shared prometheus endpoint shows each topic's committed offsets
// only under its own stream's labels.
func TestStreamsModeIsolatesStreams(t *testing.T) {
	t.Parallel()
	const partitions = 2
	streams := map[string]struct{ topic, group string }{ // stream id (file name) -> its topic and group
		"orders":   {"orders-topic", "orders-group"},
		"payments": {"payments-topic", "payments-group"},
	}
	counts := map[string]int{"orders": 200, "payments": 120}
	k := newTestKafka(t, partitions, "orders-topic", "payments-topic")
	for id, s := range streams {
		k.produce(t, s.topic, partitions, counts[id])
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	mainCfg := writeFile(t, dir, "main.yaml", fmt.Sprintf(`
http:
  address: %s
metrics:
  prometheus: {}
logger:
  level: warn
`, addr))
	args := []string{"-c", mainCfg, "streams"}
	outs := map[string]string{}
	for id, s := range streams {
		outs[id] = filepath.Join(dir, id+".jsonl")
		args = append(args, writeFile(t, dir, id+".yaml", pipelineConfig(k.addr, s.topic, s.group, outs[id])))
	}
	p := startBinary(t, nil, args...)

	for id, s := range streams {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Equal(ct, counts[id], distinct(readLines(ct, outs[id])), "stream %s: distinct records", id)
		}, 30*time.Second, poll)
		for _, l := range readLines(t, outs[id]) {
			require.Equal(t, s.topic, l.Topic, "stream %s got a record of another topic: %+v", id, l)
		}
	}

	// Both topics' committed offsets reach the log end on /metrics, each
	// series labelled with its own stream only.
	url := "http://" + addr + "/metrics"
	want := map[string]map[int32]int64{}
	for _, s := range streams {
		want[s.topic] = k.endOffsets(t, s.topic)
	}
	var series []testkit.Sample
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		s, err := committedSeries(addr)
		if !assert.NoError(ct, err, "scraping %s", url) {
			return
		}
		series = s
		if !assert.Equal(ct, want, byTopic(ct, s), "committed offsets at the log end on %s; scraped %v", url, s) {
			ct.Errorf("the broker's committed offsets: orders %v, payments %v",
				k.committed(ct, "orders-group", "orders-topic"), k.committed(ct, "payments-group", "payments-topic"))
		}
	}, 30*time.Second, poll)
	paths := map[string]string{}
	for _, s := range series {
		id := s.Labels["stream"]
		require.Contains(t, streams, id, "series without a known stream label: %v", s)
		assert.Equal(t, streams[id].topic, s.Labels["topic"], "stream %s reports another stream's topic: %v", id, s)
		require.NotEmpty(t, s.Labels["path"], "series without a path label: %v", s)
		paths[id] = s.Labels["path"]
	}
	require.Len(t, paths, 2, "both streams have series: %v", series)
	for _, topic := range []string{"orders-topic", "payments-topic"} {
		var ids []string
		for _, s := range series {
			if s.Labels["topic"] == topic {
				ids = append(ids, s.Labels["stream"])
			}
		}
		require.Len(t, ids, partitions, "one series per partition of %s, all of one stream: %v", topic, ids)
		require.Equal(t, ids[0], ids[1], "the series of %s belong to one stream: %v", topic, ids)
	}
	require.Equal(t, 0, p.interrupt(t), "streams mode shuts down gracefully")
}

// run refuses, before it connects anything, a kafka_watermark output bound
// to a consumer group that no exactly-once input of the config consumes,
// naming the group: the rule no component's lint can see.
func TestRunRefusesUnboundExactlyOnceOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "pipeline.yaml", `
http:
  enabled: false
input:
  kafka_watermark:
    seed_brokers: [ "127.0.0.1:1" ]
    topics: [ orders ]
    consumer_group: enrich
output:
  kafka_watermark:
    seed_brokers: [ "127.0.0.1:1" ]
    topic: out
    exactly_once: { consumer_group: enrich }
`)
	out, code := runBinary(t, nil, "run", cfg)
	require.NotEqual(t, 0, code, "run must refuse it:\n%s", out)
	require.Contains(t, out, `bound to consumer_group "enrich" (exactly_once.consumer_group), but no kafka_watermark input of this config consumes that group with exactly_once: true`)
}
