// Package kafkamsg converts fetched Kafka records into Benthos messages with
// Redpanda Connect's metadata.
package kafkamsg

import (
	"context"
	"math"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
)

// noSpan is every message's context: one holding an invalid, remote span
// context and nothing else.
//
// Benthos starts a span on every message an input returns and again at
// every processor and output (benthos v4.60.0 internal/tracing/otel.go:126-132
// and 56-68), with no way to turn that off; with no tracer configured its
// tracer is OpenTelemetry's noop one. Given a parent without a span context,
// the noop Start wraps the context in a context.WithValue, an allocation
// per message per stage; given a parent holding a span context that is not
// the zero one and does not record, it returns the parent as it is
// (go.opentelemetry.io/otel/trace v1.37.0 noop/noop.go:49-73, as its doc
// comment promises). An invalid span context is what a message without one
// reads anyway (trace.SpanContextFromContext), so nothing that reads it sees
// a difference: tracing_id() is still zeros, propagators inject nothing
// (they need a valid one), and an SDK tracer reads an invalid parent as none
// and starts a root span, as before (TestRecordsToBatchSpanContext).
//
// Measured end to end (docs/BENCHMARKS.md, issue 31, "Benthos's spans"):
// 0.90 to 0.93 of the CPU per record without it. It costs one copy of each
// message at conversion (Message.WithContext), which that figure includes.
var noSpan = trace.ContextWithSpanContext(context.Background(), trace.SpanContext{}.WithRemote(true))

// Metadata keys, named and typed as Redpanda Connect's redpanda input sets
// them (its FranzRecordToMessageV1), so pipelines port unchanged.
const (
	metaKey       = "kafka_key"               // []byte (nil for a null key)
	metaTopic     = "kafka_topic"             // string
	metaPartition = "kafka_partition"         // int
	metaOffset    = "kafka_offset"            // int
	metaLag       = "kafka_lag"               // int64
	metaTSUnix    = "kafka_timestamp_unix"    // int64, seconds
	metaTSMs      = "kafka_timestamp_ms"      // int64
	metaTombstone = "kafka_tombstone_message" // bool
	// metaHeaders holds every header of the record, in order and with
	// repeated keys, as []kgo.RecordHeader: Redpanda Connect's kafka
	// outputs read it to write the headers back unchanged. Set only for
	// records with headers.
	metaHeaders = "__rpcn_kafka_headers"
)

// MetaDeliveryAttempt is the key of a message's delivery attempt (int),
// counting in-process retries, replays in place and deliveries before a
// restart or a rebalance. The input sets it from the second attempt on
// (absent means 1: plugin/input.go says why); RecordsToBatch does not (a
// conversion is no delivery).
const MetaDeliveryAttempt = "kafka_delivery_attempt"

// NoLag is RecordsToBatch's logEnd for records whose position in the log
// says nothing about what is left to read (a share group's: the broker
// hands records to several members), so no message gets kafka_lag: a lag
// of 0 would be a lie, and one key fewer keeps the kafka_share
// input's metadata maps small (plugin/share_verdict.go).
const NoLag int64 = math.MinInt64

// RecordsToBatch converts records of one partition into a Benthos batch with
// Redpanda Connect's metadata. logEnd is the partition's log end when the
// records were fetched (its high watermark, or under read_committed its last
// stable offset), from which each message's kafka_lag is computed: the
// records after it in the log; -1 when unknown (kafka_lag is then 0), and
// NoLag when the input has no lag to report (kafka_lag is then not set).
//
// Each header is set under its own key, as a string (nil for a null value;
// for a repeated key the last one wins), after the kafka_* keys.
//
// The values that are the same for every record of a batch (topic,
// partition) are boxed once per batch, and the timestamps once per run of
// records with the same millisecond (and second): a producer stamps
// thousands of records a millisecond at the rates where the conversion's
// cost shows, and a log-append-time topic stamps a whole producer batch
// alike, so each saves one or two of the nine allocations of a record. A
// boxed value is immutable, so messages sharing one share nothing a
// pipeline can change: setting a key replaces the value in that message's
// own map. Boxing the per-record values into
// shared arrays through unsafe was measured and removed: binary against
// binary, bench/e2e showed it worth 1% CPU per record at 8 partitions and
// 6% [-38%..+17% by round] at 64 (below the 5% a layout outside the Go 1
// promise must earn; docs/BENCHMARKS.md). Safe for concurrent use on
// distinct slices.
func RecordsToBatch(records []*kgo.Record, logEnd int64) service.MessageBatch {
	n := len(records)
	batch := make(service.MessageBatch, n)
	if n == 0 {
		return batch
	}
	var topic, partition any = records[0].Topic, int(records[0].Partition)
	// Benthos unwraps each message into its internal part as soon as
	// ReadBatch returns, so the wrappers are garbage from then on: one
	// array holds them all. NewMessage is inlined, so copying its result
	// allocates nothing of its own.
	msgs := make([]service.Message, n)
	var ts stamps
	for i, r := range records {
		msgs[i] = *service.NewMessage(r.Value).WithContext(noSpan)
		m := &msgs[i]
		m.MetaSetMut(metaKey, r.Key)
		m.MetaSetMut(metaTopic, topic)
		m.MetaSetMut(metaPartition, partition)
		m.MetaSetMut(metaOffset, int(r.Offset))
		unix, ms := ts.box(r.Timestamp)
		m.MetaSetMut(metaTSUnix, unix)
		m.MetaSetMut(metaTSMs, ms)
		m.MetaSetMut(metaTombstone, r.Value == nil) // a bool boxes without allocating
		if len(r.Headers) > 0 {
			for _, h := range r.Headers {
				if h.Value == nil {
					m.MetaSetMut(h.Key, nil)
				} else {
					m.MetaSetMut(h.Key, string(h.Value))
				}
			}
			m.MetaSetMut(metaHeaders, r.Headers)
		}
		if logEnd != NoLag {
			m.MetaSetMut(metaLag, max(logEnd-r.Offset-1, 0))
		}
		batch[i] = m
	}
	return batch
}

// stamps boxes a record's timestamp, in seconds and milliseconds, reusing
// the previous record's boxes when it has the same. Its zero value is
// ready; it is not safe for concurrent use.
type stamps struct {
	ms, unix       int64
	boxMs, boxUnix any // nil until the first box
}

func (s *stamps) box(t time.Time) (unix, ms any) {
	if m := t.UnixMilli(); s.boxMs == nil || m != s.ms {
		// The same millisecond is the same second; another may be too.
		s.ms, s.boxMs = m, m
		if u := t.Unix(); s.boxUnix == nil || u != s.unix {
			s.unix, s.boxUnix = u, u
		}
	}
	return s.boxUnix, s.boxMs
}
