// Command keysink is the HTTP sink of the key-ordering benchmark: a
// testkit.Sink (one POST per batch, a JSON array of testkit.Records, each
// answered after a random delay in [min-delay, max-delay)) whose Judge checks
// per-key order at the moment of acknowledgement (keyed.Check). Values must
// name their key as bench/keyfill writes them ("<key> <padding>").
//
//	keysink -addr 127.0.0.1:29700 -topic keys -partitions 8 -records 200000
//
// It runs until SIGINT or SIGTERM, or with -records N until N distinct
// records are acknowledged and no request came for -settle. Then it prints
// one line of key=value pairs on stdout:
//
//	keysink requests= records= distinct= duplicates= keys= reordered= overlapped=
//	        mixed_partition_batches= foreign= prefix_sum= sink_records_per_s= examples=[...]
//
// sink_records_per_s is distinct records over the time from the first
// acknowledgement to the last first delivery; prefix_sum is the sum over
// partitions of the first offset never delivered (the log's total when all
// were); foreign counts records of another topic or partition. It exits 1
// when a record was reordered, overlapped or foreign, or fewer than N were
// delivered.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/watermark-connect/watermark-connect/bench/keyed"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:29700", "listen address; the sink's URL is http://ADDR/ingest")
	topic := flag.String("topic", "", "topic the records must come from (\"\": any)")
	partitions := flag.Int("partitions", 8, "the topic's partitions")
	minDelay := flag.Duration("min-delay", 5*time.Millisecond, "least delay before a request is answered")
	maxDelay := flag.Duration("max-delay", 20*time.Millisecond, "delays are uniform in [min-delay, max-delay)")
	records := flag.Int64("records", 0, "exit once this many distinct records are delivered (0: run until a signal)")
	settle := flag.Duration("settle", time.Second, "with -records, how long no request must come before the exit")
	flag.Parse()
	if *partitions < 1 || *maxDelay < *minDelay || *minDelay < 0 {
		log.Fatalf("keysink: partitions (%d) must be at least 1 and 0 <= min-delay (%v) <= max-delay (%v)", *partitions, *minDelay, *maxDelay)
	}

	chk := keyed.NewCheck(*topic, *partitions)
	sink, err := testkit.NewSink(testkit.SinkOptions{
		Addr: *addr, Topic: *topic, Partitions: *partitions,
		MinDelay: *minDelay, MaxDelay: *maxDelay,
		Judge: func(b testkit.Batch) testkit.Answer { return chk.Judge(b, time.Now()) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "keysink: listening at %s\n", sink.URL())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	waitDone(ctx, sink, chk, *records, *settle)
	sink.Close()

	var line string
	ok := true
	sink.View(func(l *testkit.Ledger) {
		var prefix int64
		for p := range *partitions {
			prefix += l.Prefix(int32(p))
		}
		rate := 0.0
		if span := chk.LastNew.Sub(chk.FirstAck); span > 0 {
			rate = float64(chk.Distinct) / span.Seconds()
		}
		line = fmt.Sprintf("keysink requests=%d records=%d distinct=%d duplicates=%d keys=%d reordered=%d overlapped=%d "+
			"mixed_partition_batches=%d foreign=%d prefix_sum=%d sink_records_per_s=%.0f examples=%q",
			sink.Requests(), chk.Records, chk.Distinct, chk.Duplicates, chk.Keys(), chk.Reordered, chk.Overlapped,
			chk.MixedBatches, chk.Foreign, prefix, rate, chk.Examples)
		ok = chk.Reordered == 0 && chk.Overlapped == 0 && chk.Foreign == 0 && chk.Distinct >= *records
	})
	fmt.Println(line)
	if !ok {
		os.Exit(1)
	}
}

// waitDone returns on a signal, or once want distinct records are delivered
// and no request has come for settle.
func waitDone(ctx context.Context, sink *testkit.Sink, chk *keyed.Check, want int64, settle time.Duration) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastReqs int64 = -1
	var quietSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if want <= 0 {
			continue
		}
		var n int64
		sink.View(func(*testkit.Ledger) { n = chk.Distinct })
		reqs := sink.Requests()
		if reqs != lastReqs || sink.InFlight() > 0 {
			lastReqs, quietSince = reqs, time.Now()
			continue
		}
		if n >= want && time.Since(quietSince) >= settle {
			return
		}
	}
}
