package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The scale benchmarks drive one owner by hand, with no run goroutine: the
// benchmark's goroutine is the owner goroutine, and calls what run would.
// 10,000 partitions are assigned, each with one record delivered and
// committed, as a topic with light traffic leaves them; then each cycle
// moves the watermark of `moved` of them (one more record each, handed out
// and acked, outside the timer) and times what the periodic work costs.
//
//	go test ./internal/engine -run '^$' -bench 'CommitCycle|MetadataEncoding|GaugeTick' -benchtime 2s

const scaleParts = 10_000

// BenchmarkCommitCycle times one periodic commit cycle among 10,000 assigned
// partitions, of which `moved` had their watermark moved since the last:
// planning the commit (commit), the OffsetCommit request kgo would send
// (built and encoded as kmsg does, version 9, standing in for kgo's own
// work on the committer goroutine), and applying the result (onCommitDone).
// The client answers at once. req-B is the encoded request's size and
// meta-B the commit metadata in it. The cost must follow moved, not the
// 10,000 assigned.
func BenchmarkCommitCycle(b *testing.B) {
	for _, moved := range []int{1, 10, 100, 1000, 10_000} {
		b.Run(fmt.Sprintf("moved=%d", moved), func(b *testing.B) {
			r := newScaleRig(b, scaleParts, "")
			var reqBytes, metaBytes int
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r.move(b, moved)
				b.StartTimer()
				reqBytes, metaBytes = r.commitCycle(b)
			}
			b.ReportMetric(float64(reqBytes), "req-B")
			b.ReportMetric(float64(metaBytes), "meta-B")
		})
	}
}

// BenchmarkMetadataEncoding times the commit metadata of 10,000 partitions:
// planning each partition's commit (its delivered ranges encoded, as
// commit does) and keeping the request within its metadata budget. ranges
// is the delivered ranges above each watermark: 0 is an idle or caught-up
// partition (header only), 16 a fragmented one (10,000 of them exceed the
// 1 MiB request budget, which cuts most to their header). op = the
// metadata of one commit of all 10,000.
func BenchmarkMetadataEncoding(b *testing.B) {
	for _, ranges := range []int{0, 1, 16} {
		b.Run(fmt.Sprintf("ranges=%d", ranges), func(b *testing.B) {
			r := newScaleRig(b, scaleParts, "")
			r.fragment(b, ranges)
			var total int
			b.ReportAllocs()
			for b.Loop() {
				plans := make(map[topicPartition]*planned, len(r.tps))
				for _, tp := range r.tps {
					p := r.o.parts[tp]
					if c, ok := r.o.plan(p, r.o.commits.metaMax); ok {
						plans[tp] = &c
					}
				}
				r.o.budgetMeta(plans)
				total = 0
				for _, c := range plans {
					total += len(c.meta)
				}
			}
			b.ReportMetric(float64(total), "meta-B")
			b.ReportMetric(float64(total)/float64(len(r.tps)), "meta-B/partition")
		})
	}
}

// BenchmarkGaugeTick times one tick of the gauge clock (publishGauges and
// checkStalls) among 10,000 assigned partitions, `active` of which have a
// batch pending, so that their age moves; the others are idle.
func BenchmarkGaugeTick(b *testing.B) {
	for _, active := range []int{0, 10, 1000} {
		b.Run(fmt.Sprintf("active=%d", active), func(b *testing.B) {
			r := newScaleRig(b, scaleParts, "")
			r.pend(b, active)
			now := time.Now()
			r.o.publishGauges(now)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Second)
				r.o.publishGauges(now)
				r.o.checkStalls(now)
			}
		})
	}
}

