package engine

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/tracker"
)

type topicPartition struct {
	topic     string
	partition int32
}

// rawBatch is a run of fetched records of one partition, in offset order,
// not yet converted to Benthos messages. A skip batch is registered and
// resolved delivered at once, never handed out: it holds records that a
// commit's delivered ranges show delivered, or (control) transaction
// markers, which are no data but whose offsets the watermark must pass.
type rawBatch struct {
	records     []*kgo.Record
	first, last int64
	logEnd      int64 // the partition's log end when fetched, for kafka_lag
	skip        bool
	control     bool
}

// inflight is one registered batch between the owner and the sink. The
// owner creates it at registration and hands the same value out again on a
// retry; ReadBatch converts raw to fresh messages on every hand-out, so a
// retry never sees what processors did to an earlier attempt's messages.
//
// part, seq and raw never change after creation and may be read from any
// goroutine; attempt and unread are the owner's, but the reader that
// received b reads attempt before it makes the ack function (the owner
// changes it only on a retry, after that ack was applied). acked is the one
// field the ack functions write.
//
// An inflight belongs to one epoch and is never reused or pooled: a late
// ack, whatever its epoch or hand-out, touches only its own batch.
type Batch struct {
	part    *partState
	seq     uint64
	raw     rawBatch
	attempt int  // 0 on first delivery
	unread  bool // given back by a cancelled ReadBatch: not an attempt
	// acked is the once-guard of this batch's ack functions, one for each
	// hand-out: the attempt whose ack was last let through, plus one (0:
	// none yet). It only grows (takeAck), so a second ack of a hand-out,
	// and an ack of a hand-out older than one already acknowledged, are
	// both duplicates.
	acked atomic.Int64
	// only holds the indices in raw.records of the records the next
	// attempt re-delivers: those a batch error named failed. nil: all.
	only []int
	// nackedAt is the first nack of this batch, zero if none; lastErr is
	// the error class of the last one (errclass.go).
	nackedAt time.Time
	lastErr  string
}

