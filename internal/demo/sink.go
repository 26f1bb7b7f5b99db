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
	Deliveries  []delivery // every delivery of a batch overlapping it (holds), in order of start

	// Offsets are the batch's offsets under ordering: key, where a batch is
	// a set of a few keys' records, not a range; nil under none. Wait is
	// what the sink saw of its partition while it waited, when the records
	// carry few keys (keyCheck).
	Offsets []int64
	Wait    keyWait
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

// records is the batch's record count: its offsets under key, else its
// range (no gaps in the demo's topic).
func (f failedBatch) records() int64 {
	if f.Offsets != nil {
		return int64(len(f.Offsets))
	}
	return f.Last - f.First + 1
}

// demoSink is the demo's downstream system: it acknowledges batches out of
// order (each one after a random latency, many in flight), fails the batches
// that contain the planned target offsets for failFor after their first
// delivery (and every delivery of their records in that time, which is what
// a replay in place sends again), and records every delivery so the summary
// can count what arrived and how often. When the records carry few keys it
// also checks their order, per partition (keyCheck).
type demoSink struct {
	topic      string
	failFor    time.Duration
	maxLatency time.Duration
	poison     bool // reject a failed batch on every delivery (set before the pipeline runs)
	// keyOrdered: the input runs with ordering: key, so a batch is a set of
	// offsets: a failed batch is the first to start at or past a target,
	// and a delivery overlaps it when it holds one of its offsets. Set
	// before the pipeline runs, as is each partition's keys.
	keyOrdered bool

	mu    sync.Mutex
	rng   *rand.Rand
	parts map[int32]*sinkPartition
}

// sinkPartition is the sink's record of one partition.
type sinkPartition struct {
	start, end int64     // the offsets this run expects: [start, end)
	counts     []uint32  // deliveries per offset-start
	distinct   int       // offsets of [start, end) delivered at least once
	dups       int       // deliveries of an offset delivered before
	other      int       // deliveries outside [start, end)
	inFlight   int       // batches being written now
	answered   []int64   // first offsets of the batches answered (ok or failed)
	lastAnswer time.Time // when the latest of them was
	targets    []int64   // offsets whose batch fails on its first delivery
	failed     []failedBatch
	keys       *keyCheck // nil unless the records carry few keys
}

// failing returns the index of the failed batch that a delivery of offs
// overlaps, or -1: under none a batch is the range of its first and last
// offsets, under key the set of offs.
func (sp *sinkPartition) failing(offs []int64, keyOrdered bool) int {
	first, last := offs[0], offs[len(offs)-1]
	return slices.IndexFunc(sp.failed, func(f failedBatch) bool {
		if !keyOrdered {
			return first <= f.Last && f.First <= last
		}
		return slices.ContainsFunc(offs, f.holds)
	})
}

// trackKeys makes the sink check key order in every partition (keyCheck).
func (s *demoSink) trackKeys() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.parts {
		sp.keys = newKeyCheck(sp.start, sp.end)
	}
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
	offs := make([]int64, len(b))
	for i, m := range b {
		_, offs[i] = recordPosition(m)
	}
	now := time.Now()

	s.mu.Lock()
	sp := s.parts[part]
	if sp == nil { // a partition added while running: still counted
		sp = &sinkPartition{}
		s.parts[part] = sp
	}
	var keys, batchKeys []string // with a keyCheck: each record's key, and the batch's
	if sp.keys != nil {
		keys = make([]string, len(b))
		for i, m := range b {
			keys[i] = messageKey(m)
		}
		batchKeys = distinct(keys)
		sp.keys.sent(batchKeys)
	}
	for _, off := range offs {
		sp.deliver(off)
	}
	sp.inFlight++
	fi := sp.failing(offs, s.keyOrdered)
	if fi < 0 {
		for i, t := range sp.targets {
			// Under key a batch holds a few keys' records from anywhere in
			// what was fetched: the one that starts past the target fails,
			// so that the commit, which stops at its first offset, is
			// seen to stop past a delivered prefix, as under none.
			if (!s.keyOrdered && first <= t && t <= last) || (s.keyOrdered && first >= t) {
				sp.targets = slices.Delete(sp.targets, i, i+1)
				f := failedBatch{Partition: part, First: first, Last: last, Until: now.Add(s.failFor),
					Poison: s.poison, Err: s.injected(part, first, last).Error(), Wait: keyWait{Keys: batchKeys}}
				if s.keyOrdered {
					f.Offsets = slices.Sorted(slices.Values(offs)) // sorted as handed out; holds relies on it
				}
				sp.failed = append(sp.failed, f)
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
	sp.answered, sp.lastAnswer = append(sp.answered, first), time.Now()
	if sp.keys != nil {
		sp.keys.answered(batchKeys)
	}
	if fi >= 0 {
		d := &sp.failed[fi].Deliveries[di]
		d.Answered, d.Accepted = time.Now(), err == nil
	}
	if sp.keys != nil && err == nil {
		landed := time.Now()
		for i, off := range offs {
			if sp.keys.land(off, keys[i]) {
				sp.noteWaiting(off, keys[i], landed)
			}
		}
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
	KeyOrder   keyOrderSeen  // zero unless the records carry few keys
	Quiet      time.Duration // with nothing in flight, how long since the latest answer; 0 with batches in flight
	answeredAt int           // batches answered whose first offset is at or after the first failure
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
		InFlight: sp.inFlight, Failed: slices.Clone(sp.failed), KeyOrder: sp.keys.seen(),
	}
	if sp.inFlight == 0 && !sp.lastAnswer.IsZero() {
		st.Quiet = time.Since(sp.lastAnswer)
	}
	for i := range st.Failed {
		st.Failed[i].Deliveries = slices.Clone(st.Failed[i].Deliveries)
		st.Failed[i].Wait.Keys = slices.Clone(st.Failed[i].Wait.Keys)
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
