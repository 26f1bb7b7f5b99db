// Command freshness measures commit freshness: the delay from a batch's ack
// to the broker's receipt of the first commit that covers it (an offset past
// the batch's last record), at each commit_period given, run in interleaved
// rounds. It prints a markdown table on stdout (docs/BENCHMARKS.md, part 4)
// and its progress on stderr; it asserts nothing.
//
// It runs against kfake rather than the owner on a fake client: the delay
// that matters includes kgo's CommitOffsets (which serialises with other
// commits and rebalances) and the committer's hand-offs, which a fake
// client would leave out. kfake's round trip is a loopback one; a real
// broker's adds the same amount to the delay and to its target. The round
// trip reported is the input's own commit latency timer (its mean), read
// from an in-memory metrics exporter (internal/memmetrics).
//
// Each run is one Benthos stream, kafka_watermark into a consumer function,
// on a kfake cluster of its own. A producer writes to 4 partitions at about
// 2,000 records/s; the consumer function acks each batch as soon as it
// gets it, in order, so a batch's ack (the function's return) is the moment
// it becomes committable. The first -warmup of a run (the group join) is
// left out. A run lasts -min-run or 20 periods, whichever is longer.
//
//	go run ./bench/freshness                 # 3 rounds of 1s and 100ms, about 100 s
//	go run ./bench/freshness -rounds 1 -periods 200ms,100ms -min-run 4s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure" // the bloblang methods of the input's config lints
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
	"github.com/watermark-connect/watermark-connect/plugin"
)

const (
	topic       = "t"
	parts       = 4
	metricsName = "freshness_metrics"
)

type options struct {
	minRun, warmup time.Duration
}

type result struct{ p50, p99, max, rtt time.Duration }

func main() {
	rounds := flag.Int("rounds", 3, "rounds; each runs every period once, in an order that rotates")
	periodList := flag.String("periods", "1s,100ms", "the commit_period values to measure, comma separated, in the table's order")
	var o options
	flag.DurationVar(&o.minRun, "min-run", 10*time.Second, "the shortest run; a run lasts this or 20 periods, whichever is longer")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "the start of each run left out (the group join)")
	flag.Parse()
	log.SetFlags(0)
	periods, err := parsePeriods(*periodList)
	if err != nil {
		log.Fatal(err)
	}
	if *rounds < 1 {
		log.Fatalf("-rounds (%d) must be at least 1", *rounds)
	}

	res := map[time.Duration][]result{}
	for r := range *rounds {
		for k := range periods {
			period := periods[(r+k)%len(periods)]
			delays, rtt, err := freshnessRun(period, o, fmt.Sprintf("g-%d-%d", r, k))
			if err != nil {
				log.Fatalf("round %d, commit_period %v: %v", r+1, period, err)
			}
			slices.Sort(delays)
			q := func(f float64) time.Duration { return delays[int(f*float64(len(delays)-1))] }
			out := result{q(0.5), q(0.99), delays[len(delays)-1], rtt}
			log.Printf("round %d, commit_period %v: %d batches, p50 %v, p99 %v, max %v, round trip %v", r+1, period, len(delays), out.p50, out.p99, out.max, out.rtt)
			res[period] = append(res[period], out)
		}
	}
	fmt.Print(table(periods, res, *rounds))
}

func parsePeriods(s string) ([]time.Duration, error) {
	var ps []time.Duration
	for f := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-periods: %w", err)
		}
		if d <= 0 || slices.Contains(ps, d) {
			return nil, fmt.Errorf("-periods: %v must be positive and given once", d)
		}
		ps = append(ps, d)
	}
	return ps, nil
}

// table is the markdown table of the results: per period, the median and
// range over rounds of each run's quantiles, round trip and ratio.
func table(periods []time.Duration, res map[time.Duration][]result, rounds int) string {
	var b strings.Builder
	b.WriteString("\n| commit_period | p50 | p99 | max | commit round trip (mean) | target: period + round trip | p99 / target |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, period := range periods {
		var p50, p99, mx, rtt, ratio []float64
		for _, r := range res[period] {
			p50, p99, mx = append(p50, ms(r.p50)), append(p99, ms(r.p99)), append(mx, ms(r.max))
			rtt = append(rtt, ms(r.rtt))
			ratio = append(ratio, ms(r.p99)/(ms(period)+ms(r.rtt)))
		}
		target := ms(period) + testkit.Median(rtt)
		fmt.Fprintf(&b, "| %v | %s | %s | %s | %s | %.1f ms | %s |\n", period, testkit.MedRange(p50, "%.1f ms"), testkit.MedRange(p99, "%.1f ms"),
			testkit.MedRange(mx, "%.1f ms"), testkit.MedRange(rtt, "%.2f ms"), target, testkit.MedRange(ratio, "%.3f"))
	}
	n := strconv.Itoa(len(periods))
	if len(periods) == 2 {
		n = "two"
	}
	fmt.Fprintf(&b, "\n%d round(s), the %s periods interleaved; median [min–max] over rounds of each run's quantile.\n\n", rounds, n)
	return b.String()
}

