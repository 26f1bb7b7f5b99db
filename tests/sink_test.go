package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rec is one record as the pipeline's mapping renders it.
type rec struct {
	T string `json:"t"`
	P int32  `json:"p"`
	O int64  `json:"o"`
	V string `json:"v"`
}

// sink is the black-box HTTP sink. The pipeline turns each batch into one
// JSON array (mapping + archive) and POSTs it. The sink waits a random delay,
// so with many requests in flight batches are acknowledged out of order,
// then either fails the request (HTTP 500, which the binary's http_client,
// with retries: 0, turns into a nack) or records every record in it and
// answers 200.
type sink struct {
	t       *testing.T
	srv     *httptest.Server
	topic   string
	closing chan struct{} // closed when the test shuts the sink down

	minDelay, maxDelay time.Duration
	// fail decides whether to fail a request; it is called under mu.
	fail func(recs []rec) bool
	// hold decides whether to hold a request before its delay until
	// releaseHeld (or the sink's shutdown): a slow batch, whose ack comes
	// while later batches of its partition are acknowledged. It is called
	// under mu. Once released, every request passes at once.
	hold     func(recs []rec) bool
	holdGate chan struct{} // closed by releaseHeld
	holdOnce sync.Once

	mu         sync.Mutex
	counts     [][]uint16 // [partition][offset] successful deliveries
	prefixes   []int64    // per partition: first offset never delivered
	maxFirst   []int64    // per partition: highest first offset acked so far
	outOfOrder int        // requests acked after a later batch of the partition
	byInstance map[string]int64
	bad        []string
	rate       float64 // records per second across requests; 0 = unlimited
	next       time.Time

	total    atomic.Int64 // records acknowledged (with duplicates)
	requests atomic.Int64
	failed   atomic.Int64
	inflight atomic.Int64
	aborted  atomic.Int64 // requests cut off by a client that died
	held     atomic.Int64 // requests being held now
	heldRecs atomic.Int64 // records in the requests held so far
}

func newSink(t *testing.T, topic string, partitions int32, minDelay, maxDelay time.Duration) *sink {
	s := &sink{t: t, topic: topic, minDelay: minDelay, maxDelay: maxDelay, closing: make(chan struct{}), holdGate: make(chan struct{}),
		counts: make([][]uint16, partitions), prefixes: make([]int64, partitions),
		maxFirst: make([]int64, partitions), byInstance: map[string]int64{}}
	for i := range s.maxFirst {
		s.maxFirst[i] = -1
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(func() {
		close(s.closing) // ends the handlers' delays; Close waits for the handlers
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, b := range s.bad {
			if i == 10 {
				t.Errorf("sink: ... and %d more bad records", len(s.bad)-10)
				break
			}
			t.Errorf("sink: %s", b)
		}
	})
	return s
}

func (s *sink) url() string { return s.srv.URL + "/ingest" }

// setRate throttles the sink to about r records per second (0: no limit).
func (s *sink) setRate(r float64) {
	s.mu.Lock()
	s.rate = r
	s.mu.Unlock()
}

func (s *sink) handle(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.requests.Add(1)
	var recs []rec
	if err := json.NewDecoder(r.Body).Decode(&recs); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || r.Context().Err() != nil {
			// The client died mid-request (the crash test kills it): the
			// batch was never acknowledged, so nothing is recorded.
			s.aborted.Add(1)
			return
		}
		s.mu.Lock()
		s.bad = append(s.bad, fmt.Sprintf("undecodable request body: %v", err))
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !s.holdRequest(w, recs) {
		return
	}
	wait := s.minDelay
	if s.maxDelay > s.minDelay {
		wait += rand.N(s.maxDelay - s.minDelay)
	}
	s.mu.Lock()
	if s.rate > 0 {
		now := time.Now()
		start := s.next
		if start.Before(now) {
			start = now
		}
		s.next = start.Add(time.Duration(float64(len(recs)) / s.rate * float64(time.Second)))
		if d := start.Sub(now); d > wait {
			wait = d
		}
	}
	s.mu.Unlock()
	// The delay is the sink's behaviour under test (acknowledgements out of
	// order, a throttled rate), not a wait for anything. It does not end when
	// the client goes away: a request of a killed process still completes and
	// counts as delivered, as with a real sink. It ends at shutdown, without
	// recording the batch.
	delay := time.NewTimer(wait)
	defer delay.Stop()
	select {
	case <-delay.C:
	case <-s.closing:
		http.Error(w, "sink shutting down", http.StatusServiceUnavailable)
		return
	}

	s.mu.Lock()
	if s.fail != nil && s.fail(recs) {
		s.mu.Unlock()
		s.failed.Add(1)
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	s.record(recs, r.Header.Get("X-Instance"))
	s.mu.Unlock()
	s.total.Add(int64(len(recs)))
	w.WriteHeader(http.StatusOK)
}

// holdRequest holds the request while hold asks for it and releaseHeld was
// not called yet. It returns false when the sink shut down meanwhile (the
// request was answered 503 and nothing is recorded).
func (s *sink) holdRequest(w http.ResponseWriter, recs []rec) bool {
	s.mu.Lock()
	hold := s.hold != nil && s.hold(recs)
	s.mu.Unlock()
	if !hold {
		return true
	}
	s.held.Add(1)
	s.heldRecs.Add(int64(len(recs)))
	defer s.held.Add(-1)
	select {
	case <-s.holdGate:
		return true
	case <-s.closing:
		http.Error(w, "sink shutting down", http.StatusServiceUnavailable)
		return false
	}
}

// releaseHeld lets every held request, and every later one, go on; it is
// idempotent.
func (s *sink) releaseHeld() { s.holdOnce.Do(func() { close(s.holdGate) }) }

// waitHeld waits until n requests are being held at once.
func (s *sink) waitHeld(t *testing.T, n int64, timeout time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, s.held.Load(), n, "requests held")
	}, timeout, 50*time.Millisecond, "the sink to hold %d requests within %v", n, timeout)
}

