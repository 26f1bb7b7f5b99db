// Package convert measures plugin.RecordsToBatch, the record-to-message
// conversion, beside the conversion as it was at 4cc7f9b (the fixed
// "before" of docs/BENCHMARKS.md) and at 29b9199 (issue 31's "before"), on
// one batch of 1024 records of 100 B with keys and no headers, their
// timestamps either one millisecond apart (ts=distinct: every record boxes
// its own) or 32 records to a millisecond (ts=shared: a producer at about
// 30,000 records a second, or a log-append-time topic):
//
//	go test ./bench/convert -run '^$' -bench . -benchmem
//
// Allocations and bytes per record are exact. Time on a shared machine is
// not, so bench/e2e also counts instructions under valgrind (cachegrind,
// GOGC=off so the count is the conversion's own and does not vary with GC
// timing) through TestConvertLoop.
package convert

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/plugin"
)

// batchLen is the default batch_max_records.
const batchLen = 1024

// logEnd puts every record of the batch well behind the log end, so each
// kafka_lag is a number of its own, as in a consumer that is behind.
const logEnd = 5_000_000

// sharedPerMs is the records to a millisecond of ts=shared.
const sharedPerMs = 32

// batch is the records converted: perMs records to a millisecond.
func batch(perMs int) []*kgo.Record {
	rs := make([]*kgo.Record, batchLen)
	ts := time.UnixMilli(1_700_000_000_000)
	v := make([]byte, 100)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: "bench", Partition: 3, Offset: int64(1_000_000 + i), Key: []byte(strconv.Itoa(i)),
			Value: v, Timestamp: ts.Add(time.Duration(i/perMs) * time.Millisecond)}
	}
	return rs
}

// conversions are the contenders, by name.
var conversions = map[string]func([]*kgo.Record) service.MessageBatch{
	"4cc7f9b": recordsToBatch4cc7f9b,
	"29b9199": func(rs []*kgo.Record) service.MessageBatch { return recordsToBatch29b9199(rs, logEnd) },
	"head":    func(rs []*kgo.Record) service.MessageBatch { return plugin.RecordsToBatch(rs, logEnd) },
}

func BenchmarkRecordsToBatch(b *testing.B) {
	for _, ts := range []struct {
		name  string
		perMs int
	}{{"distinct", 1}, {"shared", sharedPerMs}} {
		rs := batch(ts.perMs)
		for _, name := range []string{"4cc7f9b", "29b9199", "head"} {
			f := conversions[name]
			b.Run("ts="+ts.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_ = f(rs)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/batchLen, "ns/record")
			})
		}
	}
}

var sink service.MessageBatch

// TestConvertLoop converts the batch BENCH_CONVERT_LOOPS times (300 when
// unset) with the conversion BENCH_CONVERT names ("none": only the setup),
// its timestamps as BENCH_CONVERT_TS says (distinct, the default, or
// shared), for an instruction count; it is skipped when BENCH_CONVERT is
// unset.
func TestConvertLoop(t *testing.T) {
	name := os.Getenv("BENCH_CONVERT")
	if name == "" {
		t.Skip("BENCH_CONVERT is unset")
	}
	loops := 300
	if n, err := strconv.Atoi(os.Getenv("BENCH_CONVERT_LOOPS")); err == nil {
		loops = n
	}
	perMs := 1
	if os.Getenv("BENCH_CONVERT_TS") == "shared" {
		perMs = sharedPerMs
	}
	rs := batch(perMs)
	if name == "none" {
		return
	}
	f, ok := conversions[name]
	if !ok {
		t.Fatalf("BENCH_CONVERT=%q: no such conversion", name)
	}
	for range loops {
		sink = f(rs)
	}
}

// recordsToBatch4cc7f9b is plugin.RecordsToBatch as it was at 4cc7f9b,
// kept as the fixed point the current one is measured against. It set
// seven keys: kafka_lag and the raw headers came later, and kafka_key was
// a string.
func recordsToBatch4cc7f9b(records []*kgo.Record) service.MessageBatch {
	batch := make(service.MessageBatch, len(records))
	if len(records) == 0 {
		return batch
	}
	var topic, partition any = records[0].Topic, int(records[0].Partition)
	for i, r := range records {
		m := service.NewMessage(r.Value)
		m.MetaSetMut("kafka_key", string(r.Key))
		m.MetaSetMut("kafka_topic", topic)
		m.MetaSetMut("kafka_partition", partition)
		m.MetaSetMut("kafka_offset", int(r.Offset))
		m.MetaSetMut("kafka_timestamp_unix", r.Timestamp.Unix())
		m.MetaSetMut("kafka_timestamp_ms", r.Timestamp.UnixMilli())
		m.MetaSetMut("kafka_tombstone_message", r.Value == nil)
		for _, h := range r.Headers {
			m.MetaSetMut(h.Key, string(h.Value))
		}
		batch[i] = m
	}
	return batch
}

// recordsToBatch29b9199 is internal/kafkamsg.RecordsToBatch as it was at
// 29b9199 (issue 31's "before"), unchanged until the timestamps were shared:
// every record boxed its own.
func recordsToBatch29b9199(records []*kgo.Record, logEnd int64) service.MessageBatch {
	n := len(records)
	batch := make(service.MessageBatch, n)
	if n == 0 {
		return batch
	}
	var topic, partition any = records[0].Topic, int(records[0].Partition)
	msgs := make([]service.Message, n)
	for i, r := range records {
		msgs[i] = *service.NewMessage(r.Value)
		m := &msgs[i]
		m.MetaSetMut("kafka_key", r.Key)
		m.MetaSetMut("kafka_topic", topic)
		m.MetaSetMut("kafka_partition", partition)
		m.MetaSetMut("kafka_offset", int(r.Offset))
		m.MetaSetMut("kafka_timestamp_unix", r.Timestamp.Unix())
		m.MetaSetMut("kafka_timestamp_ms", r.Timestamp.UnixMilli())
		m.MetaSetMut("kafka_tombstone_message", r.Value == nil)
		if len(r.Headers) > 0 {
			for _, h := range r.Headers {
				if h.Value == nil {
					m.MetaSetMut(h.Key, nil)
				} else {
					m.MetaSetMut(h.Key, string(h.Value))
				}
			}
			m.MetaSetMut("__rpcn_kafka_headers", r.Headers)
		}
		m.MetaSetMut("kafka_lag", max(logEnd-r.Offset-1, 0))
		batch[i] = m
	}
	return batch
}
