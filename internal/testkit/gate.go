package testkit

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate holds requests until it is opened: a slow batch, whose
// acknowledgement comes only when the test says so while later batches of
// its partition pass. Once open it stays open: every request waiting, and
// every later one, passes at once.
//
// A Gate is safe for concurrent use.
type Gate struct {
	open    chan struct{} // closed by Open
	once    sync.Once
	waiting atomic.Int64 // requests held now
	held    atomic.Int64 // requests held so far
	records atomic.Int64 // records in the requests held so far
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{open: make(chan struct{})} }

// Wait holds a request of n records until the gate opens (true) or ctx is
// done (false). It returns at once when the gate is already open, and
// counts nothing then.
func (g *Gate) Wait(ctx context.Context, n int) bool {
	select {
	case <-g.open:
		return true
	default:
	}
	g.held.Add(1)
	g.records.Add(int64(n))
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.open:
		return true
	case <-ctx.Done():
		return false
	}
}

// Open lets every held request, and every later one, pass. It is
// idempotent.
func (g *Gate) Open() { g.once.Do(func() { close(g.open) }) }

// Waiting is the number of requests held now.
func (g *Gate) Waiting() int64 { return g.waiting.Load() }

// Held is the number of requests held so far, released ones included.
func (g *Gate) Held() int64 { return g.held.Load() }

// HeldRecords is the number of records in the requests held so far.
func (g *Gate) HeldRecords() int64 { return g.records.Load() }
