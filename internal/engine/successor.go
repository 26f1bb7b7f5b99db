package engine

import (
	"math"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// An epoch ends in a successor, a new epoch of the same partition on this
// member, for two causes today: a replay in place (replay.go: the head
// failed for good, the partition is read again from its watermark) and a
// truncation (truncate.go: an unclean election rewrote the log, the
// partition goes on from where the logs diverged). Both go through succeed,
// the one place that decides what an epoch hands its successor; a cause
// only says where the successor starts and how much of the old log the new
// one still holds, then does its own reporting. A third cause calls succeed
// too, and gets every rule below without restating one. (The copies this
// replaces drifted: the replay dropped the reports from the expiry walk,
// the truncation dropped the attempts, and only the replay drained under
// key order; issue 28, defects 4, 6 and 7.)
//
// What survives, for records the new log still holds (below holdsTo):
//
//   - the attempts of the records not delivered (attempts.go), and the
//     error class and first failure they came with;
//   - the delivered ranges above the base, skipped as the successor
//     fetches them (resume.go);
//   - the stall the old epoch inherited at the base (stallInfo) and the
//     replays in a row at it (replay.go);
//
// and, whatever the new log holds:
//
//   - the loss and dead-letter reports, listed for expiry (lists.losses),
//     so that they leave the commits after lost_records_report_for and
//     dead_letter.report_for as they would have in the old epoch;
//   - the truncation the old epoch followed (loss.truncatedAt), so that
//     kgo's late report of it is not taken for a second one;
//   - what the group holds (the last commit: one commit may go back, to
//     the base, when the base is below it), the log end, the retention,
//     the watermark's age and the gauges shown.
//
// Under ordering: key the old epoch's hand-outs drain first (drainThen):
// the successor hands out a key's records again from the base, and one of
// them must not reach the sink while an older record of its key is still
// in the pipeline. The key holds of the old epoch end with it: the
// successor holds its keys anew, in offset order, from the base. A drain
// that drain_timeout ends leaves what is still out to the sink, as a
// revoke's does.

// succession is how an epoch ends in its successor: where the successor
// starts, and what of the old epoch's log the new log still holds.
type succession struct {
	// base is where the successor starts, as a position: the old epoch's
	// commit base, or below it the point where the logs diverged;
	// leaderEpoch goes with it (of the record before it, as kgo validates
	// a position).
	base        int64
	leaderEpoch int32
	// holdsTo is the first offset the new log does not hold as the old
	// epoch saw it: a truncation's divergence point, noTruncation for a
	// replay in place (the log is the same).
	holdsTo int64
	// truncatedFrom is, for a truncation, the newest leader epoch of the
	// log it replaced (lossPart.sameTruncation).
	truncatedFrom int32
	// fromCommit, for an aborted transaction (txn.go), makes the
	// successor skip delivered (whose last record has leader epoch
	// deliveredEpoch), the ranges of the last commit, instead of what the
	// old epoch knew delivered: what it delivered since was in the
	// transaction that aborted.
	fromCommit     bool
	delivered      []commitmeta.Range
	deliveredEpoch int32
}

// noPollWindow is the poll number of a succession made outside a poll
// window: polls are numbered from 1 (poller).
const noPollWindow uint64 = 0

// noTruncation is the holdsTo of a succession whose new log holds every
// record of the old one.
const noTruncation = math.MaxInt64

// succeed ends old's epoch and puts its successor in its place, carrying
// exactly what survives s (see above). The successor takes no record until
// its cause says from which poll it does (rewindNow, rewindLater, or
// the fetch in hand). Called on the owner goroutine, with old live.
func (o *owner) succeed(old *partState, s succession) *partState {
	np := o.newEpoch(old.tp, old.led.lastMoved)
	np.commits.inheritFrom(old.commits)
	if old.commits.hasCommitted && s.base < old.commits.committed {
		// The one commit that goes back: to where the logs diverged.
		np.commits.hasCommitted, np.commits.committedMeta = false, ""
	}
	np.resume.startAt(s.base, s.leaderEpoch)
	np.queue.setLogEnd(old.queue.logEnd())
	np.loss.follow(&old.loss, s.base, s.holdsTo, s.truncatedFrom)

	// Delivered ranges and attempts, of the records the new log holds.
	base, _ := old.commitBase()
	switch {
	case s.fromCommit:
		if len(s.delivered) > 0 {
			np.resume.inherit(s.delivered, s.deliveredEpoch)
		}
	default:
		if ranges := cutRanges(old.knownDelivered(base), s.holdsTo); len(ranges) > 0 {
			np.resume.inherit(ranges, old.leaderEpochOf(ranges[len(ranges)-1].To-1))
		}
	}
	stalled, _, hasStalled := old.stallInfo()
	np.att.follow(&old.att, cutAttempts(old.attemptRanges(base), s.base, s.holdsTo), s.base, s.holdsTo, stalled, hasStalled)
	np.replay.state = old.replay.state

	// Reports, listed for expiry.
	if np.loss.reporting() || np.att.reporting() {
		o.lists.losses.add(np)
	}

	np.shown = old.shown
	o.endEpoch(old)
	o.parts[np.tp] = np
	o.markDirty(np)
	o.lists.gauges.add(np)
	return np
}

// cutRanges returns the part of ranges (sorted, disjoint) below to.
func cutRanges(ranges []commitmeta.Range, to int64) []commitmeta.Range {
	var out []commitmeta.Range
	for _, r := range ranges {
		if r.From >= to {
			break
		}
		out = append(out, commitmeta.Range{From: r.From, To: min(r.To, to)})
	}
	return out
}

// cutAttempts returns the part of as (sorted, disjoint, each at or above
// the old epoch's base) in [from, to): a successor's attempts start at its
// base, as every commit's do.
func cutAttempts(as []commitmeta.Attempts, from, to int64) []commitmeta.Attempts {
	var out []commitmeta.Attempts
	for _, r := range as {
		r.From, r.To = max(r.From, from), min(r.To, to)
		if r.From < r.To {
			out = append(out, r)
		}
	}
	return out
}

// drainThen ends old in the successor that next makes, once old's
// hand-outs have left the pipeline or drain_timeout passed: no more
// hand-outs of old meanwhile, and the acknowledgements that come still
// count. next runs at once when nothing is in the pipeline. A revoke or a
// loss meanwhile cancels it (cancelSuccession): the next owner goes on.
func (o *owner) drainThen(old *partState, next func(old *partState)) {
	o.beginDrain(old)
	o.startDrain(&drain{parts: []*partState{old}, next: next}, o.conf.DrainTimeout)
}

// cancelSuccession drops the drain before p's successor, if one is under
// way, because p is revoked or lost: the revoke's own drain (or the loss)
// ends p's epoch, and the succession must not end it first and put a new,
// live epoch in its place, which the revoke would never end: it would go
// on committing, and rewinding, a partition this member no longer owns.
func (o *owner) cancelSuccession(p *partState) {
	for i, d := range o.drains {
		if d.next != nil && d.parts[0] == p {
			d.timer.Stop()
			o.drains = append(o.drains[:i], o.drains[i+1:]...)
			return
		}
	}
}

// rewindNow moves np's fetch position to its base in this poll window (seq
// is the poll being handled, in onPoll); np takes records from the polls
// after it.
func (o *owner) rewindNow(np *partState, seq uint64) {
	np.replay.rewindTo = np.resume.rewindPoint()
	o.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{np.tp.topic: {np.tp.partition: np.replay.rewindTo}})
	np.replay.minPoll = seq + 1
}

// rewindLater queues np for the next poll window, where applyRewinds moves
// its fetch position to its base; np takes no record until then. For a
// successor made outside a poll window (a drain's end).
func (o *owner) rewindLater(np *partState) {
	np.replay.minPoll = noPoll
	np.replay.rewindTo = np.resume.rewindPoint()
	o.polls.rewinds = append(o.polls.rewinds, np)
	o.polls.wakePoll()
}
