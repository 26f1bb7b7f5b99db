package engine

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// Kafka can take records away before the input delivers them: retention (or
// DeleteRecords) moves a partition's log start past them, or an unclean
// leader election truncates the log and writes other records at their
// offsets (KIP-320). Neither can be undone, and neither may pass in silence.
//
// Vocabulary. An offset is lost when the input gives up on it: it was not
// delivered (from memory or by a retry) and the log no longer holds it.
// Records that no longer exist cannot be told from transaction markers or
// compacted records, so losses are counted in offsets. An offset is
// truncated when it was delivered from a log that an unclean election then
// rewrote: the record now at that offset is another one, and is delivered
// too.
//
// How a loss is learnt (each the first to see it reports it, never twice):
//
//   - A fetch that resumes past the offset this epoch expects next
//     (lossPart.expect: the commit it started from, the rewind of a replay
//     in place, one past the last record queued) while its log start is past
//     that offset too: kgo found the position below the log start and reset
//     it there (offsetOpts, plugin/client.go). This catches a restart whose commit
//     fell below the log start, a replay whose rewind did, and a paused or
//     slow partition whose next records were deleted.
//   - The log starts listed every topic_lag_refresh_period for the partitions
//     that cannot fetch (paused at max_pending_batches, or stalled): the
//     offsets above what they queued and below the log start are lost now,
//     even though no fetch will say so until the partition moves again.
//   - A fetch that goes back below what this epoch queued, or below the
//     commit it started from, with a leader epoch newer than any it has
//     seen: the log was truncated there (truncate).
//
// Records the log start did not pass but that are missing all the same
// (compaction, transaction markers, aborted records under read_committed)
// are no loss: the partition goes on from the next record that exists.
//
// A loss is reported once per process (owner.lossReported remembers, per
// partition and across its epochs, the offsets reported): one ERROR line, the counter
// kafka_watermark_lost_records_total (kafka_watermark_truncated_records_total
// for truncated offsets), and the loss fields of the partition's commit
// metadata (commitmeta.Loss) for lost_records_report_for, where a restart,
// another member and `watermark-connect status` find it. A member that
// starts from such a commit counts the offsets the carried loss spans as
// reported, when it says every one of them was lost (inheritLoss).
//
// Commits never go backwards, with one exception: after a truncation below
// the committed offset, one commit goes back, to the point where the logs
// diverged or above it, through the new log's records delivered by the time
// it is made; it carries the loss report (cause truncation). It never
// passes an undelivered record of the new log, as no commit does. kgo's
// validation of a commit's leader epoch (OffsetForLeaderEpoch) brings any
// later member to the divergence point too.

// Loss causes, as the commit metadata and `status` name them.
const (
	causeRetention  = commitmeta.CauseRetention
	causeTruncation = commitmeta.CauseTruncation
)

// onFetchErr takes an error that kgo injected for p, and returns the epoch
// that takes p's next records: p, a new epoch, or nil (rewound). A data
// loss that kgo located below what p expects next is a truncation there
// (kgo moved the fetch position back to ResetTo: consumer.go:2314-2318),
// whatever the next fetch shows: it may start higher, past records the new
// log held only briefly (retention), and the records from ResetTo on that
// p delivered are of the old log all the same. kgo queues the error before
// it moves the position, so it comes in the poll of the first records from
// ResetTo or an earlier one; when those records came first (checkFetch), p
// is the epoch that truncation made, and the error is not taken twice.
func (o *owner) onFetchErr(p *partState, err error, seq uint64) *partState {
	var dl *kgo.ErrDataLoss
	if !errors.As(err, &dl) {
		return p
	}
	p.loss.noteDataLoss(dl)
	if p.loss.expected() < 0 || dl.ResetTo >= p.loss.expected() || p.loss.sameTruncation(dl) {
		return p
	}
	return o.truncate(p, dl.ResetTo, dl.ResetToEpoch, seq)
}

