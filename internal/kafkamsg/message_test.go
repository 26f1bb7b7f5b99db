package kafkamsg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Each message reads back its own record's values, with the types Redpanda
// Connect gives them, and setting one message's metadata leaves every other
// message's alone (the topic and partition are boxed once per batch).
func TestRecordsToBatchValues(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	var recs []*kgo.Record
	for i := range 5 {
		r := &kgo.Record{Topic: "t", Partition: 7, Offset: int64(100 + i), Key: []byte{'k', byte('0' + i)}, Value: []byte("v"),
			Timestamp: ts.Add(time.Duration(i) * time.Second)}
		if i == 3 {
			r.Key, r.Value = nil, nil
		}
		recs = append(recs, r)
	}
	batch := RecordsToBatch(recs, 110)
	require.Len(t, batch, len(recs))
	batch[0].MetaSetMut(metaOffset, 1)
	batch[0].MetaSetMut(metaKey, []byte("changed"))
	for i, m := range batch[1:] {
		i++
		r := recs[i]
		get := func(k string) any {
			v, ok := m.MetaGetMut(k)
			require.True(t, ok, "message %d: %s is not set", i, k)
			return v
		}
		require.Equal(t, r.Key, get(metaKey).([]byte), "message %d: kafka_key", i)
		require.Equal(t, r.Key == nil, get(metaKey).([]byte) == nil, "message %d: a null key is a nil []byte", i)
		require.Equal(t, "t", get(metaTopic).(string))
		require.Equal(t, 7, get(metaPartition).(int))
		require.Equal(t, any(int(r.Offset)), get(metaOffset), "message %d: kafka_offset", i)
		require.Equal(t, any(r.Timestamp.Unix()), get(metaTSUnix), "message %d: kafka_timestamp_unix", i)
		require.Equal(t, any(r.Timestamp.UnixMilli()), get(metaTSMs), "message %d: kafka_timestamp_ms", i)
		require.Equal(t, any(int64(110-r.Offset-1)), get(metaLag), "message %d: kafka_lag", i)
		require.Equal(t, r.Value == nil, get(metaTombstone).(bool))
		b, err := m.AsBytes()
		require.NoError(t, err)
		require.Equal(t, r.Value, b)
	}
	v, _ := batch[0].MetaGetMut(metaOffset)
	require.Equal(t, any(1), v)
}

// Records of one millisecond (or one second) share their boxed timestamps;
// each message still reads its own record's, across millisecond and second
// boundaries, negative (Kafka's -1: no timestamp) included, and setting one
// message's timestamp leaves the others sharing its box alone.
func TestRecordsToBatchSharedTimestamps(t *testing.T) {
	base := time.UnixMilli(1_700_000_000_998)
	stamps := []time.Time{
		base, base, base.Add(time.Millisecond), base.Add(time.Millisecond), base.Add(2 * time.Millisecond), // 998, 999, then the next second
		base.Add(time.Second), base, time.UnixMilli(-1), time.UnixMilli(-1), time.UnixMilli(0), time.UnixMilli(-1001),
	}
	recs := make([]*kgo.Record, len(stamps))
	for i, ts := range stamps {
		recs[i] = &kgo.Record{Topic: "t", Offset: int64(i), Timestamp: ts}
	}
	batch := RecordsToBatch(recs, -1)
	batch[0].MetaSetMut(metaTSMs, int64(5))
	batch[0].MetaSetMut(metaTSUnix, int64(6))
	for i, m := range batch[1:] {
		i++
		ms, _ := m.MetaGetMut(metaTSMs)
		unix, _ := m.MetaGetMut(metaTSUnix)
		require.Equal(t, any(stamps[i].UnixMilli()), ms, "message %d: kafka_timestamp_ms", i)
		require.Equal(t, any(stamps[i].Unix()), unix, "message %d: kafka_timestamp_unix", i)
	}
}

// NoLag sets no kafka_lag and leaves every other key as it was; an unknown
// log end (-1) sets a lag of 0, as before.
func TestRecordsToBatchNoLag(t *testing.T) {
	recs := []*kgo.Record{{Topic: "t", Partition: 1, Offset: 5, Value: []byte("v"), Timestamp: time.UnixMilli(1)}}
	keys := func(logEnd int64) map[string]any {
		out := map[string]any{}
		require.NoError(t, RecordsToBatch(recs, logEnd)[0].MetaWalkMut(func(k string, v any) error {
			out[k] = v
			return nil
		}))
		return out
	}
	unknown, none := keys(-1), keys(NoLag)
	require.Equal(t, any(int64(0)), unknown[metaLag], "kafka_lag with an unknown log end")
	require.NotContains(t, none, metaLag, "kafka_lag with NoLag")
	delete(unknown, metaLag)
	require.Equal(t, unknown, none, "every other key")
}

// Every message's context holds a span context that is invalid and does
// not record: the noop tracer's Start hands such a parent back as it is
// (the allocation noSpan exists to save), and a tracer that records reads
// it as no parent at all, as it read a message without one.
func TestRecordsToBatchSpanContext(t *testing.T) {
	batch := RecordsToBatch([]*kgo.Record{{Topic: "t", Value: []byte("v")}}, -1)
	ctx := batch[0].Context()
	sc := trace.SpanContextFromContext(ctx)
	require.False(t, sc.IsValid(), "the span context must be invalid: an SDK tracer then starts a root span, as with none")
	require.Equal(t, trace.SpanContextFromContext(context.Background()).TraceID(), sc.TraceID(), "tracing_id() reads zeros as before")
	require.False(t, trace.SpanFromContext(ctx).IsRecording(), "Benthos's GetActiveSpan must still find no active span")

	got, span := noop.NewTracerProvider().Tracer("").Start(ctx, "input")
	require.True(t, got == ctx, "the noop tracer wrapped the context (a context.WithValue per message per stage): noop.Tracer.Start changed")
	require.False(t, span.IsRecording())

	none := context.Background()
	got, _ = noop.NewTracerProvider().Tracer("").Start(none, "input")
	require.False(t, got == none, "without a span context the noop tracer wraps: the test would not tell the two apart")
}
