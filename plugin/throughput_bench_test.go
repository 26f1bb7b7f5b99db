package plugin

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// BenchmarkThroughput runs kafka_watermark and a baseline input side by side
// through a Benthos stream into a drop output, on one in-process cluster
// holding BENCH_RECORDS (default 1,000,000) records of 100 bytes over 8
// partitions. The baseline is built the same way on franz-go (same batch
// size, same metadata via RecordsToBatch) with no tracking and plain kgo
// autocommit. Each iteration is a round in which both consume everything
// with fresh groups; the medians and their ratio are reported. CPU time is
// the whole process's, in-process broker included, for both alike.
//
//	go test ./plugin -run '^$' -bench Throughput -benchtime 5x -v
func BenchmarkThroughput(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	const partitions = 8
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	addr := kc.ListenAddrs()[0]
	produceBench(b, addr, n)

	env := service.NewEnvironment()
	if err := Register(env); err != nil {
		b.Fatal(err)
	}
	if err := env.RegisterBatchInput("baseline_kafka", service.NewConfigSpec().Field(service.NewStringField("seed")).Field(service.NewStringField("group")),
		func(pc *service.ParsedConfig, _ *service.Resources) (service.BatchInput, error) {
			seed, _ := pc.FieldString("seed")
			group, _ := pc.FieldString("group")
			return &baselineInput{seed: seed, group: group}, nil
		}); err != nil {
		b.Fatal(err)
	}
	// Each iteration is one round: both inputs consume everything, in an
	// order that alternates between rounds, so machine noise falls on both.
	var wm, base, wmCPU, baseCPU []float64
	round := 0
	for b.Loop() {
		round++
		for i := range 2 {
			which := (round + i) % 2
			group := fmt.Sprintf("bench-%d-%d", round, which)
			yaml := fmt.Sprintf("kafka_watermark: { seed_brokers: [ %q ], topics: [ bench ], consumer_group: %q }", addr, group)
			if which == 1 {
				yaml = fmt.Sprintf("baseline_kafka: { seed: %q, group: %q }", addr, group)
			}
			elapsed, cpu := consumeAll(b, env, yaml, n)
			rate, cpuPerM := float64(n)/elapsed.Seconds(), cpu.Seconds()/(float64(n)/1e6)
			if which == 0 {
				wm, wmCPU = append(wm, rate), append(wmCPU, cpuPerM)
			} else {
				base, baseCPU = append(base, rate), append(baseCPU, cpuPerM)
			}
			b.Logf("round %d %s: %.0f rec/s, %.3f cpu-s/Mrec", round, map[int]string{0: "kafka_watermark", 1: "baseline"}[which], rate, cpuPerM)
		}
	}
	b.ReportMetric(testkit.Median(wm), "wm-rec/s")
	b.ReportMetric(testkit.Median(base), "base-rec/s")
	b.ReportMetric(testkit.Median(wm)/testkit.Median(base), "ratio")
	b.ReportMetric(testkit.Median(wmCPU), "wm-cpu-s/Mrec")
	b.ReportMetric(testkit.Median(baseCPU), "base-cpu-s/Mrec")
}

func produceBench(b *testing.B, addr string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	val := make([]byte, 100)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	var wg sync.WaitGroup
	var perr error
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				perr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if perr != nil {
		b.Fatal(perr)
	}
}

// consumeAll runs one stream until the drop output has sent n messages and
// returns the wall time and the process CPU time it took.
func consumeAll(b *testing.B, env *service.Environment, inputYAML string, n int) (time.Duration, time.Duration) {
	g := memmetrics.New()
	must(b, g.Register(env, "bench_metrics"))
	sb := env.NewStreamBuilder()
	must(b, sb.SetLoggerYAML("level: warn"))
	must(b, sb.AddInputYAML(inputYAML))
	must(b, sb.AddOutputYAML("drop: {}"))
	must(b, sb.SetMetricsYAML("bench_metrics: {}"))
	st, err := sb.Build()
	must(b, err)
	cpu0 := cpuTime()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- st.Run(context.Background()) }()
	for g.Get("output_sent", "", memmetrics.NoPartition) < int64(n) {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(b, st.Stop(ctx))
	<-done
	return elapsed, cpu
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// baselineInput is the comparison point: franz-go in a group with plain
// autocommit, the same batch size and metadata, and no tracking at all.
type baselineInput struct {
	seed, group string
	cl          *kgo.Client
	pending     [][]*kgo.Record
}

func (in *baselineInput) Connect(context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(in.seed), kgo.ConsumerGroup(in.group), kgo.ConsumeTopics("bench"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	in.cl = cl
	return err
}

func (in *baselineInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	for len(in.pending) == 0 {
		fetches := in.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			rs := p.Records
			for len(rs) > 0 {
				k := min(len(rs), 1024)
				in.pending = append(in.pending, rs[:k:k])
				rs = rs[k:]
			}
		})
	}
	rs := in.pending[0]
	in.pending = in.pending[1:]
	return RecordsToBatch(rs, -1), func(context.Context, error) error { return nil }, nil
}

func (in *baselineInput) Close(context.Context) error {
	if in.cl != nil {
		in.cl.Close()
	}
	return nil
}