// onFetchErrBeforeRewind takes an error that kgo injected in a poll that p
// drops, fetched from the position before p's rewind (replay.go): p reads
// the log again from its base, but carries the delivered ranges of the
// epoch it replays, and a data loss located below their end is a
// truncation of the log they came from all the same. Dropped with the
// poll, it let p skip the new log's records there as delivered, and report
// none of them lost when retention took them (model seed 20016498). p
// then ends in the truncation's successor, which holds none of those
// ranges from the divergence point on, and reads the log from its own base
// (seed 20017667: it took its records from p's rewound position).
func (o *owner) onFetchErrBeforeRewind(p *partState, err error, seq uint64) {
	var dl *kgo.ErrDataLoss
	if !errors.As(err, &dl) || p.loss.sameTruncation(dl) {
		return
	}
	base, _ := p.commitBase()
	end := base
	if rs := p.knownDelivered(base); len(rs) > 0 {
		end = max(end, rs[len(rs)-1].To)
	}
	if dl.ResetTo >= end {
		return // above everything p holds of the old log
	}
	p.loss.noteDataLoss(dl)
	if np := o.truncate(p, dl.ResetTo, dl.ResetToEpoch, seq); np != nil {
		// The successor would take this poll's records, which are
		// dropped, and p's rewind moved kgo's position in this window:
		// the successor's rewind moves it to the successor's base.
		o.rewindNow(np, seq)
	}
}

// knownLeaderEpoch is the newest leader epoch p knows of its log: that of the last
// record it queued, or of the commit it started from; -1 when it knows none,
// and then no truncation can be told from a stale fetch.
func (p *partState) knownLeaderEpoch() int32 {
	if e, ok := p.led.lastLeaderEpoch(); ok {
		return e
	}
	return p.resume.committedLeaderEpoch()
}

// checkFetch looks at the records of one fetch of p before they are queued,
// and returns the epoch that takes them: p, a new epoch after a truncation,
// or nil when the fetch is dropped (a truncation that rewinds).
func (o *owner) checkFetch(p *partState, fp *kgo.FetchPartition, seq uint64) *partState {
	first := fp.Records[0]
	if p.loss.expected() >= 0 && first.Offset < p.loss.expected() {
		if known := p.knownLeaderEpoch(); known >= 0 && first.LeaderEpoch > known {
			return o.truncate(p, first.Offset, first.LeaderEpoch, seq)
		}
		return p // a re-delivery of records queued already: enqueue drops them
	}
	if p.loss.expected() >= 0 && first.Offset > p.loss.expected() {
		if fp.LogStartOffset > p.loss.expected() {
			o.lose(p, p.loss.expected(), min(fp.LogStartOffset, first.Offset), fp.LogStartOffset, first.LeaderEpoch, causeRetention)
		} else if p.replay.firstAtMost >= 0 && !p.queue.fetched() && first.Offset > p.replay.firstAtMost {
			o.log.Infof("kafka_watermark: %s/%d: the records of the replayed batch from offset %d are gone from the log though its start (%d) did not pass them (compaction): going on from offset %d",
				p.tp.topic, p.tp.partition, p.loss.expected(), fp.LogStartOffset, first.Offset)
		}
	}
	return p
}

// onLogStart takes a log start listed for p (lag.go): the offsets above what
// p queued, and below the log start, can no longer be fetched.
func (o *owner) onLogStart(p *partState, logStart int64) {
	from := max(p.queue.queuedTo(), p.loss.expected())
	if from < 0 || logStart <= from {
		return
	}
	o.lose(p, from, logStart, logStart, -1, causeRetention)
}

// lose reports the offsets of [from, to) that p lost: those above its
// watermark that were neither delivered (in this epoch, or in the one its
// ranges came from) nor reported already.
//
// after is the leader epoch of the first record past [from, to), -1 when
// none was fetched. What p delivered there under an older leader epoch may
// have been truncated away by an unclean election that retention then hid
// (kgo resets a position below the log start without checking the epoch):
// the records deleted there may be other records, never delivered. Such a
// delivery no longer vouches for its offsets, which are counted lost (model
// seeds 108713, 200395: a record delivered from the old log, truncated,
// rewritten and deleted, went unreported). A clean leader change in the
// gap counts delivered records lost the same way: an over-count in a
// corner (a deletion past records delivered above the watermark), where
// not counting would hide a loss.
func (o *owner) lose(p *partState, from, to, logStart int64, after int32, cause string) {
	base := from
	if b, ok := p.commitBase(); ok {
		base = b
		from = max(from, b)
	}
	if from >= to {
		return
	}
	claims := p.knownDelivered(base)
	if after >= 0 {
		claims = slices.DeleteFunc(claims, func(r commitmeta.Range) bool {
			return r.From < to && p.leaderEpochOf(r.To-1) < after
		})
	}
	accepted := o.lost.accepted[p.tp]
	if after >= 0 && accepted.epoch < after {
		accepted.ranges = nil
	}
	gone := commitmeta.SubtractRanges(commitmeta.Range{From: from, To: to}, claims, o.lost.lossReported[p.tp], accepted.ranges)
	if n := o.sayLost(p, gone, logStart, cause); n > 0 {
		o.lost.lossReported[p.tp] = commitmeta.MergeRanges(o.lost.lossReported[p.tp], gone)
		o.carryLoss(p, commitmeta.Loss{Report: commitmeta.Report{First: gone[0].From, Last: gone[len(gone)-1].To - 1, Since: o.now(), Reason: cause}, Count: n})
	}
}

