package engine

import (
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/tracker"
)

// ledger is what one epoch has registered, in registration order: the
// tracker, which decides the watermark; the window, which knows what the
// tracker need not (how many records a batch holds, whether it was
// delivered or skipped, its hand-out); the leader epochs of the records
// queued and pending; and the counts of the batches still without a final
// verdict.
//
// Invariants, kept by register, resolve and advance, the only writers of
// tracker and window:
//   - every batch the tracker holds pending is in the window at sequence
//     window.base+i, and the window holds nothing below the tracker's head;
//   - a window batch is delivered only after its Delivered verdict was
//     applied in the tracker (a skip batch is registered delivered);
//   - unresolved counts the batches registered with no verdict yet, and
//     retrying those of them waiting to go out again (in backoff, queued
//     for a retry, or given back by a cancelled read): unresolved-retrying
//     are in the pipeline, what a drain waits for;
//   - the leader-epoch log covers every offset from the watermark on.
//
// Attempts are per record range and live beside the ledger (attempts.go):
// a batch holds its hand-outs (Batch.attempt) and, from register, the
// attempts carried for its records from before the epoch (Batch.prior); a
// commit's attempts are read off the window's batches. A batch that is not
// a contiguous range of offsets (key-ordered delivery) changes the window's
// notion of a batch, not the ledger's API: register takes a batch, resolve
// a verdict, advance moves the watermark to the first offset not
// delivered; the tracker then orders what the window resolves.
//
// Owned by the owner goroutine, inside its partState.
type ledger struct {
	unresolved int
	retrying   int
	// lastMoved is when the watermark last moved.
	lastMoved time.Time
	window    window
	// tracker is held by value, and starts with a ring of one slot that
	// doubles when it is full: its size follows this epoch's largest
	// window of pending batches (a partition with light traffic keeps a
	// slot or two), never max_pending_batches up front, nor the 64 slots
	// (1 KiB) of a zero-value tracker.
	tracker tracker.PartitionTracker
	// epochs holds the leader epoch changes of the records queued and
	// pending, so a commit carries the leader epoch of the record before
	// its offset (KIP-320).
	leaderEpochs leaderEpochLog
}

// newLedger returns the empty ledger of an epoch made at now.
func newLedger(now time.Time) ledger {
	return ledger{tracker: *tracker.NewWithCapacity(1), lastMoved: now}
}

// register registers rb, the next batch of the epoch p, as handed out and
// returns it.
func (l *ledger) register(p *partState, rb rawBatch) *Batch {
	seq := l.tracker.NextSeq()
	l.tracker.Register(seq, rb.last)
	l.unresolved++
	b := &Batch{part: p, seq: seq, raw: rb}
	if p.att.hasCarried() {
		b.prior = p.att.priorAttempts(rb.first, rb.last)
	}
	l.window.add(seq, rb.last, len(rb.records), b)
	return b
}

// registerDelivered registers rb, a skip batch (delivered in an earlier
// epoch, or transaction markers), and resolves it delivered at once: the
// watermark passes it once everything below is delivered, and the ranges
// of the next commit still cover it. advance must follow.
func (l *ledger) registerDelivered(rb rawBatch) {
	seq := l.tracker.NextSeq()
	l.tracker.Register(seq, rb.last)
	l.tracker.Resolve(seq, tracker.Delivered)
	l.window.add(seq, rb.last, len(rb.records), nil)
}

// resolve applies the final verdict on b; advance must follow an Applied
// outcome.
func (l *ledger) resolve(b *Batch, delivered bool) tracker.ResolveOutcome {
	status := tracker.Failed
	if delivered {
		status = tracker.Delivered
	}
	out := l.tracker.Resolve(b.seq, status)
	if out == tracker.Applied {
		l.unresolved--
		if delivered {
			l.window.deliver(b.seq)
		}
	}
	return out
}

// advance moves the watermark over the delivered prefix and forgets what
// falls behind it: the window's batches and the leader epochs no offset at
// or above the watermark needs. It reports the watermark and whether it
// moved.
func (l *ledger) advance(now time.Time) (int64, bool) {
	wm, moved := l.tracker.Advance()
	if moved {
		l.lastMoved = now
		l.leaderEpochs.trim(wm - 1)
		l.window.trim(l.tracker.Head())
	}
	return wm, moved
}

// waitRetry counts a registered batch that leaves the pipeline to go out
// again later; retryOut counts it back in when it goes out.
func (l *ledger) waitRetry() { l.retrying++ }
func (l *ledger) retryOut()  { l.retrying-- }

// inPipeline is the number of batches handed out and not acknowledged:
// what a drain waits for.
func (l *ledger) inPipeline() int { return l.unresolved - l.retrying }

// pending is the number of registered batches not behind the watermark.
func (l *ledger) pending() int { return l.tracker.Pending() }

// watermark is the tracker's watermark, if it has one.
func (l *ledger) watermark() (int64, bool) { return l.tracker.Watermark() }

// headFailed reports whether the batch at the watermark failed for good
// (the tracker calls this "stalled"; in this package a partition is stalled
// as soon as its head batch is nacked: partState.stalled).
func (l *ledger) headFailed() bool { return l.tracker.Stalled() }

// failedSince is when the head batch was seen failed for good.
func (l *ledger) failedSince() (time.Time, bool) { return l.tracker.StalledSince() }

// failedThrough is the last offset of the batch at the watermark that
// failed for good.
func (l *ledger) failedThrough() (int64, bool) {
	seq, ok := l.tracker.StalledSeq()
	if !ok {
		return 0, false
	}
	return l.tracker.LastOffset(seq)
}

// head is the window's first batch, if any: the batch at the watermark.
func (l *ledger) head() (windowBatch, bool) {
	if len(l.window.batches) == 0 {
		return windowBatch{}, false
	}
	return l.window.batches[0], true
}

// frontier is one past the last offset registered, or from when nothing is.
func (l *ledger) frontier(from int64) int64 {
	if n := len(l.window.batches); n > 0 {
		return l.window.batches[n-1].last + 1
	}
	return from
}

// noteLeaderEpoch records the leader epoch of a record queued after every one
// noted before.
func (l *ledger) noteLeaderEpoch(offset int64, epoch int32) { l.leaderEpochs.note(offset, epoch) }

// leaderEpochAt is the leader epoch of the record at offset, or -1 when no noted
// record covers it.
func (l *ledger) leaderEpochAt(offset int64) int32 { return l.leaderEpochs.at(offset) }

// lastLeaderEpoch is the leader epoch of the last record queued, if any.
func (l *ledger) lastLeaderEpoch() (int32, bool) {
	if n := len(l.leaderEpochs.changes); n > 0 {
		return l.leaderEpochs.changes[n-1].epoch, true
	}
	return -1, false
}

// delivered returns the delivered ranges above the watermark (window.ranges);
// start is the offset the window's first batch begins at.
func (l *ledger) delivered(start int64) []commitmeta.Range { return l.window.ranges(start, nil) }

// exposure is the records a crash would deliver again if the ranges through
// keptTo were committed now (window.exposure).
func (l *ledger) exposure(keptTo int64) int64 { return l.window.exposure(keptTo) }
