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
// headers a message read from Kafka carries is never a header itself.
func TestOutputHeadersFilter(t *testing.T) {
	c := newCluster(t, 1, "out")
	plain := connectedOutput(t, c.addr, "topic: out\n")
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