// sayLost logs and counts the lost offsets gone (sorted, disjoint ranges) of
// p, and returns how many there are.
func (o *owner) sayLost(p *partState, gone []commitmeta.Range, logStart int64, cause string) int64 {
	var n int64
	for _, r := range gone {
		n += r.To - r.From
	}
	if n == 0 {
		return 0
	}
	o.m.lostRecords.Incr(n, p.labels[:]...)
	o.log.Errorf("kafka_watermark: lost %d record offset(s) of %s/%d before delivery: offsets %d-%d are no longer in the log, which now starts at %d (cause: %s)",
		n, p.tp.topic, p.tp.partition, gone[0].From, gone[len(gone)-1].To-1, logStart, cause)
	return n
}

// inheritLoss takes the loss that the commit p starts from carries, if it
// is not older than lost_records_report_for: p's commits go on carrying it
// for what is left of that time, and the offsets it spans count as
// reported, so that no member reports them again.
func (o *owner) inheritLoss(p *partState, loss *commitmeta.Loss) {
	if loss == nil {
		return // none, or malformed (DecodeCommit's LossErr): a malformed report is no report
	}
	l := *loss
	if l.Count == l.Last-l.First+1 && l.Reason != causeTruncation {
		// Every offset of the span was lost. A report that merged events
		// with offsets between them not lost (held in memory then, say)
		// does not say which: they may be lost since, and a member that
		// counted the whole span would hide them; they are reported again.
		// A truncation's offsets are of the old log: the new log's
		// records there are others, which may be lost in their turn
		// (and a report that merged one is named after it: carryLoss).
		o.lost.lossReported[p.tp] = commitmeta.MergeRanges(o.lost.lossReported[p.tp], []commitmeta.Range{{From: l.First, To: l.Last + 1}})
	}
	if o.conf.LostReportFor > 0 && o.now().Sub(l.Since) < o.conf.LostReportFor {
		p.loss.inheritReport(l)
		o.lists.losses.add(p)
	}
}

// carryLoss adds l to what p's commits carry, for lost_records_report_for.
func (o *owner) carryLoss(p *partState, l commitmeta.Loss) {
	if o.conf.LostReportFor <= 0 || !o.conf.CommitMetadata {
		return
	}
	p.loss.carry(l)
	o.lists.losses.add(p)
	o.markDirty(p)
	o.lists.gauges.add(p)
}

// expireLosses stops carrying the losses reported longer ago than
// lost_records_report_for, and the dead-letter reports older than
// dead_letter.report_for. Called on the gauge clock; it walks the
// partitions that carry one only.
func (o *owner) expireLosses(now time.Time) {
	o.lists.losses.keep(func(p *partState) bool {
		if !p.live() {
			return false
		}
		if p.att.expireReport(now, o.conf.DeadLetterReportFor) { // dead_letter.report_for
			o.markDirty(p)
		}
		if p.loss.expireReport(now, o.conf.LostReportFor) {
			o.markDirty(p)
		}
		return p.loss.reporting() || p.att.reporting()
	})
}

// lossPart is what an epoch knows of the records Kafka may take away before
// delivery.
//
// Invariants, kept by its methods below, the only writers of its fields:
//   - expect is set where the epoch starts (expectFrom) and from then on
//     only grows with what is queued (expectPast);
//   - truncatedAt and truncatedFrom are set once, when the epoch is made
//     (follow), as is carried, which then only grows (carry) until it
//     expires whole (expireReport);
//   - retentionMs is the topic's as last described (setRetention).
//
// Owned by the owner goroutine, inside its partState.
type lossPart struct {
	// expect is the next offset this epoch expects to fetch: the commit it
	// started from, the rewind of a replay, one past the last record queued;
	// -1 until one is known. A fetch past it whose log start is past it
	// too lost what lies between.
	expect int64
	// carried is the loss its commits carry (Count 0: none), for
	// lost_records_report_for. An epoch that replays in place or follows a
	// truncation inherits it; owner.lossReported holds what was reported.
	carried commitmeta.Loss
	// retentionMs is the topic's time retention, -1 for none or not
	// known (retention.go).
	retentionMs int64
	// dataLoss is the last data loss kgo reported for this epoch, for the
	// log; truncatedAt is where the truncation that made this epoch
	// diverged (-1: none), and truncatedFrom the newest leader epoch of the
	// log it replaced, so that kgo's report of it is not taken twice
	// (sameTruncation).
	dataLoss      *kgo.ErrDataLoss
	truncatedAt   int64
	truncatedFrom int32
}

