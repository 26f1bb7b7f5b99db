package engine

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// resume is where an epoch started: the group's commit when it was
// assigned (or the rewind of a replay in place, or the divergence point of
// a truncation), and the delivered ranges that commit's metadata carried,
// which the epoch skips as it fetches them (onFetched, skips).
//
// Invariants, kept by its methods below, the only writers of its fields:
//   - fetched and fetchedLeaderEpoch are set once, when the epoch starts
//     (startAt), and stay;
//   - skip is a suffix of inherited, sorted and disjoint, strictly above
//     fetched, and only shrinks (skips); once a record proves the ranges
//     stale (a newer leader epoch than skipLeaderEpoch), both are dropped
//     for good (skipTruncated), as they are when they cannot describe the
//     log (distrust);
//   - skippedRecords counts the records of the skip batches passed
//     (passed), and the log line is written once (skipReport).
//
// Owned by the owner goroutine, inside its partState.
type resume struct {
	// fetched is the offset the group had committed when this epoch was
	// assigned (OffsetFetch), or -1, with the leader epoch it was
	// committed with (-1: none).
	fetched            int64
	fetchedLeaderEpoch int32
	// skip holds the delivered ranges still above the fetch position.
	skip []commitmeta.Range
	// inherited is the whole of those ranges, kept for the commits of this
	// epoch until it has registered past them (deliveredRanges).
	inherited []commitmeta.Range
	// skipLeaderEpoch is the leader epoch of the last record the skip ranges
	// cover; skipTruncated says a later epoch was met in them and the
	// ranges were dropped.
	skipLeaderEpoch int32
	skipTruncated   bool
	// skippedRanges and skippedRecords count what this epoch skipped, for
	// its one log line; skipLogged says it was written.
	skippedRanges, skippedRecords int
	skipLogged                    bool
}

// startAt records the commit the epoch starts from: offset, or -1 for none,
// committed with leaderEpoch (-1: none).
func (r *resume) startAt(offset int64, leaderEpoch int32) {
	r.fetched, r.fetchedLeaderEpoch = offset, leaderEpoch
}

// start is the offset the epoch started from, if it had one.
func (r *resume) start() (int64, bool) { return r.fetched, r.fetched >= 0 }

// startsAt reports whether offset is the one the epoch started from.
func (r *resume) startsAt(offset int64) bool { return offset == r.fetched }

// startLeaderEpoch is the leader epoch the commit at base was made with,
// when base is where the epoch started and that commit carried one.
func (r *resume) startLeaderEpoch(base int64) (int32, bool) {
	if base == r.fetched && r.fetchedLeaderEpoch >= 0 {
		return r.fetchedLeaderEpoch, true
	}
	return -1, false
}

// committedLeaderEpoch is the leader epoch of the commit the epoch started
// from, or -1.
func (r *resume) committedLeaderEpoch() int32 { return r.fetchedLeaderEpoch }

// rewindPoint is the fetch position of the epoch's start, with the leader
// epoch kgo validates it by.
func (r *resume) rewindPoint() kgo.EpochOffset {
	return kgo.EpochOffset{Epoch: r.fetchedLeaderEpoch, Offset: r.fetched}
}

// inherit makes ranges, whose last record has leader epoch epoch, the
// delivered ranges this epoch skips and carries.
func (r *resume) inherit(ranges []commitmeta.Range, epoch int32) {
	r.skip, r.inherited = ranges, ranges
	r.skipLeaderEpoch = epoch
	r.skippedRanges = len(ranges)
}

// distrust drops the inherited ranges: they do not describe this log.
func (r *resume) distrust() {
	r.skip, r.inherited, r.skippedRanges = nil, nil, 0
}

