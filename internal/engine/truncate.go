package engine

import (
	"slices"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// truncate ends p's epoch after a fetch went back to offset at, below what
// p queued or started from, with leader epoch epoch, newer than any p saw:
// an unclean election truncated the log at that offset, and the records
// from there on are other records. What p delivered from there on is
// counted truncated; what it queued from there on and did not deliver is
// lost. The new epoch, p's successor (successor.go), goes on from the lower
// of p's watermark and at, skipping what p delivered below at, with the
// attempts of what it did not: it takes this very fetch when nothing below
// at is left undelivered, and is rewound to the watermark otherwise (in
// this poll window: onPoll runs in it). It returns the epoch that takes the
// fetch, or nil.
//
// Under ordering: key, while hand-outs of p are in the pipeline, p drains
// first (drainThen) and the successor is made, and rewound, when they are
// out: the new log's records of a key must not go out while an older
// record of that key is still out. The fetch is dropped (p is draining),
// and so are later ones until the rewind.
func (o *owner) truncate(p *partState, at int64, epoch int32, seq uint64) *partState {
	if p.dlv.drainsBeforeSuccessor() && p.inPipeline() > 0 {
		o.log.Debugf("kafka_watermark: %s/%d: truncated at offset %d: draining %d hand-out(s) before going on",
			p.tp.topic, p.tp.partition, at, p.inPipeline())
		o.drainThen(p, func(old *partState) {
			if old.live() {
				o.truncated(old, at, epoch, noPollWindow)
			}
		})
		return nil
	}
	return o.truncated(p, at, epoch, seq)
}

// truncated ends p's epoch in its successor after a truncation at at (see
// truncate), reports the truncation, and returns the successor when it
// takes the fetch of poll seq (noPollWindow: outside one).
func (o *owner) truncated(p *partState, at int64, epoch int32, seq uint64) *partState {
	wm, _ := p.commitBase()
	end := max(p.queue.queuedTo(), p.loss.expected(), wm)
	if a, ok := o.lost.accepted[p.tp]; ok {
		a.ranges = cutRanges(a.ranges, at)
		o.lost.accepted[p.tp] = a
	}
	// Delivered from the old log at or above at: below the watermark all
	// of it, above it the delivered ranges.
	var truncated int64
	if wm > at {
		truncated = wm - at
	}
	var lostRanges []commitmeta.Range
	ranges := p.deliveredRanges(wm)
	for _, r := range ranges {
		if r.To > at {
			truncated += r.To - max(r.From, at)
		}
	}
	if from := max(wm, at); end > from {
		lostRanges = commitmeta.SubtractRanges(commitmeta.Range{From: from, To: end}, ranges, o.lost.lossReported[p.tp])
	}
	// The leader epoch in force before base is the old log's, which the
	// new one holds unchanged below at; with none known, the new log's
	// epoch at at (a rewind below at) stands in.
	base := min(wm, at)
	leaderEpoch := p.leaderEpochBefore(base)
	if e, ok := p.resume.startLeaderEpoch(base); leaderEpoch < 0 && ok {
		leaderEpoch = e
	}
	if leaderEpoch < 0 {
		leaderEpoch = epoch
	}
	np := o.succeed(p, succession{base: base, leaderEpoch: leaderEpoch, holdsTo: at, truncatedFrom: p.knownLeaderEpoch()})

	if dl := p.loss.lastDataLoss(); dl != nil {
		o.log.Debugf("kafka_watermark: %s/%d: kgo reported the truncation: %v", np.tp.topic, np.tp.partition, dl)
	}
	if seen := o.lost.truncations[np.tp]; slices.Contains(seen, at) {
		// The same truncation, met again by a later epoch that started
		// from a commit made before it (the report was not committed):
		// reported once per process, like a loss.
		o.log.Debugf("kafka_watermark: %s/%d: the truncation at offset %d again", np.tp.topic, np.tp.partition, at)
		return o.goOnAfterTruncation(np, at, base, seq)
	}
	o.lost.truncations[np.tp] = append(o.lost.truncations[np.tp], at)
	o.m.truncatedRecords.Incr(truncated, np.labels[:]...)
	o.log.Errorf("kafka_watermark: log of %s/%d truncated at offset %d by an unclean leader election: %d delivered record offset(s) from %d to %d are no longer in the log and are delivered again from the new log (cause: truncation)",
		np.tp.topic, np.tp.partition, at, truncated, at, max(end, at+1)-1)
	o.log.Debugf("kafka_watermark: %s/%d: the new log has leader epoch %d at offset %d", np.tp.topic, np.tp.partition, epoch, at)
	// What was reported lost at or above at stays reported: an offset is
	// reported lost once the log start passed it, and a truncation never
	// reaches below the log start, so a report there was made after the
	// truncation, of the new log's records (it came before the truncation
	// was met, while p was stalled or paused, say). Forgetting it would
	// report those records again when the new epoch resumes below them.
	n := o.sayLost(np, lostRanges, at, causeTruncation)
	first, last := at, max(end, at+1)-1
	o.carryLoss(np, commitmeta.Loss{Report: commitmeta.Report{First: first, Last: last, Since: o.now(), Reason: causeTruncation}, Count: max(truncated+n, 1)})
	return o.goOnAfterTruncation(np, at, base, seq)
}

// goOnAfterTruncation returns np, the epoch a truncation at at made, when
// it takes the fetch of poll seq that showed the truncation (nothing below
// at is left undelivered: base is at), and otherwise rewinds it to base, in
// this poll window or, outside one (after a drain), in the next,
// and returns nil.
func (o *owner) goOnAfterTruncation(np *partState, at, base int64, seq uint64) *partState {
	switch {
	case seq == noPollWindow:
		o.rewindLater(np)
	case base == at:
		return np
	default:
		o.rewindNow(np, seq)
	}
	return nil
}
