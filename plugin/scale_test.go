package plugin

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	_ "github.com/watermark-connect/watermark-connect/metrics/prometheus"
)

// TestScaleRSS measures the resident memory of one process holding an
// in-process kfake broker and one consumer, for two scenarios:
//
//   - idle: 10,000 partitions holding one record each, consumed, acked
//     and committed, then idle;
//   - pending: 1,000 partitions holding 1,024 records each, read one
//     record a batch and never acked, so every partition is at its pending
//     limit (max_pending_batches 1,024): 1,024,000 pending batches.
//
// The contenders, each in a process of its own (this test binary run again
// as a child), in an order that rotates from round to round: raw, a franz-go
// group consumer of the same topic (it keeps the records it read in the
// pending scenario, as a sink that has not answered would); kafka_watermark
// with no metrics exporter; and, idle only, kafka_watermark with the
// Prometheus exporter, whose series per partition are part of its cost. The
// messages a batch is converted to are dropped as soon as they are read:
// they are the pipeline's, not the input's, and the raw client has none.
//
// RSS is read from /proc/self/status after a GC and debug.FreeOSMemory, so
// it shows what is live, not what the heap has yet to collect; heap is the
// Go heap in use at that moment. It runs only when BENCH_RSS is set:
//
//	BENCH_RSS=1 go test ./plugin -run '^TestScaleRSS$' -v -timeout 30m
func TestScaleRSS(t *testing.T) {
	if os.Getenv("BENCH_RSS") == "" {
		t.Skip("set BENCH_RSS=1 to measure")
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	type scenario struct {
		name      string
		parts     int
		records   int // per partition
		modes     []string
		perUnit   string
		unitCount int
	}
	scenarios := []scenario{
		{"idle", 10_000, 1, []string{"raw", "wm", "wm-prometheus"}, "assigned partition", 10_000},
		{"pending", 1_000, 1024, []string{"raw", "wm"}, "pending batch", 1_000 * 1024},
	}
	type sample struct{ rss, heap float64 }
	results := map[string][]sample{}
	for r := range rounds {
		for _, sc := range scenarios {
			for k := range sc.modes {
				mode := sc.modes[(r+k)%len(sc.modes)]
				out, err := runRSSChild(sc.name, mode, sc.parts, sc.records)
				if err != nil {
					t.Fatalf("%s/%s: %v", sc.name, mode, err)
				}
				t.Logf("round %d %s/%s: RSS %.1f MB, heap %.1f MB", r+1, sc.name, mode, out.rss/1e6, out.heap/1e6)
				key := sc.name + "/" + mode
				results[key] = append(results[key], sample(out))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| scenario | consumer | RSS (MB) | Go heap in use (MB) | RSS above raw, per %s / %s |\n| --- | --- | ---: | ---: | ---: |\n", scenarios[0].perUnit, scenarios[1].perUnit)
	for _, sc := range scenarios {
		for _, mode := range sc.modes {
			rs := results[sc.name+"/"+mode]
			var rss, heap, over []float64
			for i, s := range rs {
				rss, heap = append(rss, s.rss/1e6), append(heap, s.heap/1e6)
				over = append(over, (s.rss-results[sc.name+"/raw"][i].rss)/float64(sc.unitCount))
			}
			extra := "–"
			if mode != "raw" {
				extra = medRange(over, "%.0f B")
			}
			fmt.Fprintf(&b, "| %s (%d partitions) | %s | %s | %s | %s |\n", sc.name, sc.parts, mode, medRange(rss, "%.1f"), medRange(heap, "%.1f"), extra)
		}
	}
	fmt.Fprintf(&b, "\n%d round(s), each contender in its own process; median [min–max]; the per-unit figure pairs each run with the raw run of its round.\n", rounds)
	fmt.Println(b.String())
}

type rssSample struct{ rss, heap float64 }

func runRSSChild(scenario, mode string, parts, records int) (rssSample, error) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestScaleRSSChild$", "-test.v", "-test.timeout", "20m")
	cmd.Env = append(os.Environ(), "RSS_CHILD="+mode, "RSS_SCENARIO="+scenario,
		"RSS_PARTS="+strconv.Itoa(parts), "RSS_RECORDS="+strconv.Itoa(records))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return rssSample{}, fmt.Errorf("%w: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		var s rssSample
		if n, _ := fmt.Sscanf(line, "RSS %g HEAP %g", &s.rss, &s.heap); n == 2 {
			return s, nil
		}
	}
	return rssSample{}, fmt.Errorf("no RSS line in %s", out)
}

// TestScaleRSSChild is one contender of TestScaleRSS, in a process of its own.
func TestScaleRSSChild(t *testing.T) {
	mode := os.Getenv("RSS_CHILD")
	if mode == "" {
		t.Skip("run by TestScaleRSS")
	}
	parts, _ := strconv.Atoi(os.Getenv("RSS_PARTS"))
	records, _ := strconv.Atoi(os.Getenv("RSS_RECORDS"))
	pending := os.Getenv("RSS_SCENARIO") == "pending"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(parts), "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	addr := kc.ListenAddrs()[0]
	produceEach(t, addr, parts, records)
	total := parts * records
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	var held [][]*kgo.Record
	var acks []service.AckFunc
	var stop func()
	switch mode {
	case "raw":
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		stop = cl.Close
		for n := 0; n < total; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				n += len(p.Records)
				if pending {
					held = append(held, p.Records)
				}
			})
		}
		if !pending {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
		}
	default:
		conf := benchConfig(t, "batch_max_records: 1\nconsumer_group: g\n")
		conf.seedBrokers = []string{addr}
		res := service.MockResources()
		if mode == "wm-prometheus" {
			rb := service.NewResourceBuilder()
			if err := rb.SetMetricsYAML("prometheus: {}"); err != nil {
				t.Fatal(err)
			}
			built, closeRes, err := rb.Build()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = closeRes(context.Background()) }()
			res = built
		}
		in := newInput(conf, res)
		if err := in.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		stop = func() { _ = in.Close(context.Background()) }
		for n := 0; n < total; {
			msgs, ack, err := in.ReadBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n += len(msgs)
			if pending {
				acks = append(acks, ack)
			} else {
				_ = ack(ctx, nil)
			}
		}
		if !pending {
			// Every partition committed: two commit periods.
			time.Sleep(2*conf.commitPeriod + 500*time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("RSS %d HEAP %d\n", vmRSS(t), ms.HeapInuse)
	runtime.KeepAlive(held)
	runtime.KeepAlive(acks)
	stop()
}

// vmRSS returns this process's resident set size in bytes.
func vmRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// produceEach writes n records of 16 bytes to each of parts partitions of t.
func produceEach(t *testing.T, addr string, parts, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	val := []byte("0123456789abcdef")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var perr error
	for i := range n {
		for p := range parts {
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Partition: int32(p), Key: []byte(strconv.Itoa(i)), Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					perr = err
					mu.Unlock()
				}
				wg.Done()
			})
		}
	}
	wg.Wait()
	if perr != nil {
		t.Fatal(perr)
	}
}
