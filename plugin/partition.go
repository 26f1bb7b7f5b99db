package plugin

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/tracker"
)

type topicPartition struct {
	topic     string
	partition int32
}

// rawBatch is a run of fetched records of one partition, in offset order,
// not yet converted to Benthos messages.
type rawBatch struct {
	records     []*kgo.Record
	first, last int64
}

// inflight is one registered batch between the owner and the sink. The
// owner creates it at registration and hands the same value out again on a
// retry; ReadBatch converts raw to fresh messages on every hand-out, so a
// retry never sees what processors did to an earlier attempt's messages.
//
// part, seq and raw never change after creation and may be read from any
// goroutine; attempt and unread are the owner's.
type inflight struct {
	part    *partState
	seq     uint64
	raw     rawBatch
	attempt int  // 0 on first delivery
	unread  bool // given back by a cancelled ReadBatch: not an attempt
}

// partState is one assignment epoch of one partition. It is created when the
// partition is assigned and dropped on revoke or loss; its pointer is the
// epoch's identity, so an ack that carries a dropped partState is late and
// ignored.
//
// Owned by the owner goroutine: no other goroutine reads or writes it,
// except the immutable tp and labels.
type partState struct {
	tp     topicPartition
	labels [2]string

	tracker *tracker.PartitionTracker
	// epochs holds the leader epoch changes of the records queued and
	// pending, so a commit carries the leader epoch of the record before
	// its offset (KIP-320).
	epochs epochLog

	// ready holds fetched batches not yet registered; retry holds nacked
	// batches whose retry backoff has passed. Retries go first: they hold
	// the watermark.
	ready []rawBatch
	retry []*inflight
	// unresolved counts registered batches with no final verdict yet (in
	// the pipeline or waiting for a retry): what a drain waits for.
	unresolved int
	// retrying counts the unresolved batches waiting to be retried (in
	// backoff or in retry): a drain does not wait for them.
	retrying int
	// lastQueued is the last offset queued in this epoch; a record at or
	// below it is a re-delivery of fetched data and is dropped.
	lastQueued int64

	// committed is the last offset the broker acknowledged for this epoch;
	// committing is the offset of the commit in flight, or -1.
	committed    int64
	hasCommitted bool
	committing   int64

	firstFetched  int64 // offset of the first record fetched, or -1
	highWatermark int64 // log end seen in the last fetch, or -1
	lastMoved     time.Time

	paused   bool // fetching paused at max_pending_batches
	queued   bool // in the owner's run queue
	draining bool // no more hand-outs: draining for a revoke or a close

	// shown is what the gauges last showed for this epoch (gauges.go).
	shown gaugeValues
}

func newPartState(tp topicPartition, maxPending int, now time.Time) *partState {
	return &partState{
		tp:            tp,
		labels:        labels(tp),
		shown:         unshown,
		tracker:       tracker.NewWithCapacity(maxPending),
		lastQueued:    -1,
		committing:    -1,
		firstFetched:  -1,
		highWatermark: -1,
		lastMoved:     now,
	}
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
// pending: zero for an idle partition, growing for a stuck one.
func (p *partState) watermarkAge(now time.Time) time.Duration {
	if p.tracker.Pending() == 0 {
		return 0
	}
	return now.Sub(p.lastMoved)
}

// resumePoint is where this group would resume the partition now: the last
// commit, or before any commit the first offset fetched.
func (p *partState) resumePoint() (int64, bool) {
	if p.hasCommitted {
		return p.committed, true
	}
	return p.firstFetched, p.firstFetched >= 0
}

// commitCandidate returns the watermark if it is ahead of what was committed
// or is being committed.
func (p *partState) commitCandidate() (kgo.EpochOffset, bool) {
	eo, ok := p.finalOffset()
	if !ok || eo.Offset == p.committing {
		return kgo.EpochOffset{}, false
	}
	return eo, true
}

// finalOffset returns the watermark, with the leader epoch of the record
// before it, if it is ahead of the last commit.
func (p *partState) finalOffset() (kgo.EpochOffset, bool) {
	wm, ok := p.tracker.Watermark()
	if !ok || (p.hasCommitted && wm <= p.committed) {
		return kgo.EpochOffset{}, false
	}
	return kgo.EpochOffset{Epoch: p.epochs.at(wm - 1), Offset: wm}, true
}

// enqueue splits the records of one fetch into batches of at most
// maxRecords records and maxBytes bytes (a larger single record is a batch of
// its own) and queues them.
func (p *partState) enqueue(records []*kgo.Record, maxRecords int, maxBytes int64) {
	start, size := -1, int64(0)
	flush := func(end int) {
		if start >= 0 && end > start {
			rs := records[start:end:end]
			p.ready = append(p.ready, rawBatch{records: rs, first: rs[0].Offset, last: rs[len(rs)-1].Offset})
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
		if start >= 0 && (i-start >= maxRecords || size+n > maxBytes) {
			flush(i)
		}
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
