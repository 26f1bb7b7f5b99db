package plugin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/produce"
)

// connectedOutput builds the output from its fields (seed_brokers added) and
// connects it; it is closed at cleanup.
func connectedOutput(t *testing.T, addr, fields string) *Output {
	t.Helper()
	pc, err := OutputConfigSpec().ParseYAML(fmt.Sprintf("seed_brokers: [ %q ]\nmetadata_max_age: 100ms\n%s", addr, fields), nil)
	require.NoError(t, err)
	conf, err := parseOutputConfig(pc)
	require.NoError(t, err)
	o := newOutput(conf, service.MockResources())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, o.Connect(ctx))
	t.Cleanup(func() { require.NoError(t, o.Close(context.Background())) })
	return o
}

// message is a message with a value and metadata.
func message(value string, meta ...string) *service.Message {
	m := service.NewMessage([]byte(value))
	for i := 0; i+1 < len(meta); i += 2 {
		m.MetaSetMut(meta[i], meta[i+1])
	}
	return m
}

// readTopic reads every record of topic, of partitions partitions, from its
// start to its end.
func (c *cluster) readTopic(t *testing.T, topic string, partitions int32) []*kgo.Record {
	t.Helper()
	var end int64
	for _, e := range c.endOffsets(t, topic, partitions) {
		end += e
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "reading %s: %d of %d", topic, len(out), end)
		out = append(out, fs.Records()...)
	}
	return out
}

// The Java client's partitions of keys whose murmur2 hashes Kafka's own
// tests pin (internal/produce's TestMurmur2PlacesKeysAsJava works them
// out), for 8 partitions.
var javaPartitionsOf8 = map[string]int32{"21": 4, "foobar": 6, "abc": 3, "a-little-bit-long-string": 0}

// Each message becomes a record on the topic, with the interpolated key on
// the partition the Java client would choose, the metadata the filter
// takes as headers in key order, and the timestamp given.
func TestOutputWritesRecords(t *testing.T) {
	c := newCluster(t, 8, "out")
	o := connectedOutput(t, c.addr, `
topic: '${! @dest }'
key: '${! @k }'
timestamp_ms: '${! @ts }'
metadata:
  include_prefixes: [ trace_ ]
  include_patterns: [ '^tenant$' ]
`)
	var b service.MessageBatch
	for key := range javaPartitionsOf8 {
		b = append(b, message("v-"+key, "dest", "out", "k", key, "ts", "1700000000123",
			"trace_id", "t-"+key, "tenant", "acme", "trace_a", "first", "other", "not a header"))
	}
	require.NoError(t, o.WriteBatch(t.Context(), b))

	got := c.readTopic(t, "out", 8)
	require.Len(t, got, len(javaPartitionsOf8))
	for _, r := range got {
		key := string(r.Key)
		require.Equal(t, javaPartitionsOf8[key], r.Partition, "partition of key %q", key)
		require.Equal(t, "v-"+key, string(r.Value))
		require.Equal(t, int64(1700000000123), r.Timestamp.UnixMilli())
		require.Equal(t, []kgo.RecordHeader{
			{Key: "tenant", Value: []byte("acme")},
			{Key: "trace_a", Value: []byte("first")},
			{Key: "trace_id", Value: []byte("t-" + key)},
		}, r.Headers, "the filtered metadata, in key order")
	}
}

// Without a metadata filter a record has no headers; with one, the list of
// headers a message read from Kafka carries is never a header itself. The
// optional fields written empty, as create writes them, are absent: no key
// (not an empty one), the time of producing, kgo's compression.
func TestOutputHeadersFilter(t *testing.T) {
	c := newCluster(t, 1, "out")
	plain := connectedOutput(t, c.addr, "topic: out\nkey: \"\"\npartition: \"\"\ntimestamp_ms: \"\"\ncompression: \"\"\n")
	all := connectedOutput(t, c.addr, "topic: out\nmetadata: { include_patterns: [ '.*' ] }\n")
	m := func() *service.Message {
		msg := message("v", "h", "1")
		msg.MetaSetMut(metaRecordHeaders, []kgo.RecordHeader{{Key: "h", Value: []byte("1")}})
		return msg
	}
	require.NoError(t, plain.WriteBatch(t.Context(), service.MessageBatch{m()}))
	require.NoError(t, all.WriteBatch(t.Context(), service.MessageBatch{m()}))
	got := c.readTopic(t, "out", 1)
	require.Len(t, got, 2)
	require.Empty(t, got[0].Headers)
	require.Nil(t, got[0].Key, "key: \"\" is no key")
	require.WithinDuration(t, time.Now(), got[0].Timestamp, time.Minute, "timestamp_ms: \"\" is the time of producing")
	require.Equal(t, []kgo.RecordHeader{{Key: "h", Value: []byte("1")}}, got[1].Headers)
}

