package demo

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
)

// demoSinkName is the output the demo's stream writes to.
const demoSinkName = "demo_sink"

// failedBatch is a batch the sink failed on purpose, and every delivery of
// its records since. The sink is the only party that knows why a batch
// failed, so the summary tells its story from this record.
type failedBatch struct {
	Partition   int32
	First, Last int64
	Err         string     // the error of its first rejection
	Until       time.Time  // the sink rejects its deliveries that start before this
	Poison      bool       // the sink rejects every delivery of it (--dead-letter-after): Until does not apply
	Deliveries  []delivery // every delivery of a batch overlapping [First, Last], in order of start
}

// delivery is one delivery of a failed batch's records.
type delivery struct {
	Start, Answered time.Time // Answered is zero while in flight
	Accepted        bool
	Attempt         int // the kafka_delivery_attempt the input gave it (1 when absent)
}

// rejections counts the deliveries the sink rejected.
func (f failedBatch) rejections() int {
	n := 0
	for _, d := range f.Deliveries {
		if !d.Answered.IsZero() && !d.Accepted {
			n++
		}
	}
	return n
}

// records is the batch's record count, as offsets (no gaps in the demo's
// topic).
func (f failedBatch) records() int64 { return f.Last - f.First + 1 }

// demoSink is the demo's downstream system: it acknowledges batches out of
// order (each one after a random latency, many in flight), fails the batches
// that contain the planned target offsets for failFor after their first
// delivery (and every delivery of their records in that time, which is what
// a replay in place sends again), and records every delivery so the summary
// can count what arrived and how often.
type demoSink struct {
	topic      string
	failFor    time.Duration
	maxLatency time.Duration
	poison     bool // reject a failed batch on every delivery (set before the pipeline runs)

	mu    sync.Mutex
	rng   *rand.Rand
	parts map[int32]*sinkPartition
}

// sinkPartition is the sink's record of one partition.
type sinkPartition struct {
	start, end int64    // the offsets this run expects: [start, end)
	counts     []uint32 // deliveries per offset-start
	distinct   int      // offsets of [start, end) delivered at least once
	dups       int      // deliveries of an offset delivered before
	other      int      // deliveries outside [start, end)
	inFlight   int      // batches being written now
	answered   []int64  // first offsets of the batches answered (ok or failed)
	targets    []int64  // offsets whose batch fails on its first delivery
	failed     []failedBatch
}

// failing returns the index of the failed batch that [first, last]
// overlaps, or -1.
func (sp *sinkPartition) failing(first, last int64) int {
	return slices.IndexFunc(sp.failed, func(f failedBatch) bool { return first <= f.Last && f.First <= last })
}

// newDemoSink returns a sink expecting, per partition, the offsets
// ranges[p] = [start, end), that rejects a failed batch for failFor.
// Its latency and concurrency come from its YAML config (register).
func newDemoSink(topic string, ranges map[int32][2]int64, failFor time.Duration, rng *rand.Rand) *demoSink {
	s := &demoSink{topic: topic, failFor: failFor, rng: rng, parts: map[int32]*sinkPartition{}}
	for p, r := range ranges {
		s.parts[p] = &sinkPartition{start: r[0], end: r[1], counts: make([]uint32, max(r[1]-r[0], 0))}
	}
	return s
}

