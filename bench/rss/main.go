// Command rss measures the resident memory of one process holding an
// in-process kfake broker and one consumer, for two scenarios:
//
//   - idle: 10,000 partitions holding one record each, consumed, acked
//     and committed, then idle;
//   - pending: 1,000 partitions holding 1,024 records each, read one
//     record a batch and never acked, so every partition is at its pending
//     limit (max_pending_batches, set to the records per partition: 1,024
//     by default, the input's default): 1,024,000 pending batches.
//
// The broker is kfake in this process, filled once per scenario; the
// contenders, each in a process of its own (this program run again with
// -child) and reading the topic from the start with a group of its own, in
// an order that rotates from round to round: raw, a
// franz-go group consumer of the same topic (it keeps the records it read
// in the pending scenario, as a sink that has not answered would);
// kafka_watermark with no metrics exporter; and, idle only, kafka_watermark
// with this repository's Prometheus exporter, whose series per partition
// are part of its cost. kafka_watermark runs as Benthos runs it: an input
// resource (service.ResourceBuilder) read through its ReadBatch. The reader
// here drops the messages as soon as it has read them (they are the
// pipeline's, and the raw client has none), but Benthos's input reader
// keeps, per batch not yet acked, a goroutine and the transaction with the
// batch's messages, so the pending figures include those (see child.go).
//
// RSS is read from /proc/self/status after a GC and debug.FreeOSMemory, so
// it shows what is live, not what the heap has yet to collect; heap is the
// Go heap in use at that moment; peak is the most the process held while it
// consumed (VmHWM, reset once its setup is done), garbage included, which is
// what the GC percent moves. The contenders run with the binary's GC
// settings (internal/gctune: GOGC=400 unless GOGC is set; no container limit
// here), so `GOGC=100 go run ./bench/rss` gives Go's default. It prints a
// markdown table on stdout (docs/BENCHMARKS.md, part 3) and its progress on
// stderr; it asserts nothing.
//
//	go run ./bench/rss                       # 3 rounds at full size
//	go run ./bench/rss -rounds 1 -idle-partitions 10 -pending-partitions 2 -pending-records 4
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// scenario is one row group of the table.
type scenario struct {
	name      string
	parts     int
	records   int // per partition
	modes     []string
	perUnit   string
	unitCount int
}

type sample struct{ rss, heap, peak float64 }

