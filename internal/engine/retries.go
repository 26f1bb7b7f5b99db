package engine

import (
	"cmp"
	"slices"
	"time"
)

// retries holds the nacked batches waiting out their backoff, behind one
// timer. Owned by the owner goroutine (not safe for concurrent use): it
// schedules a batch in onAck and takes the due ones when its timer fires.
//
// Batches that fall due at one instant go out in one order, by partition
// then by batch sequence, whatever order the nacks came in: a timer per
// batch (time.AfterFunc) ran each send in its own goroutine, so two retries
// due together reached the owner in the scheduler's order, and the model
// test (owner_model_test.go) could not replay a seed step for step.
type retries struct {
	// waiting is sorted by retryBefore: the head is due first.
	waiting []retryAt
	// timer fires at waiting[0].due; nil until the first schedule, stopped
	// while waiting is empty.
	timer *time.Timer
}

// retryAt is one batch in backoff and when it is due.
type retryAt struct {
	due time.Time
	b   *Batch
}

// retryBefore orders retries by due time, then partition, then sequence.
func retryBefore(x, y retryAt) int {
	if c := x.due.Compare(y.due); c != 0 {
		return c
	}
	px, py := x.b.part.tp, y.b.part.tp
	if c := cmp.Compare(px.topic, py.topic); c != 0 {
		return c
	}
	if c := cmp.Compare(px.partition, py.partition); c != 0 {
		return c
	}
	return cmp.Compare(x.b.seq, y.b.seq)
}

// schedule puts b in backoff until due; now is the owner's clock.
func (r *retries) schedule(b *Batch, due, now time.Time) {
	e := retryAt{due, b}
	i, _ := slices.BinarySearchFunc(r.waiting, e, retryBefore)
	r.waiting = slices.Insert(r.waiting, i, e)
	if i == 0 {
		r.arm(now)
	}
}

// arm sets the timer to the head's due time.
func (r *retries) arm(now time.Time) {
	if len(r.waiting) == 0 {
		if r.timer != nil {
			r.timer.Stop()
		}
		return
	}
	wait := max(r.waiting[0].due.Sub(now), 0)
	if r.timer == nil {
		r.timer = time.NewTimer(wait)
		return
	}
	r.timer.Reset(wait)
}

// fired returns the timer's channel, nil while nothing waits (a nil
// channel blocks the owner's select case for ever).
func (r *retries) fired() <-chan time.Time {
	if r.timer == nil || len(r.waiting) == 0 {
		return nil
	}
	return r.timer.C
}

// takeDue removes and returns the batches due at now, in order, and arms
// the timer for the next.
func (r *retries) takeDue(now time.Time) []*Batch {
	n := 0
	for n < len(r.waiting) && !r.waiting[n].due.After(now) {
		n++
	}
	due := make([]*Batch, n)
	for i := range n {
		due[i] = r.waiting[i].b
	}
	r.waiting = slices.Delete(r.waiting, 0, n)
	r.arm(now)
	return due
}

// stop stops the timer; the owner is ending.
func (r *retries) stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
}