// planFailures picks n batches to fail: partitions in a random order (a
// second round only when n exceeds the partitions), and in each a target
// offset in the first third of what the partition holds. The target is at
// least batchMax records past the start, so the failed batch is never the
// partition's first: a delivered prefix exists and the commit visibly stops
// at the failed batch rather than never starting.
func (s *demoSink) planFailures(n, batchMax int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []int32
	for p, sp := range s.parts {
		if sp.end > sp.start {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return
	}
	slices.Sort(ps)
	s.rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	for i := range n {
		sp := s.parts[ps[i%len(ps)]]
		c, b := sp.end-sp.start, int64(batchMax)
		t := sp.start + c - 1 // a partition of one batch: fail that batch
		if c > b {
			t = sp.start + b + s.rng.Int64N(max(c/3-b, 1))
		}
		sp.targets = append(sp.targets, min(t, sp.end-1))
	}
}

// register adds the sink to env as the batch output demoSinkName.
func (s *demoSink) register(env *service.Environment) error {
	spec := service.NewConfigSpec().
		Summary("The demo's out-of-order sink.").
		Fields(
			service.NewIntField("max_in_flight").Default(16),
			service.NewDurationField("max_latency").Default("20ms"),
		)
	return env.RegisterBatchOutput(demoSinkName, spec,
		func(pc *service.ParsedConfig, _ *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			n, err := pc.FieldInt("max_in_flight")
			if err != nil {
				return nil, service.BatchPolicy{}, 0, err
			}
			lat, err := pc.FieldDuration("max_latency")
			if err != nil {
				return nil, service.BatchPolicy{}, 0, err
			}
			s.mu.Lock()
			s.maxLatency = lat
			s.mu.Unlock()
			return s, service.BatchPolicy{}, n, nil
		})
}

func (s *demoSink) Connect(context.Context) error { return nil }
func (s *demoSink) Close(context.Context) error   { return nil }

// WriteBatch records the batch's deliveries, waits a random latency (so
// batches written concurrently finish out of order) and then acknowledges
// it, or fails it: when it holds a target offset (its first failure), or
// overlaps a failed batch whose time to fail has not run out.
func (s *demoSink) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	if len(b) == 0 {
		return nil
	}
	part, first := recordPosition(b[0])
	_, last := recordPosition(b[len(b)-1])
	now := time.Now()

	s.mu.Lock()
	sp := s.parts[part]
	if sp == nil { // a partition added while running: still counted
		sp = &sinkPartition{}
		s.parts[part] = sp
	}
	for _, m := range b {
		_, off := recordPosition(m)
		sp.deliver(off)
	}
	sp.inFlight++
	fi := sp.failing(first, last)
	if fi < 0 {
		for i, t := range sp.targets {
			if first <= t && t <= last {
				sp.targets = slices.Delete(sp.targets, i, i+1)
				sp.failed = append(sp.failed, failedBatch{Partition: part, First: first, Last: last, Until: now.Add(s.failFor),
					Poison: s.poison, Err: s.injected(part, first, last).Error()})
				fi = len(sp.failed) - 1
				break
			}
		}
	}
	fail := fi >= 0 && (sp.failed[fi].Poison || now.Before(sp.failed[fi].Until))
	di := 0
	if fi >= 0 {
		di = len(sp.failed[fi].Deliveries)
		attempt := int64(1) // absent on a first delivery: absent means 1
		if v, ok := b[0].MetaGetMut(kafkamsg.MetaDeliveryAttempt); ok {
			attempt = toInt64(v)
		}
		sp.failed[fi].Deliveries = append(sp.failed[fi].Deliveries, delivery{Start: now, Attempt: int(attempt)})
	}
	latency := time.Duration(s.rng.Int64N(int64(s.maxLatency) + 1))
	s.mu.Unlock()

	var err error
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil && fail {
		err = s.injected(part, first, last)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	sp.inFlight--
	sp.answered = append(sp.answered, first)
	if fi >= 0 {
		d := &sp.failed[fi].Deliveries[di]
		d.Answered, d.Accepted = time.Now(), err == nil
	}
	return err
}

// injected is the error the sink fails a batch with. It is written to read
// whole through the stall's error class (internal/errclass): a topic of
// plain words ("watermark-demo") with its partition, an offset range and an
// HTTP reason phrase are all kept. A topic of another shape (with '.', '_'
// or digits, of more than 3 words or 20 bytes) or offsets of more than 6
// digits would read as "[redacted]".
func (s *demoSink) injected(part int32, first, last int64) error {
	return fmt.Errorf("HTTP 503 Service Unavailable from downstream for %s/%d offsets %d-%d (injected failure)",
		s.topic, part, first, last)
}

func (sp *sinkPartition) deliver(off int64) {
	if off < sp.start || off >= sp.end {
		sp.other++
		return
	}
	i := off - sp.start
	if sp.counts[i] == 0 {
		sp.distinct++
	} else {
		sp.dups++
	}
	sp.counts[i]++
}

// recordPosition returns the partition and offset the input put in a
// message's metadata.
func recordPosition(m *service.Message) (int32, int64) {
	p, _ := m.MetaGetMut("kafka_partition")
	o, _ := m.MetaGetMut("kafka_offset")
	return int32(toInt64(p)), toInt64(o)
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	}
	return -1
}

// sinkState is a consistent copy of one partition's record.
type sinkState struct {
	Expected   int64 // records of [start, end)
	Distinct   int
	Dups       int
	Other      int
	InFlight   int
	Failed     []failedBatch
	answeredAt int // batches answered whose first offset is at or after the first failure
}

// state returns a copy of partition p's record.
func (s *demoSink) state(p int32) sinkState {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.parts[p]
	if sp == nil {
		return sinkState{}
	}
	st := sinkState{
		Expected: sp.end - sp.start, Distinct: sp.distinct, Dups: sp.dups, Other: sp.other,
		InFlight: sp.inFlight, Failed: slices.Clone(sp.failed),
	}
	for i := range st.Failed {
		st.Failed[i].Deliveries = slices.Clone(st.Failed[i].Deliveries)
	}
	if len(sp.failed) > 0 {
		for _, f := range sp.answered {
			if f >= st.firstFailure().First {
				st.answeredAt++
			}
		}
	}
	return st
}

// firstFailure is the failed batch with the lowest offset: where the
// partition's watermark stops.
func (st sinkState) firstFailure() *failedBatch {
	if len(st.Failed) == 0 {
		return nil
	}
	f := slices.MinFunc(st.Failed, func(a, b failedBatch) int { return cmp.Compare(a.First, b.First) })
	return &f
}