// A record that fails fails only its message: the batch error names each
// failed message with its own error, and every other record is written.
// Failures of each kind: a topic that does not exist, a record larger than
// max_message_bytes (named with its size and the limit), a timestamp and a
// partition that do not evaluate to numbers.
func TestOutputBatchErrorPerMessage(t *testing.T) {
	c := newCluster(t, 2, "out")
	o := connectedOutput(t, c.addr, `
topic: '${! @dest }'
partitioner: manual
partition: '${! @p }'
timestamp_ms: '${! @ts.or("1700000000000") }'
max_message_bytes: 1KiB
allow_auto_topic_creation: false
`)
	b := service.MessageBatch{
		message("ok-0", "dest", "out", "p", "0"),
		message("missing", "dest", "no-such-topic", "p", "0"),
		message(strings.Repeat("x", 1000), "dest", "out", "p", "1"),
		message("ok-3", "dest", "out", "p", "1"),
		message("bad-ts", "dest", "out", "p", "0", "ts", "yesterday"),
		message("bad-partition", "dest", "out", "p", "first"),
		message("ok-6", "dest", "out", "p", "0"),
	}
	index := b.Index()
	err := o.WriteBatch(t.Context(), b)
	var berr *service.BatchError
	require.ErrorAs(t, err, &berr)
	require.Equal(t, 4, berr.IndexedErrors())
	require.Contains(t, err.Error(), "kafka_watermark output: 4 of 7 record(s) not written; the first, message 1: UNKNOWN_TOPIC_OR_PARTITION")

	failed := map[int]error{}
	berr.WalkMessagesIndexedBy(index, func(i int, _ *service.Message, err error) bool {
		if err != nil {
			failed[i] = err
		}
		return true
	})
	require.Len(t, failed, 4)
	require.ErrorIs(t, failed[1], kerr.UnknownTopicOrPartition)
	var tl *produce.TooLargeError
	require.ErrorAs(t, failed[2], &tl)
	require.Equal(t, `record of 1074 bytes for topic "out" (its size as a record batch of its own) is larger than max_message_bytes (1024 bytes): not produced`, failed[2].Error())
	require.EqualError(t, failed[4], `building its record: timestamp_ms: "yesterday" is not a whole number`)
	require.EqualError(t, failed[5], `building its record: partition: "first" is not a partition number`)

	var values []string
	for _, r := range c.readTopic(t, "out", 2) {
		values = append(values, fmt.Sprintf("%d:%s", r.Partition, r.Value))
	}
	sort.Strings(values)
	require.Equal(t, []string{"0:ok-0", "0:ok-6", "1:ok-3"}, values, "the records that did not fail, on the partitions named")
}

// A write before Connect, or after Close, is not connected: Benthos
// connects again.
func TestOutputNotConnected(t *testing.T) {
	pc, err := OutputConfigSpec().ParseYAML("seed_brokers: [ 127.0.0.1:1 ]\ntopic: t\n", nil)
	require.NoError(t, err)
	conf, err := parseOutputConfig(pc)
	require.NoError(t, err)
	o := newOutput(conf, service.MockResources())
	require.True(t, errors.Is(o.WriteBatch(t.Context(), service.MessageBatch{message("v")}), service.ErrNotConnected))
	require.NoError(t, o.Close(t.Context()))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err = o.Connect(ctx)
	require.ErrorContains(t, err, "kafka_watermark output: cannot reach seed brokers 127.0.0.1:1")
}

