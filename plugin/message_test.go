package plugin

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Every metadata key, read through a Bloblang mapping as a pipeline would,
// with the types Redpanda Connect's redpanda input gives them.
func TestMetadataThroughBloblang(t *testing.T) {
	const topic = "meta"
	c := newCluster(t, 1, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	ts := time.UnixMilli(1_700_000_000_123)
	require.NoError(t, cl.ProduceSync(context.Background(),
		&kgo.Record{Topic: topic, Key: []byte("k1"), Value: []byte("v1"), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("first")}, {Key: "h", Value: []byte("second")}, {Key: "n", Value: nil}}},
		&kgo.Record{Topic: topic, Value: nil, Timestamp: ts},
		&kgo.Record{Topic: topic, Key: []byte("k3"), Value: []byte("v3"), Timestamp: ts},
	).FirstErr())
	cl.Close()
	s := newSink()
	c.sink = s
	var got []map[string]any
	s.onWrite = func(b []rec) {
		for _, r := range b {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.value), &m), r.value)
			got = append(got, m)
		}
	}
	st := startStream(t, testEnv(t, s, 1), inputYAML(c.addr, topic, "meta", "  batch_max_records: 10\n"), 1, `mapping: |
  root.key = metadata("kafka_key").string().catch(null)
  root.key_type = metadata("kafka_key").type()
  root.topic = metadata("kafka_topic")
  root.partition = metadata("kafka_partition")
  root.partition_type = metadata("kafka_partition").type()
  root.offset = metadata("kafka_offset")
  root.lag = metadata("kafka_lag")
  root.ts_unix = metadata("kafka_timestamp_unix")
  root.ts_ms = metadata("kafka_timestamp_ms")
  root.tombstone = metadata("kafka_tombstone_message")
  root.h = metadata("h")
  root.n_type = metadata("n").type()
  root.headers = metadata("__rpcn_kafka_headers").type()
`)
	waitCommitted(t, c, "meta", topic, map[int32]int64{0: 3})
	st.stop(t)
	require.Len(t, got, 3)
	require.Equal(t, map[string]any{
		"key": "k1", "key_type": "bytes", "topic": topic, "partition": 0.0, "partition_type": "number",
		"offset": 0.0, "lag": 2.0, "ts_unix": 1_700_000_000.0, "ts_ms": 1_700_000_000_123.0, "tombstone": false,
		"h": "second", "n_type": "null", "headers": "unknown",
	}, got[0], "a repeated header keeps its last value; all of them are under __rpcn_kafka_headers")
	require.Equal(t, true, got[1]["tombstone"])
	require.Equal(t, "bytes", got[1]["key_type"], "a null key is nil bytes, as in Redpanda Connect")
	require.Equal(t, "", got[1]["key"])
	require.Equal(t, 0.0, got[2]["lag"], "the last record has nothing after it")
}
