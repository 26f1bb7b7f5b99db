package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Batch is one decoded request: a batch of the pipeline's output. The sink
// hands a Batch to its hooks and does not change it afterwards; hooks must
// not change it either, since the ledger records it after Judge.
type Batch struct {
	Records  []Record
	Instance string    // the request's X-Instance header: which process posted it
	Arrived  time.Time // when the request arrived, before its body was read
}

// Answer is what the sink does with a request, as a hook decides it (a
// plain value).
type Answer int

const (
	// Accept goes on: from Hold, to the delay; from Judge, to recording the
	// batch and answering 200.
	Accept Answer = iota
	// Fail answers 500 and records nothing: with retries: 0, http_client
	// turns it into a nack. Sink.Failed counts these.
	Fail
	// Unavailable answers 503 and records nothing.
	Unavailable
	// AckUnrecorded answers 200 without recording the batch: a sink that
	// lies, for a negative control that a checker must catch.
	AckUnrecorded
)

// SinkOptions shape a Sink. Each user keeps its own behaviour (holding
// requests, failing some, modes) in Hold and Judge; the sink keeps the HTTP
// handling, the decoding of the body, the ledger and the pacing. NewSink
// copies the options; the hooks are called from many goroutines at once
// (Hold) or one at a time (Judge), as each says.
type SinkOptions struct {
	// Addr is where to listen; "" is 127.0.0.1 on a port the kernel picks.
	Addr string
	// Topic, Partitions and Want are the ledger's (NewLedger).
	Topic      string
	Partitions int
	Want       func(p int32, o int64) string
	// Decode, when set, turns a request's body into its records, for an
	// output that does not post the JSON array of Records (the content of
	// one message, or of a batch's, one per line). Records it gives
	// NoPartition are counted (Records, ByInstance) but have no place in
	// the ledger. nil decodes the JSON array.
	Decode func(body []byte) ([]Record, error)
	// Each request waits a random delay in [MinDelay, MaxDelay) before it
	// is judged, so that with many requests in flight batches are
	// acknowledged out of order; with a rate set (SetRate), at least its
	// turn. The delay does not end when the client goes away: a request of
	// a killed process still completes and counts as delivered, as with a
	// real sink. It ends when the sink closes, with a 503 and nothing
	// recorded.
	MinDelay, MaxDelay time.Duration
	// Hold, when set, is called once the body is decoded, before the delay,
	// on the request's goroutine with no lock held. It may block, to hold
	// the request; ctx is done when the sink closes (not when the client
	// goes away). Accept goes on; any other Answer ends the request there.
	Hold func(ctx context.Context, b Batch) Answer
	// Judge, when set, is called once the delay is over, under the sink's
	// lock: one request at a time, and in one step with the recording of
	// the batch it accepts, so no View sees a verdict without its record.
	// It must not call the Sink's methods. nil accepts everything.
	Judge func(b Batch) Answer
}

// Sink is the HTTP endpoint a pipeline's http_client output posts its
// batches to (POST, a JSON array of Records per request). It records every
// record of a batch in its Ledger before answering 200, so at any moment a
// record that a pipeline could have seen acknowledged is in the ledger.
// A body that does not decode is answered 400 and noted as bad; one cut
// short by a client that died is counted as aborted and not answered.
//
// A Sink is safe for concurrent use.
type Sink struct {
	opts  SinkOptions
	ln    net.Listener
	srv   *http.Server
	ctx   context.Context // done once Close begins: ends delays and holds
	stop  context.CancelFunc
	once  sync.Once
	pacer Pacer

	// mu guards ledger, and makes Judge and the recording it allows one
	// step (SinkOptions.Judge).
	mu     sync.Mutex
	ledger *Ledger

	requests atomic.Int64 // requests received
	failed   atomic.Int64 // requests answered 500 on purpose (Fail)
	aborted  atomic.Int64 // requests cut short by a client that died
	inflight atomic.Int64 // requests being handled now
	records  atomic.Int64 // records recorded since the last Reset, duplicates included
}