// BenchmarkStateSize measures what the owner holds in the Go heap, after a
// GC, per assigned partition and per pending batch: 10,000 partitions with
// one record each delivered and committed (B/idle-partition), then 1,000
// more partitions brought to the pending limit with 1,024 batches of one
// record each (B/pending-batch; the records the fake fetches allocate count
// with the batches that hold them, their values do not: all share
// benchValue). It also reports the unsafe.Sizeof of the types behind those
// figures: partState, Batch (an inflight batch), windowBatch, rawBatch and
// kgo.Record. It is a measurement, not a timing: it runs once, before the
// loop, whatever -benchtime says, and the loop is empty (ns/op is
// suppressed).
//
//	go test ./internal/engine -run '^$' -bench '^BenchmarkStateSize$' -benchtime 1x
func BenchmarkStateSize(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const pendParts, pendEach = 1000, 1024
	h0 := heap()
	idle := newScaleRig(b, scaleParts, "")
	h1 := heap()
	perPart := float64(h1-h0) / scaleParts
	full := newScaleRig(b, pendParts, "")
	h1 = heap()
	all := full.pick(pendParts)
	for range pendEach {
		full.feed(b, all)
	}
	h2 := heap()
	perBatch := float64(h2-h1) / (pendParts * pendEach)
	runtime.KeepAlive(idle)
	runtime.KeepAlive(full)
	for b.Loop() {
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(perPart, "B/idle-partition")
	b.ReportMetric(perBatch, "B/pending-batch")
	b.ReportMetric(float64(unsafe.Sizeof(partState{})), "partState-B")
	b.ReportMetric(float64(unsafe.Sizeof(Batch{})), "Batch-B")
	b.ReportMetric(float64(unsafe.Sizeof(windowBatch{})), "windowBatch-B")
	b.ReportMetric(float64(unsafe.Sizeof(rawBatch{})), "rawBatch-B")
	b.ReportMetric(float64(unsafe.Sizeof(kgo.Record{})), "Record-B")
}

// scaleRig is an owner driven by hand (see above), on nullClient.
type scaleRig struct {
	o    *owner
	tps  []topicPartition
	next []int64 // the next offset of each partition
	poll uint64
	cur  int // where move starts next, round robin
}

func newScaleRig(b testing.TB, parts int, extra string) *scaleRig {
	b.Helper()
	conf := benchConfig(b, "batch_max_records: 1\n"+extra)
	res := service.MockResources()
	o := newOwner(conf, res.Logger(), NewMetrics(res.Metrics()))
	o.cl = nullClient{}
	r := &scaleRig{o: o, tps: make([]topicPartition, parts), next: make([]int64, parts)}
	for i := range r.tps {
		r.tps[i] = topicPartition{"t", int32(i)}
	}
	o.onAssign(r.tps)
	r.move(b, parts)
	r.commitCycle(b)
	return r
}

// feed fetches one record for each of the partitions idx, hands each out
// and returns the batches.
func (r *scaleRig) feed(b testing.TB, idx []int) []*Batch {
	b.Helper()
	fps := make([]kgo.FetchPartition, 0, len(idx))
	for _, i := range idx {
		rec := &kgo.Record{Topic: "t", Partition: int32(i), Offset: r.next[i], Value: benchValue}
		r.next[i]++
		fps = append(fps, kgo.FetchPartition{Partition: int32(i), HighWatermark: r.next[i], Records: []*kgo.Record{rec}})
	}
	r.poll++
	r.o.onPoll(r.poll, kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: fps}}}})
	out := make([]*Batch, 0, len(idx))
	for range idx {
		req := &readReq{reply: make(chan *Batch, 1)}
		r.o.parked = append(r.o.parked, req)
		r.o.serve()
		bt := <-req.reply
		if bt == nil {
			b.Fatal("no batch to hand out")
		}
		out = append(out, bt)
	}
	return out
}

// next n partitions, round robin.
func (r *scaleRig) pick(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = r.cur % len(r.tps)
		r.cur++
	}
	return idx
}

// move moves the watermark of the next n partitions: one record each,
// handed out and acked.
func (r *scaleRig) move(b testing.TB, n int) {
	for _, bt := range r.feed(b, r.pick(n)) {
		r.o.onAck(ackMsg{b: bt})
	}
}

// pend leaves one batch pending on each of the next n partitions.
func (r *scaleRig) pend(b testing.TB, n int) {
	r.feed(b, r.pick(n))
}

// fragment leaves on every partition k delivered ranges above its
// watermark: 2k batches, every other one acked, the first never.
func (r *scaleRig) fragment(b testing.TB, k int) {
	all := make([]int, len(r.tps))
	for i := range all {
		all[i] = i
	}
	for j := range 2 * k {
		bs := r.feed(b, all)
		if j%2 == 1 {
			for _, bt := range bs {
				r.o.onAck(ackMsg{b: bt})
			}
		}
	}
}

// commitCycle runs one periodic commit as run and the committer would, and
// returns the size of its request and of the metadata in it.
func (r *scaleRig) commitCycle(b testing.TB) (reqBytes, metaBytes int) {
	r.o.commit()
	var job commitJob
	select {
	case job = <-r.o.inbox.commitJobs:
	default:
		b.Fatal("no commit planned")
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = "g", "member", 1
	for topic, ps := range job.set.offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, eo := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
			if m, ok := job.set.meta[topicPartition{topic, p}]; ok {
				rp.Metadata = kmsg.StringPtr(m)
				metaBytes += len(m)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	reqBytes = len(req.AppendTo(nil))
	res := r.o.cl.Commit(context.Background(), job.set, false)
	r.o.onCommitDone(commitDone{commitJob: job, result: res})
	return reqBytes, metaBytes
}

// nullClient is a groupClient whose commits all succeed at once, and which
// keeps nothing.
type nullClient struct{}

func (nullClient) PauseFetchPartitions(map[string][]int32) map[string][]int32 { return nil }
func (nullClient) ResumeFetchPartitions(map[string][]int32)                   {}
func (nullClient) SetOffsets(map[string]map[int32]kgo.EpochOffset)            {}
func (nullClient) Commit(context.Context, commitSet, bool) commitResult {
	return commitResult{errs: map[topicPartition]error{}}
}
func (nullClient) ListEndOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	return nil, nil
}

func (nullClient) ListStartOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	return nil, nil
}

func (nullClient) DescribeRetention(context.Context, ...string) (map[string]int64, error) {
	return nil, nil
}
