package engine

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// truncate ends p's epoch after a fetch went back to offset at, below what
// p queued or started from, with leader epoch epoch, newer than any p saw:
// an unclean election truncated the log at that offset, and the records
// from there on are other records. What p delivered from there on is
// counted truncated; what it queued from there on and did not deliver is
// lost. The new epoch goes on from the lower of p's watermark and at,
// skipping what p delivered below at: it takes this very fetch when
// nothing below at is left undelivered, and is rewound to the watermark
// otherwise (in this poll window: onPoll runs in it).
func (o *owner) truncate(p *partState, at int64, epoch int32, seq uint64) *partState {
	wm, _ := p.commitBase()
	end := max(p.queue.lastQueued+1, p.loss.expect, wm)
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
		lostRanges = subtractRanges(commitmeta.Range{From: from, To: end}, ranges, o.lost.lossReported[p.tp])
	}
	var kept []commitmeta.Range
	for _, r := range ranges {
		if r.From >= at {
			break
		}
		kept = append(kept, commitmeta.Range{From: r.From, To: min(r.To, at)})
	}
	base := min(wm, at)
	np := o.newEpoch(p.tp, p.led.lastMoved)
	np.commits.inheritFrom(p.commits)
	if p.commits.hasCommitted && base < p.commits.committed {
		// The one commit that goes back: to where the logs diverged.
		np.commits.hasCommitted, np.commits.committedMeta = false, ""
	}
	// The epoch of the record before base is the old log's, which the new
	// one holds unchanged below at; with none known, the new log's epoch
	// at at (a rewind below at) stands in.
	np.resume.fetched, np.resume.fetchedLeaderEpoch = base, p.leaderEpochBefore(base)
	if np.resume.fetchedLeaderEpoch < 0 && base == p.resume.fetched {
		np.resume.fetchedLeaderEpoch = p.resume.fetchedLeaderEpoch
	}
	if np.resume.fetchedLeaderEpoch < 0 {
		np.resume.fetchedLeaderEpoch = epoch
	}
	np.loss.expect = base
	np.queue.highWatermark = p.queue.highWatermark
	np.loss.carried = p.loss.carried
	np.att.report = p.att.report // the attempts are of records the new log does not hold
	np.loss.retentionMs = p.loss.retentionMs
	np.replay.state = p.replay.state
	if len(kept) > 0 {
		np.resume.inherit(kept, p.led.leaderEpochAt(kept[len(kept)-1].To-1))
	}
	np.loss.truncatedAt, np.loss.truncatedFrom = at, p.knownLeaderEpoch()
	np.dirty = true
	np.shown = p.shown
	o.endEpoch(p)
	o.parts[np.tp] = np
	o.lists.gauges.add(np)
	o.lists.dirty.add(np)

	if dl := p.loss.dataLoss; dl != nil {
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
	o.carryLoss(np, commitmeta.Loss{First: first, Last: last, Count: max(truncated+n, 1), Since: o.now(), Cause: causeTruncation})
	return o.goOnAfterTruncation(np, at, base, seq)
}

// goOnAfterTruncation returns np, the epoch a truncation at at made, when
// it takes the fetch that showed the truncation (nothing below at is left
// undelivered: base is at), and otherwise rewinds it to base in this poll
// window and returns nil.
func (o *owner) goOnAfterTruncation(np *partState, at, base int64, seq uint64) *partState {
	if base == at {
		return np
	}
	np.replay.rewindTo = kgo.EpochOffset{Epoch: np.resume.fetchedLeaderEpoch, Offset: base}
	o.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{np.tp.topic: {np.tp.partition: np.replay.rewindTo}})
	np.replay.minPoll = seq + 1
	return nil
}
