package engine

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// queue holds one epoch's batches waiting to go out: fetched batches not
// yet registered (ready), in offset order, and registered ones whose retry
// backoff has passed (retry), which go first: they hold the watermark.
//
// Invariants, kept by its methods below, the only writers of its fields:
//   - ready holds, in offset order, batches at or below lastQueued, each
//     queued once: lastQueued only grows (push), so a re-fetched record is
//     dropped (queued);
//   - skipQueued counts the skip batches of ready that are not transaction
//     markers: push counts them in, passSkip out, drop clears them all;
//   - firstFetched is set once, by the first record queued;
//   - highWatermark is the log end as last seen: a fetch sets it (setLogEnd),
//     a listed log end only raises it (raiseLogEnd).
//
// Owned by the owner goroutine, inside its partState; enqueue (below) fills
// it, and the hand-out (serve, handout.go) or, under ordering: key, the
// admission of segments (keyPart.admit, keyed.go) empties it.
type queue struct {
	ready []rawBatch
	retry []*Batch
	// readyBuf is the array ready was last grown into, from its start:
	// hand-outs slice ready forward (clearing what they take), and an
	// emptied queue starts again at readyBuf's start (push), so a
	// partition that fetches and hands out allocates no queue in steady
	// state. Only a small array is reused (keepEmpty).
	readyBuf []rawBatch
	// lastQueued is the last offset queued in this epoch; a record at or
	// below it is a re-delivery of fetched data and is dropped.
	lastQueued int64
	// skipQueued counts the skip batches in ready.
	skipQueued int
	// firstFetched is the offset of the first record fetched, or -1;
	// highWatermark the log end seen in the last fetch, or -1.
	firstFetched  int64
	highWatermark int64
}

// newQueue returns the empty queue of a new epoch.
func newQueue() queue { return queue{lastQueued: -1, firstFetched: -1, highWatermark: -1} }

// readyLen is the number of fetched batches waiting to be registered.
func (q *queue) readyLen() int { return len(q.ready) }

// retryLen is the number of registered batches waiting to go out again.
func (q *queue) retryLen() int { return len(q.retry) }

// skipAtFront reports whether the batch at the front of ready is a skip
// batch (passSkip takes it).
func (q *queue) skipAtFront() bool { return len(q.ready) > 0 && q.ready[0].skip }

// skipsQueued reports whether ready holds a skip batch of records.
func (q *queue) skipsQueued() bool { return q.skipQueued > 0 }

// frontTimestamp is the timestamp of the first record of ready, if any.
func (q *queue) frontTimestamp() (time.Time, bool) {
	if len(q.ready) > 0 && len(q.ready[0].records) > 0 {
		return q.ready[0].records[0].Timestamp, true
	}
	return time.Time{}, false
}

// queuedTo is one past the last offset queued in this epoch (0 before any).
func (q *queue) queuedTo() int64 { return q.lastQueued + 1 }

// queued reports whether offset was queued in this epoch already: a record
// at or below the last one queued is a re-delivery, dropped.
func (q *queue) queued(offset int64) bool { return offset <= q.lastQueued }

// first is the offset of the first record fetched in this epoch, if any.
func (q *queue) first() (int64, bool) { return q.firstFetched, q.firstFetched >= 0 }

// fetched reports whether this epoch has queued a record yet.
func (q *queue) fetched() bool { return q.firstFetched >= 0 }

// logEnd is the log end last seen, or -1.
func (q *queue) logEnd() int64 { return q.highWatermark }

// setLogEnd takes the log end a fetch showed (under read_committed, its
// last stable offset), or the one an earlier epoch last saw.
func (q *queue) setLogEnd(end int64) { q.highWatermark = end }

// raiseLogEnd takes a listed log end, which may be older than one a fetch
// showed since: a log end only moves forward. It reports whether it moved.
func (q *queue) raiseLogEnd(end int64) bool {
	if end <= q.highWatermark {
		return false
	}
	q.highWatermark = end
	return true
}

