package engine

import (
	"time"
)

type topicPartition struct {
	topic     string
	partition int32
}

// partState is one assignment epoch of one partition. It is created when the
// partition is assigned and dropped on revoke or loss; its pointer is the
// epoch's identity, so an ack that carries a dropped partState is late and
// ignored.
//
// It is made of parts, each with its own invariant and the methods that keep
// it, in the file named beside it; code outside that file goes through
// those methods:
//
//   - ledger (ledger.go): what is registered, in sequence: the tracker, the
//     window of batches above the watermark, the leader epochs, and the
//     unresolved and retrying counters, kept in step by register, resolve
//     and advance.
//   - queue (queue.go): fetched batches not yet registered, and registered
//     ones waiting to be retried.
//   - resume (resume.go): the commit this epoch started from, and the
//     delivered ranges of its metadata that it skips.
//   - commits (commit.go): what the broker holds, the commit in flight and
//     the replay exposure.
//   - replay (replay.go): the rewind of a replay in place, and the stall
//     it replays.
//   - loss (loss.go): the offset it expects next, the loss its commits
//     carry, the topic's retention, the truncation it follows.
//   - att (attempts.go, deadletter.go): the attempts carried from before
//     it, the batches waiting for the gate, the dead-letter writes in
//     flight and the dead-letter report its commits carry.
//   - dlv (delivery.go): the ordering mode, which every difference between
//     ordering: none and ordering: key goes through; under key a keyPart
//     (keyed.go): the key scheduler, the done offsets above the watermark
//     and the hand-outs out.
//
// Owned by the owner goroutine: no other goroutine reads or writes it,
// except the immutable tp and labels.
type partState struct {
	// The fields every ack, hand-out and commit of a moved partition
	// touches come first, so that at thousands of partitions, each cold in
	// the cache, they span as few cache lines as can be.
	tp topicPartition
	// ended is set, once and for good, when this epoch leaves owner.parts
	// (endEpoch, the only place that removes one); a partState enters
	// owner.parts when it is made. So !ended is "o.parts[tp] == p" without
	// the map lookup, which every ack, hand-out and commit of a moved
	// partition asks.
	ended bool
	// dirty: a batch was delivered or the watermark moved since the last
	// commit was planned, so the next tick plans one (plan.go). A dirty
	// partition is on the owner's dirty list (markDirty).
	dirty bool
	// listed holds a bit for each owner list this epoch is on (partList).
	listed   listBits
	paused   bool // fetching paused at max_pending_batches
	queued   bool // in the owner's run queue
	draining bool // no more hand-outs: draining for a revoke or a close

	led     ledger
	queue   queue
	resume  resume
	commits commitState
	replay  replayPart
	loss    lossPart
	att     attemptPart
	// dlv is the ordering mode's part (delivery.go), chosen once, in
	// newEpoch: unordered, or under ordering: key a keyPart (keyed.go).
	dlv delivery

	// labels are the topic and partition labels of its metrics.
	labels [2]string
	// shown is what the gauges last showed for this epoch (gauges.go).
	shown gaugeValues
}

// newPartState returns a new epoch of tp, made at now.
func newPartState(tp topicPartition, now time.Time) *partState {
	return &partState{
		tp:      tp,
		led:     newLedger(now),
		queue:   newQueue(),
		resume:  resume{fetched: -1, fetchedLeaderEpoch: -1},
		commits: commitState{committing: -1, origin: -1},
		replay:  replayPart{firstAtMost: -1},
		loss:    lossPart{expect: -1, truncatedAt: -1, retentionMs: -1},
		labels:  labels(tp),
		shown:   unshown,
	}
}

// live reports whether p is its partition's current epoch in owner.parts.
func (p *partState) live() bool { return !p.ended }

const (
	listDirty  listBits = 1 << iota // a commit may be due (lists.dirty)
	listGauges                      // a gauge may show something else (lists.gauges)
	listFailed                      // the head failed for good (lists.failed)
	listPaused                      // fetching is paused (lists.paused)
	listLoss                        // commits carry a loss (lists.losses)
)

// canHandOut reports whether the next ReadBatch may take a batch of p.
// Retries are always allowed: they are registered already.
func (p *partState) canHandOut(maxPending int) bool {
	if p.draining {
		return false
	}
	return p.queue.retryLen() > 0 || p.dlv.canHandOut(p, maxPending)
}

// watermarkAge is how long the watermark has not moved while batches are
// pending or the partition is stalled (a replay in place has none pending
// before it reads again): zero for an idle partition, growing for a stuck
// one.
func (p *partState) watermarkAge(now time.Time) time.Duration {
	if p.led.pending() == 0 && !p.stalled() {
		return 0
	}
	return now.Sub(p.led.lastMoved)
}

// resumePoint is where this group would resume the partition now: the last
// commit, or before any commit of this epoch the group's commit at
// assignment, or the first offset fetched.
func (p *partState) resumePoint() (int64, bool) {
	if p.commits.hasCommitted {
		return p.commits.committed, true
	}
	if start, ok := p.resume.start(); ok {
		return start, true
	}
	return p.queue.first()
}

// commitBase is the offset a commit would carry now: the watermark, or,
// before the watermark ever moved, the offset this epoch started at; under
// key, past the records done at the head of the segment there
// (keyPart.commitBase, keyed_commit.go).
func (p *partState) commitBase() (int64, bool) {
	base, ok := p.segmentBase()
	if ok {
		base = p.dlv.commitBase(p, base)
	}
	return base, ok
}

// segmentBase is commitBase as the ledger sees it: the first offset of a
// batch (under key, of a segment) not yet delivered.
func (p *partState) segmentBase() (int64, bool) {
	if wm, ok := p.led.watermark(); ok {
		return wm, true
	}
	first, fetched := p.queue.first()
	if start, ok := p.resume.start(); ok && (!fetched || start <= first) {
		return start, true
	}
	return first, fetched
}
