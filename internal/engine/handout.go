package engine

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fetched records come in through onPoll and leave as registered batches
// through serve. Every batch is registered with its partition's tracker here,
// on the owner goroutine, before it is handed out, so no ack can overtake its
// registration.

// serve hands batches to parked reads, round robin over partitions so one
// busy partition cannot starve the others.
func (o *owner) serve() {
	for len(o.parked) > 0 {
		if o.closed {
			o.popParked().reply <- nil
			continue
		}
		if len(o.runQ) == 0 || o.fenceHolds(o.now()) || o.txnHolds() {
			return
		}
		p := o.popRun()
		p.queued = false
		if !p.canHandOut(o.conf.MaxPending) || !p.live() {
			continue
		}
		var b *Batch
		// counted: b's hand-out was counted before, when the gate let it
		// out or when a cancelled read gave it back: it went through the
		// gate already, and gating it again would wait for a commit that
		// may never come (one with no room for its attempts).
		counted := false
		if p.queue.retryLen() > 0 {
			b = p.queue.popRetry()
			p.retryOut()
			counted = b.unread
			if !b.unread {
				b.attempt++
			}
			b.unread = false
		} else {
			if b = p.dlv.next(o, p); b == nil {
				continue // nothing free to go out: an ack schedules p again
			}
			o.pauseAtLimit(p)
			o.lists.gauges.add(p)
		}
		first := p.att.serveFirst() // the epoch's first batch to go out
		switch {
		case b.attempt == 0 && o.deadLetters() && b.prior >= o.conf.MaxAttempts:
			// Tried max_attempts times before this epoch: it goes to the
			// dead-letter topic without another hand-out.
			o.deadLetter(p, b, b.prior)
		case !counted && o.gateHolds(p, b, first):
			o.gate(p, b)
		default:
			o.txnHandedOut(b)
			o.popParked().reply <- b
		}
		// The skip batches now at the front of the ready queue must be
		// registered before the next hand-out pops one.
		p.dlv.admit(o, p)
		o.resumeBelowLimits(p)
		o.schedule(p)
	}
}

// pauseAtLimit pauses p's fetching once its registered batches reach
// max_pending_batches; advance resumes it below the limit.
func (o *owner) pauseAtLimit(p *partState) {
	if o.atLimit(p) && !p.paused && !p.draining {
		p.paused = true
		o.lists.paused.add(p)
		o.lists.gauges.add(p)
		o.cl.PauseFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
	}
}

// resumeBelowLimits resumes p's fetching once its registered batches are
// below max_pending_batches and fewer than pollLowWater batches wait in its
// ready queue. The second bound keeps the queue bounded: the poll loop is
// asked for more without counting a paused partition's queue (askPoll), so
// a partition resumed at once could take a poll asked for while it was
// paused, on top of a full queue, every time it pauses and resumes.
func (o *owner) resumeBelowLimits(p *partState) {
	if p.paused && !o.atLimit(p) && p.queue.readyLen() < pollLowWater && !p.draining {
		p.paused = false
		o.lists.gauges.add(p)
		o.cl.ResumeFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
	}
}

// atLimit reports whether p's fetching must pause: its registered batches
// (under ordering: key, segments) reached max_pending_batches, or a bound of
// its ordering mode was reached (under key, keyPart.atLimit, keyed.go).
func (o *owner) atLimit(p *partState) bool {
	return p.dlv.atLimit(o, p) || p.led.pending() >= o.conf.MaxPending
}

// popParked removes and returns the oldest parked read.
func (o *owner) popParked() *readReq { return popFront(&o.parked) }

// popRun removes and returns the partition at the head of the run queue.
func (o *owner) popRun() *partState { return popFront(&o.runQ) }

// popFront removes and returns the head of the queue q. A short queue
// shifts down rather than losing its head, so it keeps its array: one reader
// parks one read at a time, and a few partitions with data take turns on
// the run queue, and slicing the head off would make the next append grow a
// new array, an allocation per hand-out. A long queue, where a shift would
// cost its length on every pop, slices the head off, and append's doubling
// keeps its growth to an allocation per many pops.
func popFront[T any](q *[]T) T {
	s := *q
	head := s[0]
	var zero T
	if n := len(s); n <= shiftMax {
		copy(s, s[1:])
		s[n-1] = zero
		*q = s[:n-1]
	} else {
		s[0] = zero
		*q = s[1:]
	}
	return head
}

// shiftMax is the longest queue popFront shifts down.
const shiftMax = 16