func main() {
	var c childArgs
	flag.StringVar(&c.mode, "child", "", "run one contender (raw, wm or wm-prometheus) and print its figures: how the program runs itself")
	flag.StringVar(&c.scenario, "scenario", "", "with -child: idle or pending")
	flag.IntVar(&c.parts, "parts", 0, "with -child: partitions")
	flag.IntVar(&c.records, "records", 0, "with -child: records per partition")
	flag.StringVar(&c.brokers, "brokers", "", "with -child: the broker holding the topic t")
	flag.StringVar(&c.group, "group", "", "with -child: the consumer group")
	rounds := flag.Int("rounds", 3, "rounds; each runs every contender of every scenario once, in an order that rotates")
	idleParts := flag.Int("idle-partitions", 10_000, "partitions of the idle scenario, one record each")
	pendParts := flag.Int("pending-partitions", 1_000, "partitions of the pending scenario")
	pendRecords := flag.Int("pending-records", 1024, "records per partition of the pending scenario, all pending (max_pending_batches)")
	timeout := flag.Duration("timeout", 20*time.Minute, "the longest a contender's process may run")
	flag.Parse()
	log.SetFlags(0)
	if c.mode != "" {
		if err := runChild(c); err != nil {
			log.Fatalf("%s/%s: %v", c.scenario, c.mode, err)
		}
		return
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rounds", *rounds}, {"idle-partitions", *idleParts}, {"pending-partitions", *pendParts}, {"pending-records", *pendRecords}} {
		if f.v < 1 {
			log.Fatalf("-%s (%d) must be at least 1", f.name, f.v)
		}
	}

	scenarios := []scenario{
		{"idle", *idleParts, 1, []string{"raw", "wm", "wm-prometheus"}, "assigned partition", *idleParts},
		{"pending", *pendParts, *pendRecords, []string{"raw", "wm"}, "pending batch", *pendParts * *pendRecords},
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	brokers := map[string]string{}
	for _, sc := range scenarios {
		addr, closeBroker, err := broker(sc.parts, sc.records)
		if err != nil {
			log.Fatalf("%s: %v", sc.name, err)
		}
		defer closeBroker()
		brokers[sc.name] = addr
	}
	results := map[string][]sample{}
	for r := range *rounds {
		for _, sc := range scenarios {
			for k := range sc.modes {
				mode := sc.modes[(r+k)%len(sc.modes)]
				out, err := runChildProcess(self, *timeout, childArgs{mode, sc.name, sc.parts, sc.records,
					brokers[sc.name], fmt.Sprintf("g-%d-%s", r, mode)})
				if err != nil {
					log.Fatalf("%s/%s: %v", sc.name, mode, err)
				}
				log.Printf("round %d %s/%s: RSS %.1f MB, heap %.1f MB, peak RSS %.1f MB", r+1, sc.name, mode, out.rss/1e6, out.heap/1e6, out.peak/1e6)
				key := sc.name + "/" + mode
				results[key] = append(results[key], out)
			}
		}
	}
	fmt.Print(table(scenarios, results, *rounds))
}

// table is the markdown table of the results: per scenario and contender,
// the median and range over rounds of RSS and heap, and of the RSS above
// the raw run of the same round, per unit.
func table(scenarios []scenario, results map[string][]sample, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| scenario | consumer | RSS (MB) | Go heap in use (MB) | RSS above raw, per %s / %s | peak RSS (MB) | peak RSS above raw, per unit |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n", scenarios[0].perUnit, scenarios[1].perUnit)
	for _, sc := range scenarios {
		for _, mode := range sc.modes {
			rs := results[sc.name+"/"+mode]
			var rss, heap, over, peak, peakOver []float64
			for i, s := range rs {
				raw := results[sc.name+"/raw"][i]
				rss, heap, peak = append(rss, s.rss/1e6), append(heap, s.heap/1e6), append(peak, s.peak/1e6)
				over = append(over, (s.rss-raw.rss)/float64(sc.unitCount))
				peakOver = append(peakOver, (s.peak-raw.peak)/float64(sc.unitCount))
			}
			extra, peakExtra := "–", "–"
			if mode != "raw" {
				extra, peakExtra = testkit.MedRange(over, "%.0f B"), testkit.MedRange(peakOver, "%.0f B")
			}
			fmt.Fprintf(&b, "| %s (%d partitions) | %s | %s | %s | %s | %s | %s |\n", sc.name, sc.parts, mode,
				testkit.MedRange(rss, "%.1f"), testkit.MedRange(heap, "%.1f"), extra, testkit.MedRange(peak, "%.1f"), peakExtra)
		}
	}
	fmt.Fprintf(&b, "\n%d round(s), each contender in its own process; median [min–max]; the per-unit figure pairs each run with the raw run of its round.\n\n", rounds)
	return b.String()
}

// broker starts kfake in this process with a topic t of parts partitions
// holding records records each, for the contenders to read.
func broker(parts, records int) (string, func(), error) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(parts), "t"))
	if err != nil {
		return "", nil, err
	}
	addr := kc.ListenAddrs()[0]
	if err := produceEach(addr, parts, records); err != nil {
		kc.Close()
		return "", nil, err
	}
	return addr, kc.Close, nil
}

// runChildProcess runs one contender in a process of its own (self with
// -child) and returns the figures it printed.
func runChildProcess(self string, timeout time.Duration, c childArgs) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-child", c.mode, "-scenario", c.scenario,
		"-parts", strconv.Itoa(c.parts), "-records", strconv.Itoa(c.records), "-brokers", c.brokers, "-group", c.group)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("%w: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		var s sample
		if n, _ := fmt.Sscanf(line, "RSS %g HEAP %g PEAK %g", &s.rss, &s.heap, &s.peak); n == 3 {
			return s, nil
		}
	}
	return sample{}, fmt.Errorf("no RSS line in %q", out)
}
