// Command baseline is the benchmark's comparison point for kafka_watermark: a
// Benthos binary whose baseline_kafka input is franz-go in a consumer group
// with plain autocommit and no tracking at all. It cuts fetches into batches
// by the same rule (batch_max_records, batch_max_bytes) and sets the same
// metadata through plugin.RecordsToBatch, so what it does not pay for is the
// tracking: registration, acks, watermarks, commits. Because it shares
// RecordsToBatch, a change there moves both sides of the ratio alike: the
// conversion's own cost shows only when binaries of two commits are compared
// (bench/e2e does). It runs with the binary's GC settings (gctune.Start),
// and bench/e2e builds it with the binary's default.pgo, for the same
// reason.
//
//	baseline -c config.yaml   # input: baseline_kafka: { seed_brokers: [...], topics: [...], consumer_group: ... }
package main

import (
	"context"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/watermark-connect/watermark-connect/internal/gctune"
	_ "github.com/watermark-connect/watermark-connect/metrics/prometheus"
	"github.com/watermark-connect/watermark-connect/plugin"
)

func main() {
	// The binary's GC settings, so that wm / base keeps meaning what
	// tracking costs (docs/BENCHMARKS.md).
	gctune.Start()
	spec := service.NewConfigSpec().
		Summary("franz-go with autocommit and no tracking; the benchmark's baseline.").
		Field(service.NewStringListField("seed_brokers")).
		Field(service.NewStringListField("topics")).
		Field(service.NewStringField("consumer_group")).
		Field(service.NewIntField("batch_max_records").Default(1024)).
		Field(service.NewIntField("batch_max_bytes").Default(1 << 20))
	err := service.RegisterBatchInput("baseline_kafka", spec, func(pc *service.ParsedConfig, _ *service.Resources) (service.BatchInput, error) {
		in := &input{}
		var err error
		if in.seeds, err = pc.FieldStringList("seed_brokers"); err != nil {
			return nil, err
		}
		if in.topics, err = pc.FieldStringList("topics"); err != nil {
			return nil, err
		}
		if in.group, err = pc.FieldString("consumer_group"); err != nil {
			return nil, err
		}
		if in.maxRecords, err = pc.FieldInt("batch_max_records"); err != nil {
			return nil, err
		}
		if in.maxBytes, err = pc.FieldInt("batch_max_bytes"); err != nil {
			return nil, err
		}
		return in, nil
	})
	if err != nil {
		panic(err)
	}
	service.RunCLI(context.Background(), service.CLIOptSetBinaryName("baseline"))
}

// input is not safe for concurrent use; Benthos calls ReadBatch from one
// goroutine.
type input struct {
	seeds, topics        []string
	group                string
	maxRecords, maxBytes int

	cl      *kgo.Client
	pending []batch // cut from the last poll, not handed out yet
}

type batch struct {
	records []*kgo.Record
	logEnd  int64
}

func (in *input) Connect(context.Context) error {
	// The fetch settings are kafka_watermark's defaults: kgo's (1MiB per
	// partition, 5s wait) but for fetch_max_bytes, 16MiB where kgo's is
	// 50MiB, and so is the balancer.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(in.seeds...),
		kgo.ConsumerGroup(in.group),
		kgo.ConsumeTopics(in.topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(16<<20),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
	)
	if err != nil {
		return err
	}
	in.cl = cl
	return nil
}

func (in *input) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	for len(in.pending) == 0 {
		fetches := in.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if fetches.IsClientClosed() {
			return nil, nil, service.ErrEndOfInput
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) { in.cut(p.Records, p.HighWatermark) })
	}
	b := in.pending[0]
	in.pending[0] = batch{}
	in.pending = in.pending[1:]
	return plugin.RecordsToBatch(b.records, b.logEnd), func(context.Context, error) error { return nil }, nil
}

// cut splits one partition's records as kafka_watermark does: at most
// maxRecords records and maxBytes of keys, values and headers per batch.
func (in *input) cut(rs []*kgo.Record, logEnd int64) {
	start, size := 0, 0
	for i, r := range rs {
		n := len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += len(h.Key) + len(h.Value)
		}
		if i > start && (i-start >= in.maxRecords || size+n > in.maxBytes) {
			in.pending = append(in.pending, batch{rs[start:i:i], logEnd})
			start, size = i, 0
		}
		size += n
	}
	if start < len(rs) {
		in.pending = append(in.pending, batch{rs[start:], logEnd})
	}
}

func (in *input) Close(context.Context) error {
	if in.cl != nil {
		in.cl.Close()
	}
	return nil
}
