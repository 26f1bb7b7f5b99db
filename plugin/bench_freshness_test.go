package plugin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// TestCommitFreshness measures the delay from a batch's ack to the broker's
// receipt of the first commit that covers it (an offset past the batch's
// last record), at commit_period 1s and 100ms, run in interleaved rounds.
//
// It runs against kfake rather than the owner on a fake client: the delay
// that matters includes kgo's CommitOffsets (which serialises with other
// commits and rebalances) and the committer's hand-offs, which a fake
// client would leave out. kfake's round trip is a loopback one; a real
// broker's adds the same amount to the delay and to its target. The round
// trip reported is the input's own commit latency timer (its mean).
//
// A producer writes to 4 partitions at about 2,000 records/s; the sink acks
// each batch as soon as it is read, in order, so a batch's ack is the moment
// it becomes committable. The first 2s of a run (the group join) are left
// out. It runs only when BENCH_FRESHNESS is set, and asserts nothing:
//
//	BENCH_FRESHNESS=1 go test ./plugin -run '^TestCommitFreshness$' -v
func TestCommitFreshness(t *testing.T) {
	if os.Getenv("BENCH_FRESHNESS") == "" {
		t.Skip("set BENCH_FRESHNESS=1 to measure")
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	periods := []time.Duration{time.Second, 100 * time.Millisecond}
	type result struct{ p50, p99, max, rtt time.Duration }
	res := map[time.Duration][]result{}
	for r := range rounds {
		for k := range periods {
			period := periods[(r+k)%len(periods)]
			delays, rtt := freshnessRun(t, period, fmt.Sprintf("g-%d-%d", r, k))
			slices.Sort(delays)
			q := func(f float64) time.Duration { return delays[int(f*float64(len(delays)-1))] }
			out := result{q(0.5), q(0.99), delays[len(delays)-1], rtt}
			t.Logf("round %d, commit_period %v: %d batches, p50 %v, p99 %v, max %v, round trip %v", r+1, period, len(delays), out.p50, out.p99, out.max, out.rtt)
			res[period] = append(res[period], out)
		}
	}
	var b strings.Builder
	b.WriteString("\n| commit_period | p50 | p99 | max | commit round trip (mean) | target: period + round trip | p99 / target |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, period := range periods {
		var p50, p99, mx, rtt, ratio []float64
		for _, r := range res[period] {
			p50, p99, mx = append(p50, ms(r.p50)), append(p99, ms(r.p99)), append(mx, ms(r.max))
			rtt = append(rtt, ms(r.rtt))
			ratio = append(ratio, ms(r.p99)/(ms(period)+ms(r.rtt)))
		}
		target := ms(period) + median(rtt)
		fmt.Fprintf(&b, "| %v | %s | %s | %s | %s | %.1f ms | %s |\n", period, medRange(p50, "%.1f ms"), medRange(p99, "%.1f ms"),
			medRange(mx, "%.1f ms"), medRange(rtt, "%.2f ms"), target, medRange(ratio, "%.3f"))
	}
	fmt.Fprintf(&b, "\n%d round(s), the two periods interleaved; median [min–max] over rounds of each run's quantile.\n", rounds)
	fmt.Println(b.String())
}

func medRange(xs []float64, format string) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	f := func(v float64) string { return fmt.Sprintf(format, v) }
	return fmt.Sprintf("%s [%s–%s]", f(median(s)), f(s[0]), f(s[len(s)-1]))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// freshnessRun runs one input at commit_period period for 10s or 20 periods,
// whichever is longer, and returns every batch's ack-to-commit delay and the
// mean commit round trip.
func freshnessRun(t *testing.T, period time.Duration, group string) ([]time.Duration, time.Duration) {
	const parts = 4
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	type commit struct {
		at     time.Time
		offset int64
	}
	var mu sync.Mutex
	commits := map[int32][]commit{}
	kc.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range r.(*kmsg.OffsetCommitRequest).Topics {
			for _, p := range tp.Partitions {
				commits[p.Partition] = append(commits[p.Partition], commit{now, p.Offset})
			}
		}
		return nil, nil, false
	})
	addr := kc.ListenAddrs()[0]

	m, g := testMetrics(t)
	conf := benchConfig(t, fmt.Sprintf("commit_period: %v\n", period))
	conf.seedBrokers, conf.group = []string{addr}, group
	in := &Input{conf: conf, log: service.MockResources().Logger(), m: m}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := in.Connect(ctx); err != nil {
		t.Fatal(err)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	run := max(10*time.Second, 20*period)
	start := time.Now()
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			<-tick.C
			for k := range 4 {
				prod.Produce(ctx, &kgo.Record{Partition: int32((4*i + k) % parts), Value: []byte("v")}, nil)
			}
		}
	}()
	type acked struct {
		at   time.Time
		part int32
		need int64 // the first commit offset that covers the batch
	}
	var acks []acked
	for time.Since(start) < run {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		msgs, ack, err := in.ReadBatch(rctx)
		rcancel()
		if err != nil {
			continue
		}
		last, _ := msgs[len(msgs)-1].MetaGetMut(metaOffset)
		part, _ := msgs[0].MetaGetMut(metaPartition)
		at := time.Now()
		_ = ack(ctx, nil)
		if at.Sub(start) > 2*time.Second {
			acks = append(acks, acked{at, int32(part.(int)), int64(last.(int)) + 1})
		}
	}
	time.Sleep(2*period + 200*time.Millisecond) // the commits of the last acks
	cancel()
	_ = in.Close(context.Background())

	mu.Lock()
	defer mu.Unlock()
	var delays []time.Duration
	for _, a := range acks {
		cs := commits[a.part]
		i, _ := slices.BinarySearchFunc(cs, a.at, func(c commit, at time.Time) int { return c.at.Compare(at) })
		for ; i < len(cs); i++ {
			if cs[i].offset >= a.need {
				delays = append(delays, cs[i].at.Sub(a.at))
				break
			}
		}
	}
	if len(delays) == 0 {
		t.Fatal("no batch was committed")
	}
	tm := g.Timer(engine.MetricCommitLatency, "", memmetrics.NoPartition)
	var rtt time.Duration
	if tm.Count > 0 {
		rtt = time.Duration(tm.Sum / tm.Count)
	}
	return delays, rtt
}
