package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// wire is one record as the members' mapping renders it.
type wire struct {
	T string `json:"t"`
	P int32  `json:"p"`
	O int64  `json:"o"`
	V string `json:"v"`
}

// entry is what the ledger knows of one offset of one partition.
type entry struct {
	count       uint32 // successful deliveries
	hash        uint32 // FNV-1a of the value first delivered
	firstArrive int64  // Unix ns: arrival of the request that first delivered it
	firstAck    int64  // Unix ns: when the sink first recorded it (before its 200)
	inst        uint16 // the member process that first delivered it (sink.instances)
}

// dupEvent is one delivery of a record the sink had already recorded.
type dupEvent struct {
	p    int32
	o    int64
	at   int64  // Unix ns, when recorded
	inst uint16 // the member process that delivered it again
}

// altDelivery is one delivery of an offset with another value than the
// sink first recorded there: corruption, unless an unclean election
// rewrote that offset (the checker decides).
type altDelivery struct {
	p    int32
	o    int64
	hash uint32
	at   int64  // Unix ns, when recorded
	inst uint16 // the member process that delivered it
}

// sinkMode is how the sink treats requests right now.
type sinkMode struct {
	kind     string // normal | reverse | slow | fail
	failPart int32  // fail: the partition whose batches fail
	rate     float64
}

// sink is the HTTP endpoint every member's http_client output posts its
// batches to (one JSON array per batch). It records every record of a
// request before answering 200: so, at any moment, a record that any member
// could have seen acknowledged is in the ledger with its time.
type sink struct {
	topic    string
	srv      *http.Server
	ln       net.Listener
	closing  chan struct{}
	maxDelay time.Duration

	modeMu sync.Mutex
	mode   sinkMode
	next   time.Time // slow: when the next request may pass
	// reverse: the requests held, released in reverse order of arrival.
	stack []chan struct{}

	mu         sync.Mutex
	parts      [][]entry
	dups       []dupEvent
	alts       []altDelivery
	bad        []string
	byInstance map[string]int64
	instances  map[string]uint16 // X-Instance -> index, from 1
	maxFirst   []int64
	outOfOrder int64

	// lie, when set, makes the sink answer 200 to one batch without
	// recording it (--self-check): the checker must then find the loss.
	lie      atomic.Bool
	lied     atomic.Pointer[string]
	requests atomic.Int64
	failed   atomic.Int64
	aborted  atomic.Int64
	inflight atomic.Int64
	records  atomic.Int64 // deliveries recorded, duplicates included
}

func newSink(topic string, partitions int) (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{topic: topic, ln: ln, closing: make(chan struct{}), maxDelay: 8 * time.Millisecond,
		mode: sinkMode{kind: "normal"}, parts: make([][]entry, partitions), byInstance: map[string]int64{},
		instances: map[string]uint16{}, maxFirst: make([]int64, partitions)}
	for i := range s.maxFirst {
		s.maxFirst[i] = -1
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	go s.reverser()
	return s, nil
}

func (s *sink) url() string { return "http://" + s.ln.Addr().String() + "/ingest" }

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
	for i := len(held) - 1; i >= 0; i-- {
		close(held[i])
	}
}

func (s *sink) currentMode() sinkMode {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	return s.mode
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

func (s *sink) handle(w http.ResponseWriter, r *http.Request) {
	arrive := time.Now().UnixNano()
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.requests.Add(1)
	var recs []wire
	if err := json.NewDecoder(r.Body).Decode(&recs); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || r.Context().Err() != nil {
			// A member died mid-request: never acknowledged, nothing recorded.
			s.aborted.Add(1)
			return
		}
		s.note("undecodable request body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(recs) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	m := s.currentMode()
	var wait time.Duration
	if s.maxDelay > 0 {
		wait = rand.N(s.maxDelay)
	}
	var gate chan struct{}
	switch m.kind {
	case "slow":
		s.modeMu.Lock()
		now := time.Now()
		start := s.next
		if start.Before(now) {
			start = now
		}
		s.next = start.Add(time.Duration(float64(len(recs)) / m.rate * float64(time.Second)))
		s.modeMu.Unlock()
		wait = max(wait, start.Sub(now))
	case "reverse":
		gate = make(chan struct{})
		s.modeMu.Lock()
		if s.mode.kind == "reverse" {
			s.stack = append(s.stack, gate)
		} else {
			close(gate)
		}
		s.modeMu.Unlock()
	}
	if gate != nil {
		select {
		case <-gate:
		case <-s.closing:
			http.Error(w, "sink shutting down", http.StatusServiceUnavailable)
			return
		}
	}
	// The delay does not end when the client goes away: a request of a
	// killed member still completes and counts as delivered, as with a real
	// sink.
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.closing:
		http.Error(w, "sink shutting down", http.StatusServiceUnavailable)
		return
	}
	if m.kind == "fail" && recs[0].P == m.failPart {
		s.failed.Add(1)
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	if s.lie.CompareAndSwap(true, false) {
		what := fmt.Sprintf("%d/%d-%d", recs[0].P, recs[0].O, recs[len(recs)-1].O)
		s.lied.Store(&what)
		w.WriteHeader(http.StatusOK)
		return
	}
	s.record(recs, r.Header.Get("X-Instance"), arrive)
	w.WriteHeader(http.StatusOK)
}

func (s *sink) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) < 1000 {
		s.bad = append(s.bad, fmt.Sprintf(format, args...))
	}
}

