package engine

// queue holds one epoch's batches waiting to go out: fetched batches not
// yet registered (ready), in offset order, and registered ones whose retry
// backoff has passed (retry), which go first: they hold the watermark.
//
// Invariants: every batch of ready lies above lastQueued's predecessors and
// at or below lastQueued, in offset order; skipQueued counts the skip
// batches of ready that are not transaction markers. Owned by the owner
// goroutine, inside its partState; enqueue (assignment.go) and the hand-out
// (handout.go) fill and empty it.
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