// schedule puts p on the run queue if it can hand out and is not there yet.
func (o *owner) schedule(p *partState) {
	if !p.queued && p.canHandOut(o.conf.MaxPending) {
		p.queued = true
		o.runQ = append(o.runQ, p)
	}
}

// askPoll gives the poll loop a token while fewer than pollLowWater batches
// are ready to hand out, so the next poll overlaps the pipeline's work and
// the owner buffers a bounded amount of fetched data. Batches of a partition
// that cannot hand out (paused at its limit) do not count: they must not
// keep the other partitions from being fetched.
func (o *owner) askPoll() {
	if o.polls.pollAsked || o.closed {
		return
	}
	ready := 0
	for _, p := range o.runQ {
		if !p.canHandOut(o.conf.MaxPending) {
			continue
		}
		if ready += p.queue.readyLen() + p.queue.retryLen() + p.dlv.pickable()/o.conf.BatchMaxRecords; ready >= pollLowWater {
			return
		}
	}
	select {
	case o.inbox.pollWant <- struct{}{}:
		o.polls.pollAsked = true
	default:
	}
}

// pollLowWater is how many ready batches the owner keeps ahead of the
// pipeline before it asks for another poll.
const pollLowWater = 8

// onPoll queues the records of poll seq. It runs in the poll window, before
// the poller lets a rebalance go on, so it first rewinds the partitions that
// wait for one (stall.go).
func (o *owner) onPoll(seq uint64, fetches kgo.Fetches) {
	o.polls.lastPoll = seq
	o.applyRewinds(seq)
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		p := o.parts[topicPartition{fp.Topic, fp.Partition}]
		if p == nil || p.draining || seq < p.replay.minPoll {
			// Fetched under an assignment that has ended, or before a
			// rewind: the next owner, or the rewound epoch, reads it again.
			// A truncation it reports still holds
			// (onFetchErrBeforeRewind, loss.go).
			if p != nil && !p.draining && fp.Err != nil {
				o.onFetchErrBeforeRewind(p, fp.Err, seq)
			}
			return
		}
		o.lists.gauges.add(p) // the log end, the first offset fetched
		if fp.Err != nil {
			// kgo injects an error as a partition of its own, with no
			// records and every offset zero (HighWatermark 0 is no log
			// end): nothing in it says where the log is.
			if p = o.onFetchErr(p, fp.Err, seq); p == nil || len(fp.Records) == 0 {
				return
			}
		}
		if len(fp.Records) > 0 {
			if p = o.checkFetch(p, &fp.FetchPartition, seq); p == nil {
				return // truncated below what is delivered: rewound
			}
		}
		// The log end, for the lag: under read_committed, the last stable
		// offset (records past it cannot be read yet).
		if end := fp.HighWatermark; end >= 0 && fp.Err == nil {
			if o.conf.ReadCommitted && fp.LastStableOffset >= 0 {
				end = fp.LastStableOffset
			}
			p.queue.setLogEnd(end)
			o.dropSkipsPastEnd(p, fp.HighWatermark)
		}
		if len(fp.Records) > 0 {
			if o.txn.on && p.commits.origin < 0 && !p.commits.hasCommitted {
				p.commits.origin = fp.Records[0].Offset
			}
			p.enqueue(fp.Records, o.conf.BatchMaxRecords, o.conf.BatchMaxBytes)
			p.loss.expectPast(p.queue.queuedTo())
			p.dlv.admit(o, p)
			o.schedule(p)
		}
	})
}

// onWithdraw withdraws a parked read, or takes back a batch that a ReadBatch
// whose context ended could not return. Benthos cancels that context at
// shutdown and drops whatever ReadBatch returns unacknowledged, so such a
// batch must come back here rather than reach the caller. Handled in this
// goroutine before the caller's next read, so the batch goes out again
// first, and not as a new attempt: the pipeline never saw it.
func (o *owner) onWithdraw(w withdrawReq) {
	given := w.given
	if given == nil {
		for i, r := range o.parked {
			if r == w.req {
				o.parked = append(o.parked[:i], o.parked[i+1:]...)
				return
			}
		}
		// Not parked: answered already, and the answer is in the buffer,
		// which no one else reads any more.
		select {
		case given = <-w.req.reply:
		default:
		}
		if given == nil {
			return
		}
	}
	o.txnSettled(given, nil, false)
	p := given.part
	if !p.live() {
		return // the epoch ended; the next owner replays it
	}
	// Still registered, not in the pipeline: a drain does not wait for it.
	p.waitRetry()
	if p.draining {
		o.checkDrains()
		return
	}
	given.unread = true
	p.queue.giveBack(given)
	o.schedule(p)
}
