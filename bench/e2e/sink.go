package main

import (
	"context"
	"sync"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// sink is the replay benchmark's HTTP output target: a testkit.Sink (the
// pipeline renders each batch as one JSON array of {"p": partition, "o":
// offset}) throttled to a records-per-second rate, plus a slow head. While
// holding, it holds each partition's first batch (the one at offset 0)
// until releaseHeld, then answers it 503 and records nothing: a slow head
// that never completes in run 1. Every other request waits its turn, is
// recorded as delivered and answered 200, even when the client died
// meanwhile: a write that a real sink completed is delivered.
type sink struct {
	*testkit.Sink

	mu      sync.Mutex    // guards holding and gate, which startRun replaces
	holding bool          // hold the heads in this run
	gate    *testkit.Gate // where the heads of this run wait
}

func newSink() (*sink, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &sink{gate: testkit.NewGate()}
	s.Sink, err = testkit.NewSink(testkit.SinkOptions{Addr: addr, Partitions: replayPartitions, Hold: s.hold})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// hold is the sink's Hold: the heads wait at the gate, then fail.
func (s *sink) hold(ctx context.Context, b testkit.Batch) testkit.Answer {
	s.mu.Lock()
	holding, gate := s.holding, s.gate
	s.mu.Unlock()
	if !holding || b.Records[0].O != 0 {
		return testkit.Accept
	}
	gate.Wait(ctx, len(b.Records))
	return testkit.Unavailable // the slow head never completes
}

// startRun begins a run: it returns what the previous one delivered and
// sets the sink's behaviour for the next (rate in records per second, 0: no
// limit).
func (s *sink) startRun(holding bool, rate float64) *testkit.Ledger {
	s.mu.Lock()
	s.holding, s.gate = holding, testkit.NewGate()
	s.mu.Unlock()
	s.SetRate(rate)
	return s.Reset()
}

// releaseHeld lets this run's heads go (to their 503).
func (s *sink) releaseHeld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate.Open()
}

// held is the number of heads held now.
func (s *sink) held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gate.Waiting()
}

// waitIdle waits until no request is in progress, up to timeout.
func (s *sink) waitIdle(timeout time.Duration) bool { return s.WaitIdle(timeout) }
