package tests

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// rec is one record as the pipeline's mapping renders it.
type rec = testkit.Record

// sink is the black-box HTTP sink: a testkit.Sink, which records every
// record of a request before answering 200, after a random delay so that
// with many requests in flight batches are acknowledged out of order, and
// checks each record's topic, partition and value (value(p, o)). On top of
// it, this layer fails (fail) and holds (hold) the requests a test picks,
// and tells an observer (arrived, judged) of each request.
type sink struct {
	*testkit.Sink
	gate *testkit.Gate // where held requests wait

	mu sync.Mutex // guards fail and hold (setFail, setHold)
	// fail decides whether to fail a request (HTTP 500, which the binary's
	// http_client, with retries: 0, turns into a nack). It is called under
	// the testkit.Sink's lock, one request at a time, in one step with
	// recording the batch it lets through.
	fail func(recs []rec) bool
	// hold decides whether to hold a request before its delay until
	// releaseHeld (or the sink's shutdown): a slow batch, whose ack comes
	// while later batches of its partition are acknowledged. It is called
	// on the request's goroutine, with no lock held. Once released, every
	// request passes at once.
	hold func(recs []rec) bool
	// arrived, when set, is told of every request once its body is
	// decoded, before hold, on the request's goroutine with no lock held:
	// the moment a batch handed out reaches the sink.
	arrived func(b testkit.Batch)
	// judged, when set, is told of the answer judge gives each request that
	// reaches it (those a hold or the shutdown ends never do), under the
	// testkit.Sink's lock, in one step with recording an accepted batch; b
	// is the value arrived saw, so &b.Records[0] names the request.
	judged func(b testkit.Batch, a testkit.Answer)
}

func newSink(t *testing.T, topic string, partitions int32, minDelay, maxDelay time.Duration) *sink {
	s := &sink{gate: testkit.NewGate()}
	ts, err := testkit.NewSink(testkit.SinkOptions{Topic: topic, Partitions: int(partitions), Want: value,
		MinDelay: minDelay, MaxDelay: maxDelay, Hold: s.holdRequest, Judge: s.judge})
	if err != nil {
		t.Fatal(err)
	}
	s.Sink = ts
	t.Cleanup(func() {
		s.Close() // ends the delays and holds, and waits for the handlers
		l := s.Snapshot()
		for i, b := range l.Bad {
			if i == 10 {
				t.Errorf("sink: ... and %d more bad records", l.BadCount-10)
				break
			}
			t.Errorf("sink: %s", b)
		}
	})
	return s
}

func (s *sink) url() string { return s.URL() }

// setRate throttles the sink to about r records per second (0: no limit).
func (s *sink) setRate(r float64) { s.SetRate(r) }

// setFail sets the sink's fail predicate (nil: fail nothing).
func (s *sink) setFail(f func(recs []rec) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

// setHold sets the sink's hold predicate (nil: hold nothing).
func (s *sink) setHold(f func(recs []rec) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = f
}

// setObserver sets the hooks that watch every request (nil: none): a
// checker that needs the instance behind a batch, or the requests in flight.
func (s *sink) setObserver(arrived func(b testkit.Batch), judged func(b testkit.Batch, a testkit.Answer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrived, s.judged = arrived, judged
}

// holdRequest is the sink's Hold: it holds the request while hold asks for
// it and releaseHeld was not called yet, and answers 503 when the sink
// shuts down meanwhile.
func (s *sink) holdRequest(ctx context.Context, b testkit.Batch) testkit.Answer {
	s.mu.Lock()
	hold, arrived := s.hold, s.arrived
	s.mu.Unlock()
	if arrived != nil {
		arrived(b)
	}
	if hold == nil || !hold(b.Records) || s.gate.Wait(ctx, len(b.Records)) {
		return testkit.Accept
	}
	return testkit.Unavailable
}

// judge is the sink's Judge.
func (s *sink) judge(b testkit.Batch) testkit.Answer {
	s.mu.Lock()
	fail, judged := s.fail, s.judged
	s.mu.Unlock()
	a := testkit.Accept
	if fail != nil && fail(b.Records) {
		a = testkit.Fail
	}
	if judged != nil {
		judged(b, a)
	}
	return a
}

// releaseHeld lets every held request, and every later one, go on; it is
// idempotent.
func (s *sink) releaseHeld() { s.gate.Open() }

// held is the number of requests being held now; heldRecs the number of
// records in the requests held so far.
func (s *sink) held() int64     { return s.gate.Waiting() }
func (s *sink) heldRecs() int64 { return s.gate.HeldRecords() }

// waitHeld waits until n requests are being held at once.
func (s *sink) waitHeld(t *testing.T, n int64, timeout time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, s.held(), n, "requests held")
	}, timeout, 50*time.Millisecond, "the sink to hold %d requests within %v", n, timeout)
}

