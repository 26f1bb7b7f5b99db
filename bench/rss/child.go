package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure" // the bloblang methods of the input's config lints
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/gctune"
	_ "github.com/watermark-connect/watermark-connect/metrics/prometheus" // the prometheus exporter of wm-prometheus
	"github.com/watermark-connect/watermark-connect/plugin"
)

// childArgs names one contender's run: mode (raw, wm, wm-prometheus),
// scenario (idle, pending), the topic's size, the broker holding it and the
// consumer group to read it with.
type childArgs struct {
	mode, scenario string
	parts, records int
	brokers, group string
}

// commitPeriod is kafka_watermark's default commit_period, which the wm
// contenders run with: the idle scenario waits two of them for its commits.
const commitPeriod = time.Second

// runChild runs one contender in this process and prints "RSS <bytes> HEAP
// <bytes> PEAK <bytes>" on stdout once it holds what its scenario asks for:
// the resident set and the Go heap in use after a GC, and the peak resident
// set while it consumed (VmHWM, reset just before).
func runChild(c childArgs) error {
	if c.parts < 1 || c.records < 1 {
		return fmt.Errorf("-parts (%d) and -records (%d) must be at least 1", c.parts, c.records)
	}
	pending := c.scenario == "pending"
	if !pending && c.scenario != "idle" {
		return fmt.Errorf("-scenario %q: must be idle or pending", c.scenario)
	}
	// As the binary runs: its GC settings (GOGC and GOMEMLIMIT win).
	log.Printf("%s/%s: %s", c.scenario, c.mode, gctune.Start())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := resetPeakRSS(); err != nil {
		return err
	}

	var held any // what the contender keeps until the figures are read
	var stop func()
	var err error
	switch c.mode {
	case "raw":
		held, stop, err = consumeRaw(ctx, c, c.parts*c.records, pending)
	case "wm", "wm-prometheus":
		held, stop, err = consumeWatermark(ctx, c, pending)
	default:
		err = fmt.Errorf("-child %q: must be raw, wm or wm-prometheus", c.mode)
	}
	if err != nil {
		return err
	}
	time.Sleep(time.Second)
	peak, err := statusBytes("VmHWM:")
	if err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := statusBytes("VmRSS:")
	if err != nil {
		return err
	}
	fmt.Printf("RSS %d HEAP %d PEAK %d\n", rss, ms.HeapInuse, peak)
	runtime.KeepAlive(held)
	stop()
	return nil
}

// resetPeakRSS makes VmHWM start again from the resident set now
// (proc(5), /proc/pid/clear_refs: 5).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// consumeRaw reads total records with a franz-go group consumer; pending
// keeps them and commits nothing, idle commits them all.
func consumeRaw(ctx context.Context, c childArgs, total int, pending bool) (any, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers), kgo.ConsumerGroup(c.group), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return nil, nil, err
	}
	var held [][]*kgo.Record
	for n := 0; n < total; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			cl.Close()
			return nil, nil, err
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
			cl.Close()
			return nil, nil, err
		}
	}
	return held, cl.Close, nil
}

// consumeWatermark reads every record, one a batch, from kafka_watermark
// built as a Benthos input resource (with the Prometheus exporter for
// wm-prometheus, no exporter otherwise) and read through ReadBatch, as a
// stream's pipeline reads it. Pending keeps each batch's ack function and
// never calls it, with max_pending_batches at the records per partition;
// idle acks each batch and waits two commit periods, so that every
// partition is committed. The messages are dropped as soon as they are read.
//
// Benthos's input reader keeps, per batch not yet acked, a goroutine that
// waits for the ack and the transaction with the batch's messages: the
// pending figures include them, as they do in a real pipeline.
func consumeWatermark(ctx context.Context, c childArgs, pending bool) (any, func(), error) {
	conf := fmt.Sprintf("label: wm\n%s:\n  seed_brokers: [ %q ]\n  topics: [ t ]\n  consumer_group: %q\n  batch_max_records: 1\n", plugin.InputName, c.brokers, c.group)
	if pending {
		conf += fmt.Sprintf("  max_pending_batches: %d\n", c.records)
	}
	rb := service.NewResourceBuilder()
	rb.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := rb.AddInputYAML(conf); err != nil {
		return nil, nil, err
	}
	if c.mode == "wm-prometheus" {
		if err := rb.SetMetricsYAML("prometheus: {}"); err != nil {
			return nil, nil, err
		}
	}
	res, closeRes, err := rb.Build()
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer ccancel()
		_ = closeRes(cctx) // the figures are out; a pending input cannot drain
	}
	var acks []service.AckFunc
	var readErr error
	total := c.parts * c.records
	err = res.AccessInput(ctx, "wm", func(in *service.ResourceInput) {
		for n := 0; n < total; {
			msgs, ack, err := in.ReadBatch(ctx)
			if err != nil {
				readErr = err
				return
			}
			n += len(msgs)
			if pending {
				acks = append(acks, ack)
			} else if err := ack(ctx, nil); err != nil {
				readErr = err
				return
			}
		}
	})
	if err = errors.Join(err, readErr); err != nil {
		stop()
		return nil, nil, err
	}
	if !pending {
		// Every partition committed: two commit periods.
		time.Sleep(2*commitPeriod + 500*time.Millisecond)
	}
	return acks, stop, nil
}

// statusBytes returns a field of /proc/self/status given in kB (VmRSS:,
// VmHWM:), in bytes.
func statusBytes(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.Join(fmt.Errorf("no %s in /proc/self/status", field), sc.Err())
}

// produceEach writes n records of 16 bytes to each of parts partitions of t.
func produceEach(addr string, parts, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
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
	return perr
}