// partState is one assignment epoch of one partition. It is created when the
// partition is assigned and dropped on revoke or loss; its pointer is the
// epoch's identity, so an ack that carries a dropped partState is late and
// ignored.
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
	// commit was planned, so the next tick plans one (metadata.go). A
	// dirty partition is on the owner's dirty list (markDirty).
	dirty bool
	// listed holds a bit for each owner list this epoch is on (partList).
	listed   listBits
	paused   bool // fetching paused at max_pending_batches
	queued   bool // in the owner's run queue
	draining bool // no more hand-outs: draining for a revoke or a close
	// unresolved counts registered batches with no final verdict yet (in
	// the pipeline or waiting for a retry): what a drain waits for.
	unresolved int
	// retrying counts the unresolved batches waiting to be retried (in
	// backoff or in retry): a drain does not wait for them.
	retrying int
	// lastMoved is when the watermark last moved.
	lastMoved time.Time
	// window mirrors the tracker's pending batches (window.go).
	window window

	// tracker is held by value, and starts with a ring of one slot that
	// doubles when it is full: its size follows this epoch's largest
	// window of pending batches (a partition with light traffic keeps a
	// slot or two), never max_pending_batches up front, nor the 64 slots
	// (1 KiB) of a zero-value tracker.
	tracker tracker.PartitionTracker
	// epochs holds the leader epoch changes of the records queued and
	// pending, so a commit carries the leader epoch of the record before
	// its offset (KIP-320).
	epochs epochLog

	// ready holds fetched batches not yet registered; retry holds nacked
	// batches whose retry backoff has passed. Retries go first: they hold
	// the watermark.
	ready []rawBatch
	retry []*Batch
	// readyBuf is the array ready was last grown into, from its start:
	// hand-outs slice ready forward (clearing what they take), and an
	// emptied queue starts again at readyBuf's start (enqueue), so a
	// partition that fetches and hands out allocates no queue in steady
	// state. Only a small array is reused (keepEmpty).
	readyBuf []rawBatch
	// lastQueued is the last offset queued in this epoch; a record at or
	// below it is a re-delivery of fetched data and is dropped.
	lastQueued int64

	// committed is the last offset the broker acknowledged for this epoch,
	// with committedMeta its metadata; committing and committingMeta are
	// the commit in flight (committing is -1 when there is none).
	committed      int64
	hasCommitted   bool
	committedMeta  string
	committing     int64
	committingMeta string
	// fetched is the offset the group had committed when this epoch was
	// assigned (OffsetFetch), or -1; skip the delivered ranges its metadata
	// carried, still above the fetch position (metadata.go).
	fetched      int64
	fetchedEpoch int32
	skip         []commitmeta.Range
	// inherited is the whole of those ranges, kept for the commits of this
	// epoch until it has registered past them (deliveredRanges).
	inherited []commitmeta.Range
	// skipEpoch is the leader epoch of the last record the skip ranges
	// cover; skipTruncated says a later epoch was met in them and the
	// ranges were dropped (metadata.go).
	skipEpoch     int32
	skipTruncated bool
	// skippedRanges and skippedRecords count what this epoch skipped, for
	// its one log line; skipLogged says it was written.
	skippedRanges, skippedRecords int
	skipLogged                    bool
	// skipQueued counts the skip batches in ready.
	skipQueued int
	// exposure is the replay exposure (records a crash now would deliver
	// again). When the commit in flight succeeds it becomes that commit's
	// planned exposure plus handedSinceSnap, what was handed out since the
	// commit was planned.
	exposure, handedSinceSnap int64

	firstFetched  int64 // offset of the first record fetched, or -1
	highWatermark int64 // log end seen in the last fetch, or -1

	// labels are the topic and partition labels of its metrics.
	labels [2]string

	// minPoll is the first poll whose records this epoch takes: 0, or,
	// for an epoch that replays in place, the first poll after its rewind
	// (noPoll until then); rewindTo is where the rewind goes (stall.go).
	minPoll  uint64
	rewindTo kgo.EpochOffset
	// firstAtMost, for an epoch that replays in place, is the failed
	// batch's first offset, -1 for any other epoch. A first fetch that
	// starts beyond it was read from the rewound position all the same
	// (kgo's SetOffsets ends the consumer session, waits for every fetch of
	// the old one to die and discards what they buffered before it moves
	// the cursor, kgo v1.22.3 consumer.go:2012-2044, 1225-1228; minPoll
	// drops the polls that started before): the failed batch's records are
	// gone, deleted (loss.go reports them) or compacted (said at INFO).
	firstAtMost int64
	// replay counts the replays in place in a row at one offset.
	replay replayState

	// expect is the next offset this epoch expects to fetch: the commit it
	// started from, the rewind of a replay, one past the last record queued;
	// -1 until one is known. A fetch past it whose log start is past it
	// too lost what lies between (loss.go).
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
	// diverged (-1: none), so that kgo's report of it is not taken twice.
	dataLoss    *kgo.ErrDataLoss
	truncatedAt int64

	// shown is what the gauges last showed for this epoch (gauges.go).
	shown gaugeValues
}

// newPartState returns a new epoch of tp. The second argument, once the
// size of the tracker's ring, is unused: the ring follows the pending
// batches now (partState.tracker).
func newPartState(tp topicPartition, _ int, now time.Time) *partState {
	return &partState{
		tp:            tp,
		tracker:       *tracker.NewWithCapacity(1),
		labels:        labels(tp),
		shown:         unshown,
		lastQueued:    -1,
		expect:        -1,
		truncatedAt:   -1,
		retentionMs:   -1,
		committing:    -1,
		fetched:       -1,
		fetchedEpoch:  -1,
		firstAtMost:   -1,
		firstFetched:  -1,
		highWatermark: -1,
		lastMoved:     now,
	}
}

// live reports whether p is its partition's current epoch in owner.parts.
func (p *partState) live() bool { return !p.ended }

// partList is a list of partitions, each on it at most once: its bit in
// partState.listed says a partition is on it. The owner keeps one for each
// walk that must cost what changed, not what is assigned (owner.dirty and
// the others). An epoch that has ended may still be listed: every walk
// checks p.live() and drops the ones that fail. Owned by the
// owner goroutine.
type partList struct {
	bit   listBits
	parts []*partState
}

type listBits uint8