// missing returns the first offset in [from, to) of partition p that was
// never delivered, or -1 when all were: a delivered range a commit claims
// must pass this.
func (s *sink) missing(p int32, from, to int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p < 0 || int(p) >= len(s.counts) {
		return from
	}
	if from < s.prefixes[p] {
		from = s.prefixes[p]
	}
	c := s.counts[p]
	for o := from; o < to; o++ {
		if o >= int64(len(c)) || c[o] == 0 {
			return o
		}
	}
	return -1
}

// record notes a successful delivery; mu is held.
func (s *sink) record(recs []rec, instance string) {
	if len(recs) == 0 {
		return
	}
	s.byInstance[instance] += int64(len(recs))
	p0, first := recs[0].P, recs[0].O
	for _, r := range recs {
		if r.T != s.topic || r.P < 0 || int(r.P) >= len(s.counts) || r.O < 0 {
			s.bad = append(s.bad, fmt.Sprintf("record from an unexpected place: %+v", r))
			continue
		}
		if want := value(r.P, r.O); r.V != want {
			s.bad = append(s.bad, fmt.Sprintf("record %d/%d has value %q, want %q", r.P, r.O, r.V, want))
		}
		if r.P != p0 {
			s.bad = append(s.bad, fmt.Sprintf("one batch holds partitions %d and %d", p0, r.P))
		}
		c := s.counts[r.P]
		for int64(len(c)) <= r.O {
			c = append(c, make([]uint16, max(len(c), 1024))...)
		}
		c[r.O]++
		s.counts[r.P] = c
	}
	if first < s.maxFirst[p0] {
		s.outOfOrder++
	} else {
		s.maxFirst[p0] = first
	}
	c := s.counts[p0]
	for s.prefixes[p0] < int64(len(c)) && c[s.prefixes[p0]] > 0 {
		s.prefixes[p0]++
	}
}

// prefix returns the first offset of partition p never delivered.
func (s *sink) prefix(p int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(p) >= len(s.prefixes) {
		return 0
	}
	return s.prefixes[p]
}

// snapshot is a copy of the delivery counts, to tell runs apart.
type snapshot [][]uint16

func (s *sink) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(snapshot, len(s.counts))
	for p, c := range s.counts {
		out[p] = append([]uint16(nil), c...)
	}
	return out
}

// count returns how often offset o of partition p was delivered.
func (sn snapshot) count(p int32, o int64) int {
	if int(p) >= len(sn) || o >= int64(len(sn[p])) {
		return 0
	}
	return int(sn[p][o])
}

// since returns, per partition, the offsets delivered after old was taken
// (with how often).
func (sn snapshot) since(old snapshot) map[int32]map[int64]int {
	out := map[int32]map[int64]int{}
	for p, c := range sn {
		for o, n := range c {
			if d := int(n) - old.count(int32(p), int64(o)); d > 0 {
				if out[int32(p)] == nil {
					out[int32(p)] = map[int64]int{}
				}
				out[int32(p)][int64(o)] = d
			}
		}
	}
	return out
}

// coverage checks that every offset in [0, end) of every partition was
// delivered and nothing at or past end was; it returns the number of
// duplicate deliveries (deliveries beyond the first).
func (sn snapshot) coverage(t *testing.T, end map[int32]int64) (dups int64) {
	t.Helper()
	var missing int64
	for p := int32(0); int(p) < len(sn); p++ {
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
		for o := end[p]; o < int64(len(sn[p])); o++ {
			if sn[p][o] > 0 {
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
		assert.GreaterOrEqual(c, s.total.Load(), n, "records acknowledged")
	}, timeout, 50*time.Millisecond, "the sink to acknowledge %d records within %v", n, timeout)
}

// waitIdle waits until no request is being handled.
func (s *sink) waitIdle(t *testing.T, timeout time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Zero(c, s.inflight.Load(), "requests in flight")
	}, timeout, 50*time.Millisecond, "the sink to finish its requests within %v", timeout)
}

func (s *sink) instanceCount(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byInstance[name]
}

func (s *sink) stats() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d requests (%d failed on purpose), %d records acknowledged, %d batches acknowledged after a later batch of their partition, by instance %v",
		s.requests.Load(), s.failed.Load(), s.total.Load(), s.outOfOrder, s.byInstance)
}