// commitLog is every OffsetCommit the broker received, per partition, in
// the order received. It is safe for concurrent use: kfake's control
// function writes it, the run reads it once the stream stopped.
type commitLog struct {
	mu      sync.Mutex
	commits map[int32][]commit
}

type commit struct {
	at     time.Time
	offset int64
}

// watch records every OffsetCommit kc receives. The function handles
// nothing (it returns false), so kfake answers the request and keeps it.
func (l *commitLog) watch(kc *kfake.Cluster) {
	kc.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		now := time.Now()
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, tp := range r.(*kmsg.OffsetCommitRequest).Topics {
			for _, p := range tp.Partitions {
				l.commits[p.Partition] = append(l.commits[p.Partition], commit{now, p.Offset})
			}
		}
		return nil, nil, false
	})
}

// acked is a batch as the consumer function acked it.
type acked struct {
	at   time.Time
	part int32
	need int64 // the first commit offset that covers the batch
}

// delays returns, for each ack, the time to the first commit of its
// partition received after it that covers it; acks never covered are left
// out.
func (l *commitLog) delays(acks []acked) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ds []time.Duration
	for _, a := range acks {
		cs := l.commits[a.part]
		i, _ := slices.BinarySearchFunc(cs, a.at, func(c commit, at time.Time) int { return c.at.Compare(at) })
		for ; i < len(cs); i++ {
			if cs[i].offset >= a.need {
				ds = append(ds, cs[i].at.Sub(a.at))
				break
			}
		}
	}
	return ds
}

// freshnessRun runs one stream at commit_period period, and returns every
// batch's ack-to-commit delay and the mean commit round trip.
func freshnessRun(period time.Duration, o options, group string) ([]time.Duration, time.Duration, error) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topic))
	if err != nil {
		return nil, 0, err
	}
	defer kc.Close()
	cl := &commitLog{commits: map[int32][]commit{}}
	cl.watch(kc)
	addr := kc.ListenAddrs()[0]

	var mu sync.Mutex
	var acks []acked
	var start time.Time
	run := max(o.minRun, 20*period)
	store := memmetrics.New()
	st, err := buildStream(store, fmt.Sprintf("seed_brokers: [ %q ]\ntopics: [ %s ]\nconsumer_group: %q\ncommit_period: %v\n", addr, topic, group, period),
		func(_ context.Context, batch service.MessageBatch) error {
			at := time.Now()
			last, ok1 := batch[len(batch)-1].MetaGetMut("kafka_offset")
			part, ok2 := batch[0].MetaGetMut("kafka_partition")
			if !ok1 || !ok2 {
				return errors.New("a message without kafka_offset or kafka_partition")
			}
			mu.Lock()
			defer mu.Unlock()
			if at.Sub(start) > o.warmup && at.Sub(start) < run {
				acks = append(acks, acked{at, int32(part.(int)), int64(last.(int)) + 1})
			}
			return nil
		})
	if err != nil {
		return nil, 0, err
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		return nil, 0, err
	}
	defer prod.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	go produce(ctx, prod)

	// The run, then the commits of its last acks.
	select {
	case err := <-done:
		return nil, 0, fmt.Errorf("the stream stopped early: %w", err)
	case <-time.After(run + 2*period + 200*time.Millisecond):
	}
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if err := st.Stop(sctx); err != nil {
		log.Printf("stopping the stream: %v", err)
	}
	cancel()
	<-done

	mu.Lock()
	ds := cl.delays(acks)
	mu.Unlock()
	if len(ds) == 0 {
		return nil, 0, errors.New("no batch was committed")
	}
	tm := store.Timer(engine.MetricCommitLatency, "", memmetrics.NoPartition)
	var rtt time.Duration
	if tm.Count > 0 {
		rtt = time.Duration(tm.Sum / tm.Count)
	}
	return ds, rtt, nil
}

// buildStream builds kafka_watermark (with the fields of inputYAML) into
// consume, reporting its metrics to store, in a fresh environment.
func buildStream(store *memmetrics.Store, inputYAML string, consume service.MessageBatchHandlerFunc) (*service.Stream, error) {
	env := service.NewEnvironment()
	if err := plugin.Register(env); err != nil {
		return nil, err
	}
	if err := store.Register(env, metricsName); err != nil {
		return nil, err
	}
	sb := env.NewStreamBuilder()
	sb.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	in := plugin.InputName + ":\n  " + strings.ReplaceAll(strings.TrimSpace(inputYAML), "\n", "\n  ")
	if err := sb.AddInputYAML(in); err != nil {
		return nil, err
	}
	if err := sb.SetMetricsYAML(metricsName + ": {}"); err != nil {
		return nil, err
	}
	if err := sb.AddBatchConsumerFunc(consume); err != nil {
		return nil, err
	}
	return sb.Build()
}

// produce writes 4 records every 2ms, spread over the partitions, until ctx
// is done.
func produce(ctx context.Context, prod *kgo.Client) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		for k := range 4 {
			prod.Produce(ctx, &kgo.Record{Partition: int32((4*i + k) % parts), Value: []byte("v")}, nil)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
