package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// sinkMode is how the sink treats requests right now.
type sinkMode struct {
	kind     string // normal | reverse | slow | fail
	failPart int32  // fail: the partition whose batches fail
	rate     float64
}

// sink is the HTTP endpoint every member's http_client output posts its
// batches to (one JSON array per batch): a testkit.Sink, which records
// every record of a request before answering 200, so that at any moment a
// record that any member could have seen acknowledged is in its ledger,
// with its time. Each request waits up to 8ms, so batches are acknowledged
// out of order. On top of it, this layer plays the harness's sink faults:
// modes (reverse, slow, fail) and the lie of --self-check.
type sink struct {
	*testkit.Sink
	closing chan struct{} // closed by close: ends the reverser

	modeMu sync.Mutex // guards mode and stack
	mode   sinkMode
	// reverse: the requests held, released in reverse order of arrival.
	stack []chan struct{}

	// lie, when set, makes the sink answer 200 to one batch without
	// recording it (--self-check): the checker must then find the loss.
	lie  atomic.Bool
	lied atomic.Pointer[string]

	// refusals records every offset the sink refused (or judged after the
	// member's timeout) and holds the poison slots (poison.go).
	refusals *refusals

	// reqs records every request judged, for the key check (keyorder.go);
	// nil in a run that checks no keys. Set once by newSink.
	reqs *requestLog
}

// newSink starts the sink; logRequests keeps every request's records and
// times for the key check.
func newSink(topic string, partitions int, logRequests bool, logf func(string, ...any)) (*sink, error) {
	s := &sink{closing: make(chan struct{}), mode: sinkMode{kind: "normal"}, refusals: newRefusals(logf)}
	if logRequests {
		s.reqs = &requestLog{}
	}
	ts, err := testkit.NewSink(testkit.SinkOptions{Topic: topic, Partitions: partitions, MaxDelay: 8 * time.Millisecond,
		Hold: s.holdReverse, Judge: s.judge})
	if err != nil {
		return nil, err
	}
	s.Sink = ts
	go s.reverser()
	return s, nil
}

func (s *sink) url() string { return s.URL() }

// setMode switches the sink's behaviour; leaving reverse releases what it
// holds.
func (s *sink) setMode(m sinkMode) {
	s.modeMu.Lock()
	s.mode = m
	var held []chan struct{}
	if m.kind != "reverse" {
		held, s.stack = s.stack, nil
	}
	s.modeMu.Unlock()
	if m.kind == "slow" {
		s.SetRate(m.rate)
	} else {
		s.SetRate(0)
	}
	for i := len(held) - 1; i >= 0; i-- {
		close(held[i])
	}
}

func (s *sink) currentMode() sinkMode {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	return s.mode
}

// holdReverse is the sink's Hold: in reverse mode it stacks the request
// until the reverser (or a change of mode) lets it go.
func (s *sink) holdReverse(ctx context.Context, _ testkit.Batch) testkit.Answer {
	s.modeMu.Lock()
	if s.mode.kind != "reverse" {
		s.modeMu.Unlock()
		return testkit.Accept
	}
	gate := make(chan struct{})
	s.stack = append(s.stack, gate)
	s.modeMu.Unlock()
	select {
	case <-gate:
		return testkit.Accept
	case <-ctx.Done():
		return testkit.Unavailable
	}
}

// judge is the sink's Judge: a batch holding a poison record fails, fail
// mode fails one partition's batches, and the self-check's lie acknowledges
// one batch without recording it. Every verdict is recorded (refusals,
// and for the key check reqs).
func (s *sink) judge(b testkit.Batch) testkit.Answer {
	a := s.decide(b)
	now := time.Now()
	s.refusals.verdict(b, a, now)
	if s.reqs != nil {
		s.reqs.note(b, a, now)
	}
	return a
}

func (s *sink) decide(b testkit.Batch) testkit.Answer {
	if s.refusals.judge(b) {
		return testkit.Fail
	}
	if m := s.currentMode(); m.kind == "fail" && b.Records[0].P == m.failPart {
		return testkit.Fail
	}
	if s.lie.CompareAndSwap(true, false) {
		recs := b.Records
		what := fmt.Sprintf("%d/%d-%d", recs[0].P, recs[0].O, recs[len(recs)-1].O)
		s.lied.Store(&what)
		return testkit.AckUnrecorded
	}
	return testkit.Accept
}

// reverser releases the held requests every 300ms, the last arrived first.
func (s *sink) reverser() {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		s.modeMu.Lock()
		held := s.stack
		s.stack = nil
		s.modeMu.Unlock()
		for i := len(held) - 1; i >= 0; i-- {
			close(held[i])
			time.Sleep(time.Millisecond)
		}
	}
}

func (s *sink) close() {
	close(s.closing)
	s.Close()
}

func (s *sink) instanceCount(name string) (n int64) {
	s.View(func(l *testkit.Ledger) { n = l.ByInstance[name] })
	return n
}

// outOfOrder is the number of batches recorded after a later batch of
// their partition.
func (s *sink) outOfOrder() (n int64) {
	s.View(func(l *testkit.Ledger) { n = l.OutOfOrder })
	return n
}

// receivedIn reports, for partition p, which offsets of [from, to) the sink
// has received: the count of those received and the offsets not received.
func (s *sink) receivedIn(p int32, from, to int64) (received int64, missing []int64) {
	s.View(func(l *testkit.Ledger) { received, missing = l.ReceivedIn(p, from, to) })
	return received, missing
}

// lastReceived is one past the highest offset of partition p the sink has
// received (0 when none).
func (s *sink) lastReceived(p int32) (end int64) {
	s.View(func(l *testkit.Ledger) { end = l.End(p) })
	return end
}