func hashValue(v string) uint32 {
	h := fnv.New32a()
	_, _ = io.WriteString(h, v)
	return h.Sum32()
}

// record notes one successful delivery of recs.
func (s *sink) record(recs []wire, instance string, arrive int64) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byInstance[instance] += int64(len(recs))
	inst, ok := s.instances[instance]
	if !ok {
		inst = uint16(len(s.instances) + 1)
		s.instances[instance] = inst
	}
	p0, first := recs[0].P, recs[0].O
	for _, r := range recs {
		if r.T != s.topic || r.P < 0 || int(r.P) >= len(s.parts) || r.O < 0 {
			if len(s.bad) < 1000 {
				s.bad = append(s.bad, fmt.Sprintf("record from an unexpected place: %+v", r))
			}
			continue
		}
		if r.P != p0 && len(s.bad) < 1000 {
			s.bad = append(s.bad, fmt.Sprintf("one batch holds partitions %d and %d", p0, r.P))
		}
		c := s.parts[r.P]
		for int64(len(c)) <= r.O {
			c = append(c, make([]entry, max(len(c), 4096))...)
		}
		s.parts[r.P] = c
		e := &c[r.O]
		h := hashValue(r.V)
		switch {
		case e.count == 0:
			e.hash, e.firstArrive, e.firstAck, e.inst = h, arrive, now, inst
		case e.hash == h:
			s.dups = append(s.dups, dupEvent{p: r.P, o: r.O, at: now, inst: inst})
		default:
			// Not a duplicate: another record at that offset.
			s.alts = append(s.alts, altDelivery{p: r.P, o: r.O, hash: h, at: now, inst: inst})
		}
		e.count++
	}
	s.records.Add(int64(len(recs)))
	if first < s.maxFirst[p0] {
		s.outOfOrder++
	} else {
		s.maxFirst[p0] = first
	}
}

func (s *sink) instanceCount(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byInstance[name]
}

// ledgerCopy returns a copy of the per-offset entries and the duplicate
// events, for the final accounting.
func (s *sink) ledgerCopy() ledgerData {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := ledgerData{parts: make([][]entry, len(s.parts)), dups: append([]dupEvent(nil), s.dups...), alts: append([]altDelivery(nil), s.alts...),
		bad: append([]string(nil), s.bad...), outOfOrder: s.outOfOrder, instances: map[string]uint16{}}
	for p, c := range s.parts {
		l.parts[p] = append([]entry(nil), c...)
	}
	for k, v := range s.instances {
		l.instances[k] = v
	}
	return l
}

// ledgerData is a copy of the sink's ledger.
type ledgerData struct {
	parts      [][]entry
	dups       []dupEvent
	alts       []altDelivery
	bad        []string
	outOfOrder int64
	instances  map[string]uint16
}

// receivedIn reports, for partition p, which offsets of [from, to) the sink
// has received: the count of those received and the offsets not received.
func (s *sink) receivedIn(p int32, from, to int64) (received int64, missing []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c []entry
	if int(p) < len(s.parts) {
		c = s.parts[p]
	}
	for o := max(from, 0); o < to; o++ {
		if o < int64(len(c)) && c[o].count > 0 {
			received++
			continue
		}
		missing = append(missing, o)
	}
	return received, missing
}

// lastReceived is one past the highest offset of partition p the sink has
// received (0 when none).
func (s *sink) lastReceived(p int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(p) >= len(s.parts) {
		return 0
	}
	c := s.parts[p]
	for o := int64(len(c)) - 1; o >= 0; o-- {
		if c[o].count > 0 {
			return o + 1
		}
	}
	return 0
}
