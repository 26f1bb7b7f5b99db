package main

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// sink is the replay benchmark's HTTP output target. The pipeline renders
// each batch as one JSON array of {"p": partition, "o": offset} and POSTs it.
// While holding, the sink holds each partition's first batch (the one at
// offset 0) until release, then answers it 503 and records nothing: a slow
// head that never completes in run 1. Every other request waits its turn
// under a records-per-second throttle (none when rate is 0), is recorded as
// delivered and answered 200, even when the client died meanwhile: a write
// that a real sink completed is delivered.
type sink struct {
	srv  *http.Server
	addr string

	mu      sync.Mutex // guards every field below
	holding bool
	release chan struct{} // closed by releaseHeld
	rate    float64       // records per second; 0: no limit
	next    time.Time     // when the throttle lets the next request go
	run     map[offsetKey]int

	held     atomic.Int32 // requests being held now
	inflight atomic.Int32
	total    atomic.Int64 // records delivered in the current run
}

type offsetKey struct {
	p int32
	o int64
}

func newSink() (*sink, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &sink{addr: addr, release: make(chan struct{}), run: map[offsetKey]int{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *sink) close() { _ = s.srv.Close() }

func (s *sink) url() string { return "http://" + s.addr + "/ingest" }

// startRun begins a run: it returns what the previous one delivered and
// sets the sink's behaviour for the next.
func (s *sink) startRun(holding bool, rate float64) map[offsetKey]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.run
	s.run, s.holding, s.rate, s.next = map[offsetKey]int{}, holding, rate, time.Time{}
	s.release = make(chan struct{})
	s.total.Store(0)
	return prev
}

func (s *sink) releaseHeld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// waitIdle waits until no request is in progress, up to timeout.
func (s *sink) waitIdle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (s *sink) handle(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	var recs []struct {
		P int32 `json:"p"`
		O int64 `json:"o"`
	}
	if err := json.NewDecoder(r.Body).Decode(&recs); err != nil {
		// A client that died mid-request: nothing was delivered.
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(recs) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	s.mu.Lock()
	hold, release := s.holding && recs[0].O == 0, s.release
	var wait time.Duration
	if !hold && s.rate > 0 {
		now := time.Now()
		start := s.next
		if start.Before(now) {
			start = now
		}
		s.next = start.Add(time.Duration(float64(len(recs)) / s.rate * float64(time.Second)))
		wait = start.Sub(now)
	}
	s.mu.Unlock()
	if hold {
		s.held.Add(1)
		<-release
		s.held.Add(-1)
		http.Error(w, "the slow head never completes", http.StatusServiceUnavailable)
		return
	}
	time.Sleep(wait)
	s.mu.Lock()
	for _, rc := range recs {
		s.run[offsetKey{rc.P, rc.O}]++
	}
	s.mu.Unlock()
	s.total.Add(int64(len(recs)))
	w.WriteHeader(http.StatusOK)
}
