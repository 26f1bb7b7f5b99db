package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
)

// BenchmarkAckPath measures the ack path of the real code with no broker: an
// owner (its run loop and committer) on a fakeClient, a fake poller that
// answers every poll token with fresh records, and Engine.Read with the
// plugin's conversion and once-guarded ack function (testReader). Batches hold one record
// (batch_max_records: 1), so message conversion is as small as it gets;
// convert measures that conversion alone, to subtract.
//
//   - ack: op = one ack. A round hands out 1024 batches with the timer
//     stopped, then 8 goroutines ack them, interleaved (goroutine k acks
//     batches k, k+8, ...), and the round ends when the owner has applied
//     every ack. What is timed: the once-guard, the channel send, the owner
//     resolving and advancing the tracker, and the commits of the
//     advanced watermarks that run meanwhile (commit_period 100ms).
//
//   - cycle: op = one batch from hand-out to ack, as a pipeline runs it:
//     this goroutine reads batches (ReadBatch: the owner registers and
//     hands out) and passes each ack function to one of 8 goroutines,
//     which ack them. allocs/op is the allocations per batch from hand-out
//     to ack, conversion of its one record included.
//
//   - convert: RecordsToBatch of the same one-record batch.
//
//     go test ./internal/engine -run '^$' -bench AckPath -benchtime 2s
func BenchmarkAckPath(b *testing.B) {
	for _, parts := range []int{1, 64, 10_000} {
		b.Run(fmt.Sprintf("ack/partitions=%d", parts), func(b *testing.B) { benchAcks(b, parts) })
		b.Run(fmt.Sprintf("cycle/partitions=%d", parts), func(b *testing.B) { benchCycle(b, parts) })
	}
	b.Run("convert", func(b *testing.B) {
		recs := []*kgo.Record{{Topic: "t", Value: benchValue, Offset: 1234}}
		b.ReportAllocs()
		for b.Loop() {
			_ = kafkamsg.RecordsToBatch(recs, 2000)
		}
	})
}

const ackers = 8

var benchValue = []byte("0123456789abcdef0123456789abcdef")

func benchAcks(b *testing.B, parts int) {
	r := newAckRig(b, parts, "batch_max_records: 1\ncommit_period: 100ms\n")
	const round = 1024
	// The ackers live as long as the benchmark: each round hands each of
	// them its share of the round's acks.
	work := make([]chan []service.AckFunc, ackers)
	shares := make([][]service.AckFunc, ackers)
	var done sync.WaitGroup
	for k := range work {
		work[k] = make(chan []service.AckFunc, 1)
		go func() {
			for acks := range work[k] {
				for _, ack := range acks {
					_ = ack(context.Background(), nil)
				}
				done.Done()
			}
		}()
	}
	defer func() {
		for _, w := range work {
			close(w)
		}
	}()
	var elapsed, cpu time.Duration
	var mallocs, bytes uint64
	var ms runtime.MemStats
	b.ReportAllocs()
	rounds := 0
	for b.Loop() {
		b.StopTimer()
		for k := range shares {
			shares[k] = shares[k][:0]
		}
		for i := range round {
			shares[i%ackers] = append(shares[i%ackers], r.read(b))
		}
		done.Add(ackers)
		runtime.ReadMemStats(&ms)
		m0, b0 := ms.Mallocs, ms.TotalAlloc
		b.StartTimer()
		t0, c0 := time.Now(), cpuTime()
		for k, w := range work {
			w <- shares[k]
		}
		done.Wait()
		r.applied()
		elapsed, cpu = elapsed+time.Since(t0), cpu+cpuTime()-c0
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		mallocs, bytes = mallocs+ms.Mallocs-m0, bytes+ms.TotalAlloc-b0
		b.StartTimer()
		rounds++
	}
	n := float64(rounds * round)
	// op = one ack (see the doc comment): these replace the per-round
	// figures.
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/op")
	b.ReportMetric(n/elapsed.Seconds(), "acks/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(mallocs)/n, "allocs/op")
	b.ReportMetric(float64(bytes)/n, "B/op")
}

func benchCycle(b *testing.B, parts int) {
	r := newAckRig(b, parts, "batch_max_records: 1\ncommit_period: 100ms\n")
	chans := make([]chan service.AckFunc, ackers)
	var done sync.WaitGroup
	for k := range chans {
		chans[k] = make(chan service.AckFunc, 256)
		done.Add(1)
		go func() {
			defer done.Done()
			for ack := range chans[k] {
				_ = ack(context.Background(), nil)
			}
		}()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		chans[i%ackers] <- r.read(b)
		i++
	}
	for _, c := range chans {
		close(c)
	}
	done.Wait()
	r.applied()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
}

// ackRig is an owner on a fakeClient with a fake poller, and an Input
// reading from it.
type ackRig struct {
	o  *owner
	in *testReader
}

func newAckRig(b *testing.B, parts int, extra string) *ackRig {
	b.Helper()
	conf := benchConfig(b, extra)
	res := service.MockResources()
	m := NewMetrics(res.Metrics())
	o := newOwner(conf, res.Logger(), m)
	cl := newFakeClient()
	o.cl = cl
	go o.run()
	go o.committer()
	tps := make([]topicPartition, parts)
	for i := range tps {
		tps[i] = topicPartition{"t", int32(i)}
	}
	done := make(chan struct{})
	o.inbox.assignCh <- assignReq{tps: tps, done: done}
	<-done
	stopPoll := make(chan struct{})
	pollDone := make(chan struct{})
	go fakePoll(o, cl, tps, stopPoll, pollDone)
	b.Cleanup(func() {
		close(stopPoll)
		<-pollDone
		o.sig.TriggerHardStop()
		o.stopIO()
		<-o.stopped()
	})
	return &ackRig{o: o, in: &testReader{e: &Engine{o: o}}}
}

// pausedCount returns how many partitions are paused.
func (f *fakeClient) pausedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.paused)
}