// NewSink starts a sink; Close stops it.
func NewSink(o SinkOptions) (*Sink, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Sink{opts: o, ln: ln, ctx: ctx, stop: stop, ledger: NewLedger(o.Topic, o.Partitions, o.Want)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the host:port the sink listens on.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// URL is the address to give the pipeline's http_client.
func (s *Sink) URL() string { return "http://" + s.Addr() + "/ingest" }

// SetRate throttles the sink to about r records per second (0: no limit);
// see Pacer.
func (s *Sink) SetRate(r float64) { s.pacer.SetRate(r) }

// Close ends every delay and hold (their requests are answered 503 and
// recorded nothing), then shuts the server down, waiting up to 10 seconds
// for the handlers. The ledger stays readable. Close is idempotent.
func (s *Sink) Close() {
	s.once.Do(func() {
		s.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
	})
}

// View calls f with the live ledger under the sink's lock: keep f short,
// do not keep the ledger past it, and do not call the Sink from it.
func (s *Sink) View(f func(l *Ledger)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.ledger)
}

// Snapshot returns a copy of the ledger.
func (s *Sink) Snapshot() *Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledger.Clone()
}

// Reset returns the ledger so far and starts an empty one (Records starts
// again from 0): the next run of a benchmark counts on its own.
func (s *Sink) Reset() *Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.ledger
	s.ledger = NewLedger(s.opts.Topic, s.opts.Partitions, s.opts.Want)
	s.records.Store(0)
	return old
}

// Requests is the number of requests received.
func (s *Sink) Requests() int64 { return s.requests.Load() }

// Failed is the number of requests answered 500 on purpose.
func (s *Sink) Failed() int64 { return s.failed.Load() }

// Aborted is the number of requests cut short by a client that died.
func (s *Sink) Aborted() int64 { return s.aborted.Load() }

// InFlight is the number of requests being handled now.
func (s *Sink) InFlight() int64 { return s.inflight.Load() }

// Records is the number of records recorded since the sink started or was
// last Reset, duplicates included.
func (s *Sink) Records() int64 { return s.records.Load() }

// WaitIdle polls until no request is being handled, up to timeout; it
// reports whether that happened.
func (s *Sink) WaitIdle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (s *Sink) handle(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.requests.Add(1)
	recs, err := s.decode(r)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || r.Context().Err() != nil {
			// The client died mid-request (a test kills it): the batch was
			// never acknowledged, so nothing is recorded.
			s.aborted.Add(1)
			return
		}
		s.View(func(l *Ledger) { l.Note("undecodable request body: %v", err) })
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(recs) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	b := Batch{Records: recs, Instance: r.Header.Get("X-Instance"), Arrived: arrived}
	if s.opts.Hold != nil {
		if a := s.opts.Hold(s.ctx, b); a != Accept {
			s.answer(w, a)
			return
		}
	}
	wait := s.opts.MinDelay
	if s.opts.MaxDelay > s.opts.MinDelay {
		wait += rand.N(s.opts.MaxDelay - s.opts.MinDelay)
	}
	wait = max(wait, s.pacer.Reserve(len(recs), time.Now()))
	// The delay is the behaviour under test (acknowledgements out of order,
	// a throttled rate), not a wait for anything.
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.ctx.Done():
		s.answer(w, Unavailable)
		return
	}
	s.mu.Lock()
	a := Accept
	if s.opts.Judge != nil {
		a = s.opts.Judge(b)
	}
	if a == Accept {
		s.ledger.Record(b, time.Now().UnixNano())
		s.records.Add(int64(len(recs)))
	}
	s.mu.Unlock()
	s.answer(w, a)
}

// decode reads a request's records (SinkOptions.Decode).
func (s *Sink) decode(r *http.Request) ([]Record, error) {
	if s.opts.Decode == nil {
		var recs []Record
		err := json.NewDecoder(r.Body).Decode(&recs)
		return recs, err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	return s.opts.Decode(body)
}

// answer writes the HTTP answer a stands for.
func (s *Sink) answer(w http.ResponseWriter, a Answer) {
	switch a {
	case Accept, AckUnrecorded:
		w.WriteHeader(http.StatusOK)
	case Fail:
		s.failed.Add(1)
		http.Error(w, "injected failure", http.StatusInternalServerError)
	default:
		if s.ctx.Err() != nil {
			http.Error(w, "sink shutting down", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}
}
