package tracker

import (
	"errors"
	"fmt"
	"time"
)

// Status is the resolution of a batch reported by the sink.
type Status uint8

const (
	// Delivered means the sink acknowledged every record of the batch.
	Delivered Status = iota + 1
	// Failed means the sink rejected the batch. A failed batch is never
	// committed past; it stalls the tracker once it reaches the head.
	Failed
)

// String returns the status name.
func (s Status) String() string {
	switch s {
	case Delivered:
		return "delivered"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ResolveOutcome says what Resolve did with a resolution.
type ResolveOutcome uint8

const (
	// Applied means the batch went from pending to the given status.
	Applied ResolveOutcome = iota + 1
	// Duplicate means the batch was already resolved; state is unchanged.
	Duplicate
	// AlreadyAdvanced means the sequence precedes the tracked window: the
	// batch was delivered and consumed by Advance, so this is a duplicate of a
	// consumed resolution. State is unchanged.
	AlreadyAdvanced
	// Unregistered means the sequence is ahead of every registration seen.
	// State is unchanged. A driver that registers every batch before handing
	// it out never sees it: the kafka_watermark input registers on its owner
	// goroutine before a batch leaves, so an ack cannot overtake its
	// registration. There an Unregistered outcome is a driver bug, which the
	// input logs as an internal error and drops; it does not retry.
	Unregistered
)

// String returns the outcome name.
func (o ResolveOutcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case AlreadyAdvanced:
		return "already-advanced"
	case Unregistered:
		return "unregistered"
	}
	return fmt.Sprintf("ResolveOutcome(%d)", uint8(o))
}

// pending is the zero state of a slot: registered, not yet resolved.
const pending Status = 0

// slot is one registered batch in the ring.
type slot struct {
	lastOffset int64
	status     Status
}

// defaultCapacity is the initial ring size. The ring doubles when full, so a
// tracker whose pending count is bounded by the driver stops allocating once
// it has seen its largest window.
const defaultCapacity = 64

// PartitionTracker tracks the batches of one partition between registration
// and the watermark.
//
// The zero value is an empty tracker ready to use and behaves exactly like
// one from New: it expects sequence 0 first, and its first Register allocates
// the default-capacity ring.
//
// It is not safe for concurrent use: one goroutine owns it.
type PartitionTracker struct {
	// ring holds the window [head, next) at index seq&mask. Its length is a
	// power of two and at least next-head; it is nil (and mask 0) until the
	// first Register of a zero-value tracker.
	ring []slot
	mask uint64

	// head is the sequence of the oldest batch not yet consumed by Advance.
	// It only increases, and never past a pending or failed batch.
	head uint64
	// next is the sequence the next Register must carry. head <= next.
	next uint64
	// last is the last offset of the most recent registration, whether or
	// not Advance has consumed it; valid once next > 0. Each registration
	// must exceed it.
	last int64

	// watermark is the last offset Advance returned; valid once head > 0
	// (a batch has been consumed). It strictly increases.
	watermark int64

	// stalled is set once the batch at head is seen failed; head never
	// moves again after that, so the stall is permanent.
	stalled      bool
	stalledSince time.Time
}

// New returns an empty tracker expecting sequence 0 first.
func New() *PartitionTracker {
	return NewWithCapacity(defaultCapacity)
}

// NewWithCapacity returns an empty tracker whose ring starts with room for n
// pending batches (rounded up to a power of two). Sizing it to the driver's
// pending limit avoids every growth allocation.
func NewWithCapacity(n int) *PartitionTracker {
	c := 1
	for c < n {
		c <<= 1
	}
	return &PartitionTracker{ring: make([]slot, c), mask: uint64(c - 1)}
}

// Register records batch seq, whose last record has offset lastOffset.
// Sequences start at 0 and must be contiguous; a gap is a driver bug and
// panics. Last offsets must strictly increase: lastOffset must exceed the last
// offset of the previous registration, even one Advance has already consumed
// (the first registration accepts any value). The watermark's monotonicity
// depends on it, so a decrease or a repeat is a driver bug too and panics the
// same way. A registration that panics leaves the tracker unchanged.
// Registering after a stall is legal: batches already in flight still arrive,
// they just never advance the watermark.
func (t *PartitionTracker) Register(seq uint64, lastOffset int64) {
	// len(t.ring) rather than t.mask+1, so that the nil ring of a zero
	// value reads as full and takes the slow path.
	if seq != t.next || seq-t.head >= uint64(len(t.ring)) || lastOffset <= t.last {
		t.registerSlow(seq, lastOffset)
	}
	t.ring[seq&t.mask] = slot{lastOffset: lastOffset}
	t.last = lastOffset
	t.next = seq + 1
}

// registerSlow panics on a sequence gap or a non-increasing last offset,
// accepts any last offset for the first registration, allocates the ring of a
// zero value and grows a full one. It and the other slow paths stay out of
// line so the common cases stay small.
//
//go:noinline
func (t *PartitionTracker) registerSlow(seq uint64, lastOffset int64) {
	if seq != t.next {
		panic(fmt.Sprintf("tracker: register out of sequence: expected seq %d, received %d", t.next, seq))
	}
	if t.next > 0 && lastOffset <= t.last {
		panic(fmt.Sprintf("tracker: register with non-increasing last offset: seq %d, previous last offset %d, received %d", seq, t.last, lastOffset))
	}
	switch {
	case t.ring == nil:
		t.ring, t.mask = make([]slot, defaultCapacity), defaultCapacity-1
	case seq-t.head >= uint64(len(t.ring)):
		t.grow()
	}
}

// grow doubles the ring, keeping each live slot at index seq&mask.
func (t *PartitionTracker) grow() {
	ring := make([]slot, 2*len(t.ring))
	mask := uint64(len(ring) - 1)
	for s := t.head; s < t.next; s++ {
		ring[s&mask] = t.ring[s&t.mask]
	}
	t.ring, t.mask = ring, mask
}

// Resolve records the sink's verdict on batch seq. Duplicates and unknown
// sequences are reported through the outcome and never change state.
// A status other than Delivered or Failed is a driver bug and panics.
func (t *PartitionTracker) Resolve(seq uint64, status Status) ResolveOutcome {
	if status-Delivered > Failed-Delivered {
		panic(errInvalidStatus)
	}
	// seq in [head, next) with one unsigned compare: below head wraps.
	if seq-t.head >= t.next-t.head {
		if seq < t.head {
			return AlreadyAdvanced
		}
		return Unregistered
	}
	s := &t.ring[seq&t.mask]
	if s.status != pending {
		return Duplicate
	}
	s.status = status
	return Applied
}

// errInvalidStatus is a value, not a formatted message, so that Resolve
// stays small enough to inline.
var errInvalidStatus = errors.New("tracker: resolve with a status other than Delivered or Failed")

// Advance consumes the contiguous prefix of delivered batches and returns the
// new committable offset (one past the last offset of that prefix). moved is
// false when the watermark did not change. When the prefix ends at a failed
// batch the tracker stalls for good; the offset up to the failure is still
// returned by this call.
func (t *PartitionTracker) Advance() (offset int64, moved bool) {
	ring, mask, h := t.ring, t.mask, t.head
	for h != t.next && ring[h&mask].status == Delivered {
		h++
	}
	if h != t.next && ring[h&mask].status == Failed {
		t.stall()
	}
	if h == t.head {
		return t.watermark, false
	}
	t.watermark = ring[(h-1)&mask].lastOffset + 1
	t.head = h
	return t.watermark, true
}

// stall records the moment a failed batch was first seen at the head. It is
// kept out of Advance so the hot loop stays small.
//
//go:noinline
func (t *PartitionTracker) stall() {
	if !t.stalled {
		t.stalled = true
		t.stalledSince = time.Now()
	}
}

// Watermark returns the last offset Advance returned, and false if the
// watermark has never moved.
func (t *PartitionTracker) Watermark() (int64, bool) {
	return t.watermark, t.head > 0
}

// NextSeq returns the sequence the next Register must carry.
func (t *PartitionTracker) NextSeq() uint64 { return t.next }

// Pending returns the number of batches registered but not yet consumed by
// Advance, including any behind a stall. The driver pauses fetching when it
// reaches its limit, which bounds both memory and replay.
func (t *PartitionTracker) Pending() int { return int(t.next - t.head) }

// Head returns the sequence of the oldest registered batch that Advance has
// not passed: the batch at the watermark when one is pending, NextSeq
// otherwise. It never decreases.
func (t *PartitionTracker) Head() uint64 { return t.head }

// Stalled reports whether a failed batch has reached the head.
func (t *PartitionTracker) Stalled() bool { return t.stalled }

// StalledSince returns when Advance first observed the stall.
func (t *PartitionTracker) StalledSince() (time.Time, bool) {
	return t.stalledSince, t.stalled
}

// StalledSeq returns the sequence of the failed batch that holds the
// watermark.
func (t *PartitionTracker) StalledSeq() (uint64, bool) {
	return t.head, t.stalled
}

// LastOffset returns the last offset registered for seq, if seq is still in
// the window. Drivers use it to name a stalled batch in logs.
func (t *PartitionTracker) LastOffset(seq uint64) (int64, bool) {
	if seq < t.head || seq >= t.next {
		return 0, false
	}
	return t.ring[seq&t.mask].lastOffset, true
}
