package engine

import (
	"os"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// A partition is stalled while the batch at its watermark has been nacked and
// is not yet delivered, whether it waits for an in-process retry or has
// failed for good; it stalled at that batch's first nack. A stall shows in
// kafka_watermark_stalled, in the log, and in every commit of the partition
// (the stall provenance in its metadata), so it can be seen from the broker
// alone.
//
// A head batch that failed for good (its retries spent) is replayed in place
// after stall_replay_after: the partition's epoch ends and it is read again
// from its watermark, in this process, without a rebalance. The steps:
//
//  1. beginReplay drains the partition as a revoke does: no more hand-outs,
//     and up to drain_timeout for the batches still in the pipeline, so
//     their acknowledgements still count.
//  2. rewind ends the epoch (later acks are late) in its successor
//     (succeed, successor.go), which skips what the old one delivered above
//     the watermark (its delivered ranges, as if read from a commit) and
//     carries its attempts and reports, and queues the new epoch for a
//     rewind. The new epoch takes no record yet.
//  3. In the next poll window (applyRewinds, from onPoll), kgo's SetOffsets
//     moves the fetch position back to the watermark, and the new epoch
//     takes records only from polls that start after it: a fetch from before
//     the rewind never enters the new epoch.
//
// Consecutive replays stalled at the same offset back off: the wait doubles
// each time, up to maxReplayBackoff times stall_replay_after; a replay that
// gets past the offset resets it.

// stallInfo returns p's stall, if p is stalled: the batch at its watermark
// was nacked and is not delivered, in this epoch or, for a partition that
// replays in place, in the epoch before, or, for an epoch that started from
// a commit that carried a stall at its offset, in an earlier process (until
// the batch is delivered, the partition shows the stall it replays or
// inherited, even before the batch is handed out again). b is the batch at the watermark, nil when it is not
// handed out yet. Attempts counts every delivery, replays included.
func (p *partState) stallInfo() (s commitmeta.Stall, b *Batch, ok bool) {
	if w, ok := p.led.head(); ok {
		if w.delivered {
			return s, nil, false
		}
		b = w.b
	}
	base, _ := p.commitBase()
	replayed := p.replay.state.count > 0 && p.replay.state.offset == base
	carriedStall, carried := p.att.stallAt(base)
	nacked := b != nil && !b.nackedAt.IsZero()
	if !nacked && !replayed && !carried {
		return s, nil, false
	}
	switch {
	case replayed:
		r := p.replay.state
		s = commitmeta.Stall{Report: commitmeta.Report{First: r.first, Last: r.last, Since: r.since, Reason: r.reason}, Attempts: r.attempts}
	case carried:
		// The stall of the commit this epoch started from (a restart, a
		// rebalance): its attempts are the batch's prior ones.
		s = carriedStall
	}
	if nacked {
		// Seen failing here: the whole provenance, even when the commit
		// carried only its mark.
		s.Last, s.Reason, s.MarkOnly = b.raw.last, b.lastErr, false
		// under key the base may lie inside the segment
		// (keyPart.stallFirst): a restart knows the stall by its offset
		s.First = p.dlv.stallFirst(b.raw.first, base)
		if b.deadLetterErr != "" {
			s.Reason = cutReason("dead_letter_write: " + b.deadLetterErr)
		}
		s.Attempts += b.attempt + 1
		if s.Since.IsZero() || b.nackedAt.Before(s.Since) {
			s.Since = b.nackedAt
		}
	}
	s.Attempts = max(s.Attempts, 1)
	return s, b, true
}

// stalled reports whether p is stalled (stallInfo).
func (p *partState) stalled() bool {
	_, _, ok := p.stallInfo()
	return ok
}

// stall returns p's stall provenance, if p is stalled.
func (o *owner) stall(p *partState) (commitmeta.Stall, bool) {
	s, _, ok := p.stallInfo()
	s.Member = o.commits.member
	return s, ok
}

// memberName is who writes a stall's provenance: the client ID and the host
// name, each cut to a fixed length.
func memberName(clientID string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	cut := func(s string, n int) string {
		if len(s) > n {
			return s[:n]
		}
		return s
	}
	return cut(clientID, 40) + "@" + cut(host, 40)
}

// checkStalls starts the replay of every partition whose head batch has
// failed for good long enough. Called on the gauge clock, it walks the
// stalled list only (a tracker's stall lasts as long as its epoch); the
// epochs that ended leave it, whether or not replays are enabled.
func (o *owner) checkStalls(now time.Time) {
	var due []*partState
	o.lists.failed.keep(func(p *partState) bool {
		if !p.live() {
			return false
		}
		if o.conf.StallReplayAfter <= 0 || o.closed || p.draining {
			return true
		}
		since, _ := p.led.failedSince()
		wait := o.conf.StallReplayAfter
		if base, _ := p.commitBase(); p.replay.state.count > 0 && p.replay.state.offset == base {
			wait <<= min(p.replay.state.count, maxReplayShift)
		}
		if now.Sub(since) >= wait {
			due = append(due, p)
		}
		return true
	})
	// After the walk: a replay's drain may end at once, in a rewind that
	// changes the owner's lists.
	for _, p := range due {
		o.beginReplay(p)
	}
}