// fakePoll answers every poll token with one record for each of the next
// 256 partitions, round robin (for fewer partitions, several records
// each). A fetch's records come from one allocation, as kgo's do from one
// fetch response, so the poller adds next to nothing to the allocations
// per batch.
func fakePoll(o *owner, cl *fakeClient, tps []topicPartition, stop, done chan struct{}) {
	defer close(done)
	const perFetch = 256
	next := make([]int64, len(tps))
	cursor := 0
	var seq uint64
	for {
		select {
		case <-o.inbox.pollWant:
		case <-stop:
			return
		}
		// Like kgo, fetch no paused partition, and wait while all are.
		for cl.pausedCount() == len(tps) {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Microsecond):
			}
		}
		slab := make([]kgo.Record, perFetch)
		ptrs := make([]*kgo.Record, perFetch)
		var fps []kgo.FetchPartition
		for i := 0; i < perFetch; {
			p := cursor % len(tps)
			cursor++
			if cl.isPaused(tps[p]) {
				continue
			}
			n := max(1, perFetch/len(tps))
			from := i
			for ; n > 0 && i < perFetch; n-- {
				slab[i] = kgo.Record{Topic: "t", Partition: int32(p), Offset: next[p], Value: benchValue}
				ptrs[i] = &slab[i]
				next[p]++
				i++
			}
			fps = append(fps, kgo.FetchPartition{Partition: int32(p), HighWatermark: next[p] + 10, Records: ptrs[from:i:i]})
		}
		seq++
		res := pollResult{seq: seq, fetches: kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: fps}}}}, done: make(chan struct{})}
		select {
		case o.inbox.pollCh <- res:
			<-res.done
		case <-stop:
			return
		}
	}
}

// read hands out one batch through Input.ReadBatch.
func (r *ackRig) read(b *testing.B) service.AckFunc {
	_, ack, err := r.in.ReadBatch(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return ack
}

// applied returns once the owner has applied every ack sent so far: a
// withdrawal (of a read that was never parked) has gone through the owner
// after it found the ack channel empty. Each withdrawal blocks until the
// owner takes it, so the wait takes no CPU from the owner.
func (r *ackRig) applied() {
	for {
		r.o.inbox.withdrawCh <- withdrawReq{req: &readReq{reply: make(chan *Batch, 1)}}
		if len(r.o.inbox.ackCh) == 0 {
			r.o.inbox.withdrawCh <- withdrawReq{req: &readReq{reply: make(chan *Batch, 1)}}
			return
		}
	}
}

// benchConfig is testConfig for benchmarks.
func benchConfig(tb testing.TB, extra string) *Config { return testConfig(tb, extra) }

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
