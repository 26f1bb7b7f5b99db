package engine

import (
	"fmt"
	"strconv"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/errclass"

	"github.com/watermark-connect/watermark-connect/tracker"
)

// An ack reaches the owner as an ackMsg. A nack with retries left goes back
// to its partition's retry queue after a backoff, still registered and still
// holding the watermark; any other verdict is final and is resolved in the
// tracker, which then advances.

func (o *owner) onAck(a ackMsg) {
	b, p := a.b, a.b.part
	if !p.live() {
		o.txnSettled(b, a.err, true)
		o.m.lateAcks.Incr(1, p.labels[:]...)
		return
	}
	if a.err != nil {
		if b.nackedAt.IsZero() {
			b.nackedAt = time.Now()
		}
		b.lastErr = errclass.Class(a.err)
		if a.failed != nil {
			o.noteAccepted(p, b, a.failed)
		}
		a.failed = p.dlv.nacked(o, b, a.failed)
		if _, head, _ := p.stallInfo(); head == b {
			o.markDirty(p) // the stall provenance changed: commit it
			o.lists.gauges.add(p)
		}
	}
	deadLetterNow := a.err != nil && o.deadLetterNow(p, b)
	if deadLetterNow {
		// Its dead-letter write goes into the open transaction, with
		// whatever the sink accepted of it: no abort (txn.go).
		o.txnSettled(b, nil, false)
	} else {
		o.txnSettled(b, a.err, false)
	}
	if deadLetterNow {
		if a.failed != nil {
			b.only = a.failed
		}
		o.deadLetter(p, b, b.tried())
		return
	}
	if a.err != nil && o.txn.on {
		// The open transaction aborts (txnSettled) and every partition
		// goes back to its last commit, this batch's included: it is
		// delivered again from there, its attempts kept, not retried
		// here, not failed for good.
		o.log.Warnf("kafka_watermark: batch %s/%d offsets %d-%d nacked (attempt %d): exactly_once aborts the open transaction, and every partition is read again from its last commit: %v",
			p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, b.tried(), a.err)
		return
	}
	if a.err != nil && o.retriesLeft(b) && !p.draining {
		backoff := o.conf.NackBackoff << min(b.attempt, 30)
		if backoff > o.conf.NackMaxBackoff || backoff <= 0 {
			backoff = o.conf.NackMaxBackoff
		}
		// A plain nack of a retry that a batch error narrowed fails what
		// that retry held: the records the sink accepted before stay out.
		if a.failed != nil {
			b.only = a.failed
		}
		what := "all its records"
		if b.only != nil {
			what = fmt.Sprintf("the %d record(s) the batch error named", len(b.only))
		}
		o.log.Warnf("kafka_watermark: batch %s/%d offsets %d-%d nacked (attempt %d of %s), retrying %s in %v: %v",
			p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, b.attempt+1, o.attemptsAllowed(), what, backoff, a.err)
		p.waitRetry()
		now := o.now()
		o.retries.schedule(b, now.Add(backoff), now)
		return
	}
	o.resolve(b, a.err)
}

// retriesLeft reports whether a nacked b is delivered again in this process.
// With a dead-letter topic, a batch that reached max_attempts has none.
func (o *owner) retriesLeft(b *Batch) bool {
	if o.deadLetters() && b.tried() >= o.conf.MaxAttempts {
		return false
	}
	return o.conf.NackRetries < 0 || b.attempt < o.conf.NackRetries
}

// attemptsAllowed says how many deliveries a batch gets, for the log.
func (o *owner) attemptsAllowed() string {
	if o.conf.NackRetries < 0 {
		return "unlimited"
	}
	return strconv.Itoa(o.conf.NackRetries + 1)
}

// resolve records the final verdict on a batch and advances its partition,
// as its partition's delivery does it (delivery).
func (o *owner) resolve(b *Batch, err error) { b.part.dlv.resolve(o, b, err) }

// resolveBatch records the final verdict on a batch in its partition's
// ledger and advances the partition: a batch of ordering: none, and any
// registered batch that is not a hand-out of records picked by key.
func (o *owner) resolveBatch(b *Batch, err error) {
	p := b.part
	switch out := p.led.resolve(b, err == nil); out {
	case tracker.Applied:
		if err == nil {
			o.markDirty(p)
		}
		if err != nil {
			o.log.Errorf("kafka_watermark: batch %s/%d offsets %d-%d failed after %d attempt(s): %v",
				p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, b.attempt+1, err)
		}
	case tracker.Unregistered:
		// Registration happens in this goroutine before a batch leaves, so
		// an ack can never overtake it: this is a bug, reported, not fatal.
		o.log.Errorf("kafka_watermark: internal error: ack for unregistered batch %d of %s/%d", b.seq, p.tp.topic, p.tp.partition)
		return
	default:
		// Duplicate or AlreadyAdvanced: the once-guard makes this
		// unreachable through the ack function; count it all the same.
		o.m.dupAcks.Incr(1, p.labels[:]...)
		return
	}
	o.advance(p)
	if p.draining {
		o.checkDrains()
	}
	o.schedule(p)
}

// advance moves p's watermark over its delivered prefix, resumes its fetch
// below the pending limit, and says once, loudly, when the partition stalls.
// Every change to p's tracker ends here, so this is where p goes on the
// owner's lists: dirty (passSkipped, in resume.go, sets p.dirty itself
// before it calls advance), gauges and failed.
func (o *owner) advance(p *partState) {
	wasStalled := p.led.headFailed()
	if wm, moved := p.led.advance(o.now()); moved {
		p.dirty = true
		if p.replay.state.count > 0 && wm > p.replay.state.offset {
			p.replay.state = replayState{} // the replay got past its offset
		}
	}
	if p.dirty {
		o.lists.dirty.add(p)
	}
	o.lists.gauges.add(p)
	if !wasStalled && p.led.headFailed() {
		o.lists.failed.add(p)
		o.logStall(p)
	}
	o.resumeBelowLimits(p)
}

// logStall names the failed batch at the head of a stalled partition: where
// its commits stop and since when.
func (o *owner) logStall(p *partState) {
	last, _ := p.led.failedThrough()
	stall, _, _ := p.stallInfo()
	since := stall.Since
	wm, _ := p.commitBase()
	then := "until a restart or a reassignment replays it (stall_replay_after is 0s)"
	if o.conf.StallReplayAfter > 0 {
		then = "until it is replayed in place, after stall_replay_after"
	}
	o.log.Errorf("kafka_watermark: partition %s/%d stalled since %s at its failed batch (through offset %d): commits stop before offset %d %s",
		p.tp.topic, p.tp.partition, since.UTC().Format(time.RFC3339), last, wm, then)
}

func (o *owner) onRetryDue(b *Batch) {
	p := b.part
	if !p.live() {
		return // the epoch ended; the batch is replayed by the next owner
	}
	if p.draining {
		return // a drain does not wait for retries: the batch stays unresolved
	}
	p.queue.addRetry(b)
	o.schedule(p)
}
