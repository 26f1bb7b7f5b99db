package engine

import "github.com/twmb/franz-go/pkg/kgo"

// queue holds one epoch's batches waiting to go out: fetched batches not
// yet registered (ready), in offset order, and registered ones whose retry
// backoff has passed (retry), which go first: they hold the watermark.
//
// Invariants: every batch of ready lies above lastQueued's predecessors and
// at or below lastQueued, in offset order; skipQueued counts the skip
// batches of ready that are not transaction markers. Owned by the owner
// goroutine, inside its partState; enqueue (below) fills it, and the
// hand-out (serve, handout.go) or, under ordering: key, the admission of
// segments (keyPart.admit, keyed.go) empties it.
type queue struct {
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
	// skipQueued counts the skip batches in ready.
	skipQueued int
	// firstFetched is the offset of the first record fetched, or -1;
	// highWatermark the log end seen in the last fetch, or -1.
	firstFetched  int64
	highWatermark int64
}

// popReady removes and returns the batch at the front of ready.
func (q *queue) popReady() rawBatch {
	rb := q.ready[0]
	q.ready[0] = rawBatch{}
	q.ready = q.ready[1:]
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
			rs := records[start:end:end]
			if len(p.queue.ready) == 0 && p.queue.readyBuf != nil {
				p.queue.ready = p.queue.readyBuf
			}
			had := cap(p.queue.ready)
			p.queue.ready = append(p.queue.ready, rawBatch{records: rs, first: rs[0].Offset, last: rs[len(rs)-1].Offset, logEnd: p.queue.highWatermark, skip: skip || control, control: control})
			if cap(p.queue.ready) != had {
				p.queue.readyBuf = nil
				if cap(p.queue.ready) <= keepEmpty {
					p.queue.readyBuf = p.queue.ready[:0]
				}
			}
			if skip && !control {
				p.queue.skipQueued++
			}
			p.queue.lastQueued = rs[len(rs)-1].Offset
		}
		start, size = -1, 0
	}
	for i, r := range records {
		if r.Offset <= p.queue.lastQueued {
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
		covered := p.skipping(r) && !isControl
		if start >= 0 && (i-start >= maxRecords || size+n > maxBytes || covered != skip || isControl != control ||
			(len(p.att.carried) > 0 && p.att.cutsAt(r.Offset))) {
			flush(i)
		}
		skip, control = covered, isControl
		if start < 0 {
			start = i
			if p.queue.firstFetched < 0 {
				p.queue.firstFetched = r.Offset
			}
		}
		p.led.noteLeaderEpoch(r.Offset, r.LeaderEpoch)
		size += n
	}
	flush(len(records))
}