// skips reports whether record rec lies in a delivered range of the commit
// this epoch started from. Records arrive in offset order, so ranges wholly
// below rec are passed for good. A record at or below the ranges with a
// leader epoch above the one they were written under proves them stale: the
// log was rewritten below their end after they were written (see
// l= in commitmeta's Format), so none of them is skipped, in or past a range. Checking
// only the records inside a range would let a new log's records between
// the ranges, or below the first, pass unseen and the old ranges skip the
// new records they cover. Transaction markers are checked too (enqueue
// ignores the answer for them): a new leader's marker may be all a fetch
// holds below the ranges, and kept, the ranges would be restated under its
// leader epoch (leaderEpochOf), so that the next epoch skips the new log's
// records they cover (issue 28).
func (r *resume) skips(rec *kgo.Record) bool {
	for len(r.skip) > 0 && r.skip[0].To <= rec.Offset {
		r.skip = r.skip[1:]
	}
	if len(r.skip) == 0 {
		return false
	}
	if rec.LeaderEpoch > r.skipLeaderEpoch {
		r.skipTruncated = true
		r.skip, r.inherited = nil, nil
		return false
	}
	return r.skip[0].From <= rec.Offset
}

// passed counts n records of a skip batch as skipped.
func (r *resume) passed(n int) { r.skippedRecords += n }

// skipReport returns, once, when every range is passed and no skip batch
// is queued (queuedSkips), what the epoch skipped: its records and ranges,
// and whether a newer leader epoch met in them dropped the rest.
func (r *resume) skipReport(queuedSkips bool) (records, ranges int, truncated, ok bool) {
	if r.skipLogged || r.skippedRanges == 0 || len(r.skip) > 0 || queuedSkips {
		return 0, 0, false, false
	}
	r.skipLogged = true
	return r.skippedRecords, r.skippedRanges, r.skipTruncated, true
}

// reachesPast reports whether the skip ranges reach past logEnd, and to
// where.
func (r *resume) reachesPast(logEnd int64) (int64, bool) {
	if len(r.skip) == 0 || r.skip[len(r.skip)-1].To <= logEnd {
		return 0, false
	}
	return r.skip[len(r.skip)-1].To, true
}

// beyond appends to ranges, the delivered ranges above base through
// frontier (what the epoch registered), the inherited ranges above
// frontier, merging those that touch.
func (r *resume) beyond(base, frontier int64, ranges []commitmeta.Range) []commitmeta.Range {
	for _, in := range r.inherited {
		if in.To <= frontier {
			continue
		}
		from := max(in.From, frontier, base+1)
		if from >= in.To {
			continue
		}
		if n := len(ranges); n > 0 && ranges[n-1].To >= from {
			ranges[n-1].To = max(ranges[n-1].To, in.To)
			continue
		}
		ranges = append(ranges, commitmeta.Range{From: from, To: in.To})
	}
	return ranges
}

// above returns the parts of the inherited ranges above base.
func (r *resume) above(base int64) []commitmeta.Range {
	var out []commitmeta.Range
	for _, in := range r.inherited {
		if in.To > base+1 {
			out = append(out, commitmeta.Range{From: max(in.From, base+1), To: in.To})
		}
	}
	return out
}

// inheritedEpoch is the leader epoch the inherited ranges were written
// under, when offset is at or above their start.
func (r *resume) inheritedEpoch(offset int64) (int32, bool) {
	if len(r.inherited) > 0 && offset >= r.inherited[0].From {
		return r.skipLeaderEpoch, true
	}
	return -1, false
}