// push queues rs, records above lastQueued in offset order, as one batch
// (skip: inside a delivered range; control: transaction markers, skipped
// as well, but not counted in skipQueued), and notes its first offset as
// the first fetched if it is.
func (q *queue) push(rs []*kgo.Record, skip, control bool) {
	if len(q.ready) == 0 && q.readyBuf != nil {
		q.ready = q.readyBuf
	}
	had := cap(q.ready)
	q.ready = append(q.ready, rawBatch{records: rs, first: rs[0].Offset, last: rs[len(rs)-1].Offset, logEnd: q.highWatermark, skip: skip || control, control: control})
	if cap(q.ready) != had {
		q.readyBuf = nil
		if cap(q.ready) <= keepEmpty {
			q.readyBuf = q.ready[:0]
		}
	}
	if skip && !control {
		q.skipQueued++
	}
	if q.firstFetched < 0 {
		q.firstFetched = rs[0].Offset
	}
	q.lastQueued = rs[len(rs)-1].Offset
}

// popReady removes and returns the batch at the front of ready.
func (q *queue) popReady() rawBatch {
	rb := q.ready[0]
	q.ready[0] = rawBatch{}
	q.ready = q.ready[1:]
	return rb
}

// passSkip removes and returns the skip batch at the front of ready
// (skipAtFront), counting it out of skipQueued.
func (q *queue) passSkip() rawBatch {
	rb := q.popReady()
	if !rb.control {
		q.skipQueued--
	}
	return rb
}

// drop empties the queue for a drain: the batches of ready were never
// registered, and those of retry stay unresolved in the ledger.
func (q *queue) drop() {
	clear(q.ready) // the kept array (readyBuf) must not hold their records
	q.ready, q.readyBuf = nil, nil
	q.skipQueued = 0
	q.retry = nil
}

// addRetry queues b, registered and unresolved, to go out again: after the
// batches given back (giveBack) and the retries of earlier batches, before
// those of later ones. Offset order, not the order the retries came due
// in: retries due at one instant (their backoff timers fire in any order)
// go out in one order, and the model's schedules replay by their seed.
func (q *queue) addRetry(b *Batch) {
	i := len(q.retry)
	for i > 0 && !q.retry[i-1].unread && retryAfter(q.retry[i-1], b) {
		i--
	}
	q.retry = slices.Insert(q.retry, i, b)
}

// retryAfter reports whether a goes out after b: a later batch, or under
// ordering: key a later hand-out of the same segment (one a batch error
// split), by its first record.
func retryAfter(a, b *Batch) bool {
	if a.seq != b.seq {
		return a.seq > b.seq
	}
	return len(a.raw.records) > 0 && len(b.raw.records) > 0 && a.raw.records[0].Offset > b.raw.records[0].Offset
}

// giveBack queues b, registered and handed out to a read that could not
// return it, to go out before every other retry: the pipeline never saw it.
func (q *queue) giveBack(b *Batch) { q.retry = append([]*Batch{b}, q.retry...) }

// popRetry removes and returns the batch at the front of retry.
func (q *queue) popRetry() *Batch {
	b := q.retry[0]
	q.retry = q.retry[1:]
	return b
}

// enqueue splits the records of one fetch into batches of at most
// maxRecords records and maxBytes bytes (a larger single record is a batch of
// its own) and queues them. Records inside a delivered range of the commit
// this epoch started from go into skip batches of their own, and a batch
// starts at every boundary of the attempts carried from before the epoch,
// so that it lies within one range of them or outside all (attempts.go).
func (p *partState) enqueue(records []*kgo.Record, maxRecords int, maxBytes int64) {
	start, size, skip, control := -1, int64(0), false, false
	flush := func(end int) {
		if start >= 0 && end > start {
			p.queue.push(records[start:end:end], skip, control)
		}
		start, size = -1, 0
	}
	for i, r := range records {
		if p.queue.queued(r.Offset) {
			flush(i)
			continue
		}
		n := int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			n += int64(len(h.Key) + len(h.Value))
		}
		isControl := r.Attrs.IsControl()
		// A transaction marker is never skipped (it is no data), but
		// skipping must see it all the same: its leader epoch can prove
		// the delivered ranges stale as a record's does, and a marker
		// may be all a fetch holds below them.
		covered := p.resume.skips(r) && !isControl
		if start >= 0 && (i-start >= maxRecords || size+n > maxBytes || covered != skip || isControl != control ||
			(p.att.hasCarried() && p.att.cutsAt(r.Offset))) {
			flush(i)
		}
		skip, control = covered, isControl
		if start < 0 {
			start = i
		}
		p.led.noteLeaderEpoch(r.Offset, r.LeaderEpoch)
		size += n
	}
	flush(len(records))
}