// expectFrom makes offset, where the epoch starts (a commit, a rewind), the
// next offset it expects.
func (l *lossPart) expectFrom(offset int64) { l.expect = offset }

// expectPast raises the next offset expected to next, one past the last
// record queued: what was queued is never expected again.
func (l *lossPart) expectPast(next int64) { l.expect = max(l.expect, next) }

// expected is the next offset the epoch expects to fetch, or -1.
func (l *lossPart) expected() int64 { return l.expect }

// retention is the topic's time retention in milliseconds, if known.
func (l *lossPart) retention() (int64, bool) { return l.retentionMs, l.retentionMs >= 0 }

// setRetention takes the topic's time retention in milliseconds (-1:
// none), and reports whether it changed.
func (l *lossPart) setRetention(ms int64) bool {
	changed := l.retentionMs != ms
	l.retentionMs = ms
	return changed
}

// noteDataLoss keeps dl, kgo's last report of a data loss, for the log;
// lastDataLoss returns it (nil: none).
func (l *lossPart) noteDataLoss(dl *kgo.ErrDataLoss) { l.dataLoss = dl }
func (l *lossPart) lastDataLoss() *kgo.ErrDataLoss   { return l.dataLoss }

// report is the loss commits carry, if any.
func (l *lossPart) report() (commitmeta.Loss, bool) { return l.carried, l.carried.Count > 0 }

// reporting reports whether commits carry a loss.
func (l *lossPart) reporting() bool { return l.carried.Count > 0 }

// inheritReport makes loss, read from the commit the epoch starts from, the
// one its commits carry.
func (l *lossPart) inheritReport(loss commitmeta.Loss) { l.carried = loss }

// carry adds loss to what commits carry. A truncation's count holds
// offsets delivered from the old log, not lost: a report that merged one,
// named after a retention loss met first, would say that every offset of
// its span was deleted, and inheritLoss would take the new log's records
// there as reported; so a merge with one is named after the truncation.
func (l *lossPart) carry(loss commitmeta.Loss) {
	if l.carried.Count > 0 {
		truncation := l.carried.Reason == causeTruncation || loss.Reason == causeTruncation
		loss = commitmeta.MergeLoss(l.carried, loss)
		if truncation {
			loss.Reason = causeTruncation
		}
	}
	l.carried = loss
}

// expireReport drops the loss commits carry once it is reportFor old at
// now, and reports whether it did.
func (l *lossPart) expireReport(now time.Time, reportFor time.Duration) bool {
	if l.carried.Count > 0 && now.Sub(l.carried.Since) >= reportFor {
		l.carried = commitmeta.Loss{}
		return true
	}
	return false
}

// follow makes l the part of old's successor, which starts at base: it
// expects base, knows old's retention, carries old's loss, and follows
// old's truncation, or the one at holdsTo from a log whose newest leader
// epoch was truncatedFrom (holdsTo noTruncation: none).
func (l *lossPart) follow(old *lossPart, base, holdsTo int64, truncatedFrom int32) {
	l.expect = base
	l.retentionMs = old.retentionMs
	l.truncatedAt, l.truncatedFrom = old.truncatedAt, old.truncatedFrom
	if holdsTo != noTruncation {
		l.truncatedAt, l.truncatedFrom = holdsTo, truncatedFrom
	}
	l.carried = old.carried
}

// sameTruncation reports whether kgo's data loss dl is its report of the
// truncation that made this epoch: at the same offset, found while kgo was
// still consuming the log that truncation replaced. A data loss at the same
// offset after kgo consumed the new log's records (a newer leader epoch) is
// another unclean election rewriting the log there again.
func (l *lossPart) sameTruncation(dl *kgo.ErrDataLoss) bool {
	return dl.ResetTo == l.truncatedAt && dl.ConsumedToEpoch <= l.truncatedFrom
}