const (
	listDirty   listBits = 1 << iota // a commit may be due (owner.dirty)
	listGauges                       // a gauge may show something else (owner.gauges)
	listStalled                      // the tracker is stalled (owner.stalled)
	listPaused                       // fetching is paused (owner.paused)
	listLoss                         // commits carry a loss (owner.losses)
)

// add lists p, unless it is listed already.
func (l *partList) add(p *partState) {
	if p.listed&l.bit == 0 {
		p.listed |= l.bit
		l.parts = append(l.parts, p)
	}
}

// keep walks the list, in the order the partitions were listed, and keeps
// those for which fn returns true; the others are unlisted. fn must not add
// to this list.
func (l *partList) keep(fn func(p *partState) bool) {
	kept := l.parts[:0]
	for _, p := range l.parts {
		if fn(p) {
			kept = append(kept, p)
		} else {
			p.listed &^= l.bit
		}
	}
	clear(l.parts[len(kept):]) // drop the references to unlisted epochs
	l.parts = kept
}

// canHandOut reports whether the next ReadBatch may take a batch of p.
// Retries are always allowed: they are registered already.
func (p *partState) canHandOut(maxPending int) bool {
	if p.draining {
		return false
	}
	return len(p.retry) > 0 || (len(p.ready) > 0 && p.tracker.Pending() < maxPending)
}

// watermarkAge is how long the watermark has not moved while batches are
// pending or the partition is stalled (a replay in place has none pending
// before it reads again): zero for an idle partition, growing for a stuck
// one.
func (p *partState) watermarkAge(now time.Time) time.Duration {
	if p.tracker.Pending() == 0 && !p.stalled() {
		return 0
	}
	return now.Sub(p.lastMoved)
}

// resumePoint is where this group would resume the partition now: the last
// commit, or before any commit of this epoch the group's commit at
// assignment, or the first offset fetched.
func (p *partState) resumePoint() (int64, bool) {
	if p.hasCommitted {
		return p.committed, true
	}
	if p.fetched >= 0 {
		return p.fetched, true
	}
	return p.firstFetched, p.firstFetched >= 0
}

// commitBase is the offset a commit would carry now: the watermark, or,
// before the watermark ever moved, the offset this epoch started at.
func (p *partState) commitBase() (int64, bool) {
	if wm, ok := p.tracker.Watermark(); ok {
		return wm, true
	}
	if p.fetched >= 0 && (p.firstFetched < 0 || p.fetched <= p.firstFetched) {
		return p.fetched, true
	}
	return p.firstFetched, p.firstFetched >= 0
}

// enqueue splits the records of one fetch into batches of at most
// maxRecords records and maxBytes bytes (a larger single record is a batch of
// its own) and queues them. Records inside a delivered range of the commit
// this epoch started from go into skip batches of their own.
func (p *partState) enqueue(records []*kgo.Record, maxRecords int, maxBytes int64) {
	start, size, skip, control := -1, int64(0), false, false
	flush := func(end int) {
		if start >= 0 && end > start {
			rs := records[start:end:end]
			if len(p.ready) == 0 && p.readyBuf != nil {
				p.ready = p.readyBuf
			}
			had := cap(p.ready)
			p.ready = append(p.ready, rawBatch{records: rs, first: rs[0].Offset, last: rs[len(rs)-1].Offset, logEnd: p.highWatermark, skip: skip || control, control: control})
			if cap(p.ready) != had {
				p.readyBuf = nil
				if cap(p.ready) <= keepEmpty {
					p.readyBuf = p.ready[:0]
				}
			}
			if skip && !control {
				p.skipQueued++
			}
			p.lastQueued = rs[len(rs)-1].Offset
		}
		start, size = -1, 0
	}
	for i, r := range records {
		if r.Offset <= p.lastQueued {
			flush(i)
			continue
		}
		n := int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			n += int64(len(h.Key) + len(h.Value))
		}
		isControl := r.Attrs.IsControl()
		covered := !isControl && p.skipping(r)
		if start >= 0 && (i-start >= maxRecords || size+n > maxBytes || covered != skip || isControl != control) {
			flush(i)
		}
		skip, control = covered, isControl
		if start < 0 {
			start = i
			if p.firstFetched < 0 {
				p.firstFetched = r.Offset
			}
		}
		p.epochs.note(r.Offset, r.LeaderEpoch)
		size += n
	}
	flush(len(records))
}