// passSkipped registers the skip batches at the front of p's ready queue and
// resolves them delivered at once: the tracker accounts for them, so the
// watermark moves past them as soon as everything below is delivered, and
// the next commit's ranges still cover them.
func (o *owner) passSkipped(p *partState) {
	passed := false
	for p.queue.skipAtFront() {
		rb := p.queue.passSkip()
		p.led.registerDelivered(rb)
		if !rb.control {
			p.resume.passed(len(rb.records))
			o.m.skipped.Incr(int64(len(rb.records)), p.labels[:]...)
		}
		passed = true
	}
	if passed {
		p.dirty = true
		o.advance(p)
		// Skip batches count against max_pending_batches while a batch
		// below them holds the watermark, as handed-out ones do: past
		// the limit the partition must pause, or it would neither hand
		// out nor stop fetching, and its ready queue would grow for as
		// long as the head is stuck.
		o.pauseAtLimit(p)
	}
	// Once every range is passed and every skip batch registered, say
	// what was skipped, once.
	if records, ranges, truncated, ok := p.resume.skipReport(p.queue.skipsQueued()); ok {
		o.log.Infof("kafka_watermark: %s/%d: skipped %d record(s) in %d range(s) that the last commit showed delivered",
			p.tp.topic, p.tp.partition, records, ranges)
		if truncated {
			o.log.Warnf("kafka_watermark: %s/%d: a record in the delivered ranges has a newer leader epoch than they were written under (the log was truncated by an unclean leader election): from there on nothing is skipped",
				p.tp.topic, p.tp.partition)
		}
	}
}

// fetchedCommit is one partition's committed offset and metadata, as the
// group's OffsetFetch returned it when the partition was assigned.
type fetchedCommit struct {
	offset      int64
	leaderEpoch int32 // committed with offset, or -1
	meta        string
}

// memberIDLike matches kgo's member IDs, which every commit made before
// commit metadata carries: the broker's "<client id>-<UUID>" (classic) or a
// client-made base64 UUID (KIP-848). They are ignored without a word.
var memberIDLike = regexp.MustCompile(`^(?:.+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[A-Za-z0-9_-]{22})$`)

// onFetched takes the committed offsets and metadata of newly assigned
// partitions, before any of their records is fetched. Metadata this input
// did not write, or whose base is not the committed offset, is ignored with
// one warning for the whole assignment: never a skip, never a failure.
func (o *owner) onFetched(commits map[topicPartition]fetchedCommit) {
	var ignored []string
	for tp, fc := range commits {
		p := o.parts[tp]
		if p == nil {
			continue
		}
		p.resume.startAt(fc.offset, fc.leaderEpoch)
		if fc.offset >= 0 {
			p.loss.expectFrom(fc.offset)
		}
		if !o.conf.CommitMetadata || fc.offset < 0 || fc.meta == "" {
			continue
		}
		d, err := commitmeta.DecodeCommit(fc.meta)
		if err == nil && d.Base == fc.offset {
			o.inheritLoss(p, d.Loss)
			o.inheritAttempts(p, d)
		}
		switch {
		case errors.Is(err, commitmeta.ErrNotOurs) && memberIDLike.MatchString(fc.meta):
			continue
		case err != nil:
			ignored = append(ignored, fmt.Sprintf("%s/%d: %v", tp.topic, tp.partition, err))
			continue
		case d.Base != fc.offset:
			ignored = append(ignored, fmt.Sprintf("%s/%d: written for offset %d, committed offset is %d", tp.topic, tp.partition, d.Base, fc.offset))
			continue
		case d.RangesErr != nil:
			ignored = append(ignored, fmt.Sprintf("%s/%d: delivered ranges without a valid l= leader epoch: %v", tp.topic, tp.partition, d.RangesErr))
			continue
		}
		p.resume.inherit(d.Delivered, d.LastEpoch)
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		o.log.Warnf("kafka_watermark: ignored the commit metadata of %d partition(s), which this input did not write or wrote for another offset; they replay everything above their committed offset: %s",
			len(ignored), strings.Join(ignored, "; "))
	}
}

// dropSkipsPastEnd drops the delivered ranges of p that reach past the log
// end: they cannot describe this log (a topic deleted and made again), so
// none of them is trusted.
func (o *owner) dropSkipsPastEnd(p *partState, logEnd int64) {
	to, ok := p.resume.reachesPast(logEnd)
	if !ok {
		return
	}
	o.log.Warnf("kafka_watermark: ignored the delivered ranges of %s/%d: they reach offset %d, past the log end %d; everything above the committed offset is replayed",
		p.tp.topic, p.tp.partition, to, logEnd)
	p.resume.distrust()
}