// missing returns the first offset in [from, to) of partition p that was
// never delivered, or -1 when all were: a delivered range a commit claims
// must pass this.
func (s *sink) missing(p int32, from, to int64) (first int64) {
	s.View(func(l *testkit.Ledger) { first = l.Missing(p, from, to) })
	return first
}

// prefix returns the first offset of partition p never delivered.
func (s *sink) prefix(p int32) (o int64) {
	s.View(func(l *testkit.Ledger) { o = l.Prefix(p) })
	return o
}

// count returns how often offset o of partition p was delivered.
func (s *sink) count(p int32, o int64) (n int) {
	s.View(func(l *testkit.Ledger) { n = l.Count(p, o) })
	return n
}

// total is the number of records acknowledged, duplicates included.
func (s *sink) total() int64 { return s.Records() }

// outOfOrder is the number of batches acknowledged after a later batch of
// their partition.
func (s *sink) outOfOrder() (n int64) {
	s.View(func(l *testkit.Ledger) { n = l.OutOfOrder })
	return n
}

// snapshot is a copy of the sink's ledger, to tell runs apart.
type snapshot struct{ *testkit.Ledger }

func (s *sink) snapshot() snapshot { return snapshot{s.Snapshot()} }

// count returns how often offset o of partition p was delivered.
func (sn snapshot) count(p int32, o int64) int { return sn.Count(p, o) }

// len is the length of partition p's slice of entries: every offset at or
// past it was never delivered (some below it may not have been either).
func (sn snapshot) len(p int32) int64 {
	if int(p) >= len(sn.Parts) {
		return 0
	}
	return int64(len(sn.Parts[p]))
}

// since returns, per partition, the offsets delivered after old was taken
// (with how often).
func (sn snapshot) since(old snapshot) map[int32]map[int64]int { return sn.Since(old.Ledger) }

// coverage checks that every offset in [0, end) of every partition was
// delivered and nothing at or past end was; it returns the number of
// duplicate deliveries (deliveries beyond the first).
func (sn snapshot) coverage(t *testing.T, end map[int32]int64) (dups int64) {
	t.Helper()
	var missing int64
	for p := int32(0); int(p) < len(sn.Parts); p++ {
		var firstMissing int64 = -1
		for o := int64(0); o < end[p]; o++ {
			n := sn.count(p, o)
			if n == 0 {
				missing++
				if firstMissing < 0 {
					firstMissing = o
				}
			} else {
				dups += int64(n - 1)
			}
		}
		if firstMissing >= 0 {
			t.Errorf("partition %d: offsets lost, first %d", p, firstMissing)
		}
		for o := end[p]; o < sn.len(p); o++ {
			if sn.count(p, o) > 0 {
				t.Errorf("partition %d: offset %d delivered but beyond the log end %d", p, o, end[p])
				break
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d records never delivered", missing)
	}
	return dups
}

// waitTotal waits until at least n records were acknowledged.
func (s *sink) waitTotal(t *testing.T, n int64, timeout time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, s.total(), n, "records acknowledged")
	}, timeout, 50*time.Millisecond, "the sink to acknowledge %d records within %v", n, timeout)
}

// waitIdle waits until no request is being handled.
func (s *sink) waitIdle(t *testing.T, timeout time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Zero(c, s.InFlight(), "requests in flight")
	}, timeout, 50*time.Millisecond, "the sink to finish its requests within %v", timeout)
}

// instanceCount is the number of records acknowledged to instance name.
func (s *sink) instanceCount(name string) (n int64) {
	s.View(func(l *testkit.Ledger) { n = l.ByInstance[name] })
	return n
}

func (s *sink) stats() string {
	var ooo int64
	var by map[string]int64
	s.View(func(l *testkit.Ledger) { ooo, by = l.OutOfOrder, maps.Clone(l.ByInstance) })
	return fmt.Sprintf("%d requests (%d failed on purpose), %d records acknowledged, %d batches acknowledged after a later batch of their partition, by instance %v",
		s.Requests(), s.Failed(), s.total(), ooo, by)
}