// Kafka to Kafka, through Benthos: the input's records written by the output
// to another topic, keyed as they were read. One record, made too large by
// the pipeline, fails alone: the output's batch error names it, the input
// retries only it (nack_retry), so every other record of its batch is
// written once, and its partition's commit never passes it while the other
// partitions commit to their end. The audit checks every commit against
// the records the output had sent to the broker at that moment (their
// origins travel in their headers).
//
// With the output's own batching (the input's batches of 10 merged into
// batches of 25) Benthos resolves the batch error per input batch
// (internal/transaction/tracked.go:41-71 of v4.60.0): an input batch none of
// whose messages failed is acknowledged, the one holding the refused record
// is failed whole, with that record's error, so the input retries all of it
// and its other records are written again; every other record still once.
func TestOutputKafkaToKafka(t *testing.T) {
	for _, batching := range []string{"", "batching: { count: 25, period: 50ms }"} {
		t.Run(fmt.Sprintf("output %q", batching), func(t *testing.T) { kafkaToKafka(t, batching) })
	}
}

func kafkaToKafka(t *testing.T, batching string) {
	const (
		src, dst   = "src", "dst"
		partitions = 4
		n          = 400
		poisonP    = 2
		poisonO    = 7
	)
	c := newCluster(t, partitions, src, dst)
	c.produce(t, src, partitions, n)
	s := newSink()
	c.sink = s
	c.watchProduced(t, dst, func(h map[string]string) rec {
		var r rec
		_, err := fmt.Sscanf(h["kafka_topic"]+" "+h["kafka_partition"]+" "+h["kafka_offset"], "%s %d %d", &r.topic, &r.partition, &r.offset)
		require.NoError(t, err, "origin headers %v", h)
		return r
	})

	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetLoggerYAML("level: ${TEST_LOG_LEVEL:warn}"))
	require.NoError(t, b.AddInputYAML(inputYAML(c.addr, src, "k2k", `
  batch_max_records: 10
  nack_retry: { max_retries: -1, initial_backoff: 10ms, max_backoff: 50ms }
`)))
	require.NoError(t, b.AddProcessorYAML(fmt.Sprintf(`mapping: |
  meta = @
  root = if @kafka_partition == %d && @kafka_offset == %d { "x".repeat(2000) } else { content() }
`, poisonP, poisonO)))
	require.NoError(t, b.AddOutputYAML(fmt.Sprintf(`
kafka_watermark:
  seed_brokers: [ %q ]
  topic: %s
  key: '${! @kafka_key }'
  max_message_bytes: 1KiB
  max_in_flight: 8
  metadata: { include_prefixes: [ kafka_ ] }
  %s
`, c.addr, dst, batching)))
	st, err := b.Build()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- st.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Stop(ctx))
		<-done
	})

	ends := c.endOffsets(t, src, partitions)
	stalled := ends[poisonP]
	delete(ends, poisonP)
	waitCommitted(t, c, "k2k", src, ends)
	origins := func() map[string]int {
		seen := map[string]int{}
		for _, r := range c.readTopic(t, dst, partitions) {
			h := map[string]string{}
			for _, hd := range r.Headers {
				h[hd.Key] = string(hd.Value)
			}
			seen[h["kafka_partition"]+"/"+h["kafka_offset"]]++
		}
		return seen
	}
	require.Eventually(t, func() bool { return len(origins()) == n-1 }, 30*time.Second, 10*time.Millisecond, "every record but the poisoned one written")
	require.LessOrEqual(t, c.lastCommit("k2k", src, poisonP), int64(poisonO), "the poisoned partition's commit never passes the record that failed (of %d)", stalled)

	kp := kgo.StickyKeyPartitioner(nil).ForTopic(dst)
	for _, r := range c.readTopic(t, dst, partitions) {
		require.Equal(t, int32(kp.Partition(r, partitions)), r.Partition, "record of key %q on its murmur2 partition", r.Key)
	}
	for origin, times := range origins() {
		var p, o int
		_, err := fmt.Sscanf(origin, "%d/%d", &p, &o)
		require.NoError(t, err)
		if batching != "" && p == poisonP && o < 10 {
			continue // the poisoned record's input batch, retried whole
		}
		require.Equal(t, 1, times, "record %s written once: only the failed record (or its input batch) was retried", origin)
	}
}
