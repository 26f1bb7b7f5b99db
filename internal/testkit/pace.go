package testkit

import (
	"sync"
	"time"
)

// Pacer spaces batches out so that records pass at about a set rate: each
// batch of n records takes n/rate seconds of a schedule, starting where the
// previous batch's slot ended or now, whichever is later, and waits for its
// slot to start. Time nobody used is not banked: after a pause the next
// batch goes at once, but the one after it waits its predecessor's share.
//
// The zero Pacer has no rate and lets everything through. A Pacer is safe
// for concurrent use.
type Pacer struct {
	mu   sync.Mutex // guards rate and next
	rate float64    // records per second; 0 or less: no limit
	next time.Time  // when the next slot starts; only moves forward under one rate
}

// SetRate sets the rate in records per second (0: no limit) and starts a
// new schedule: batches already waiting keep their turns, later ones are
// paced from now.
func (p *Pacer) SetRate(r float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.next = r, time.Time{}
}

// Rate returns the rate set, in records per second (0: no limit).
func (p *Pacer) Rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// Reserve takes the next slot for n records, at now, and returns how long
// the caller must wait before they may pass (0 without a rate).
func (p *Pacer) Reserve(n int, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate <= 0 {
		return 0
	}
	start := p.next
	if start.Before(now) {
		start = now
	}
	p.next = start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	return start.Sub(now)
}
