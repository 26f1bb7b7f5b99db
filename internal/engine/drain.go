package engine

import (
	"fmt"
	"time"
)

// drain is a revoke waiting for its partitions' in-flight batches, or the
// final step of a close.
type drain struct {
	parts []*partState
	reply chan commitSet
	timer *time.Timer // drain_timeout
	// next, for the drain before an epoch's successor (drainThen), makes
	// the successor: such a drain ends in it, not a reply.
	next func(old *partState)
}

// onClose applies the acknowledgements already queued and ends every
// partition's epoch, then refuses all further work. It replies with the
// final watermark of every partition, those of revokes still draining
// included, and hands Close the replies of those revokes: they get nothing to
// commit, and only after Close's own commit. See Engine.Close for why it does
// not wait for unresolved batches.
//
// The interleaving this avoids: (1) a revoke drains partition P and waits;
// (2) Close commits every partition; (3) the revoke's drain timer fires and
// the revoke commits P again, after Close, from a member that has left. Here
// the drain's timer is stopped and its reply held by Close, so (3) cannot
// happen, and the revoke callback returns at once when Close answers it, so
// leaving the group does not wait for drain_timeout.
func (o *owner) onClose(r closeReq) {
	for queued := true; queued; {
		select {
		case a := <-o.inbox.ackCh:
			o.onAck(a)
		default:
			queued = false
		}
	}
	var held []chan commitSet
	for _, d := range o.drains {
		d.timer.Stop()
		if d.next == nil {
			held = append(held, d.reply)
		}
	}
	o.polls.rewinds = nil
	o.drains = nil
	var parts []*partState
	for _, p := range o.parts {
		o.beginDrain(p)
		parts = append(parts, p)
	}
	var abort string
	if o.txn.on {
		// The last transaction commits the final plan only if nothing it
		// may hold is unsettled or failed, and no end is under way whose
		// outcome the plan would assume (txn.go).
		switch {
		case o.txn.abort != "":
			abort = o.txn.abort
		case o.txn.out > 0:
			abort = fmt.Sprintf("closing with %d batch(es) still in the pipeline", o.txn.out)
		case o.commits.committing || o.txn.ending:
			abort = "closing while a transaction was ending"
		}
	}
	final := o.planFinalCommits(parts, true)
	if abort != "" {
		final = commitSet{}
	}
	o.closed = true
	r.reply <- closeReply{final: final, held: held, abortTxn: abort}
}

// beginDrain stops handing out p and drops its unregistered batches.
// Batches queued for a retry are not in the pipeline: they stay unresolved
// (and counted in retrying), so the watermark stops before them.
func (o *owner) beginDrain(p *partState) {
	p.draining = true
	p.queue.drop()
}

func (o *owner) startDrain(d *drain, timeout time.Duration) {
	o.drains = append(o.drains, d)
	d.timer = time.AfterFunc(timeout, func() {
		select {
		case o.inbox.drainDone <- d:
		case <-o.stopped():
		}
	})
	o.checkDrains()
}

// checkDrains finishes every drain whose partitions have no batch left in
// the pipeline.
func (o *owner) checkDrains() {
	for _, d := range append([]*drain(nil), o.drains...) {
		done := true
		for _, p := range d.parts {
			if p.inPipeline() > 0 {
				done = false
				break
			}
		}
		if done {
			o.finishDrain(d)
		}
	}
}

// finishDrain ends a revoke's drain, whether it completed or timed out; the
// second of the two (the timer firing late), or a drain that Close answered,
// finds it gone and does nothing.
func (o *owner) finishDrain(d *drain) {
	for i, x := range o.drains {
		if x == d {
			o.drains = append(o.drains[:i], o.drains[i+1:]...)
			d.timer.Stop()
			if d.next != nil {
				d.next(d.parts[0])
			} else {
				d.reply <- o.planFinalCommits(d.parts, false)
			}
			return
		}
	}
}

// planFinalCommits plans the final commits of parts, a drained revoke's or
// a close's: those that would change what the broker holds. Then it ends
// the parts' epochs, so that later acks are late.
func (o *owner) planFinalCommits(parts []*partState, closing bool) commitSet {
	var final commitSet
	plans := map[topicPartition]*planned{}
	for _, p := range parts {
		if c, ok := o.planChange(p, true); ok {
			plans[p.tp] = &c
		}
	}
	o.budgetMeta(plans)
	for _, p := range parts {
		if c := plans[p.tp]; c != nil {
			o.noteCut(p, *c)
			final.add(p.tp, c.eo, c.meta, o.conf.CommitMetadata)
		}
		if n := p.inPipeline(); n > 0 {
			wm, _ := p.led.watermark()
			if closing {
				o.log.Debugf("kafka_watermark: shutdown of %s/%d with %d batch(es) the pipeline did not acknowledge; committing through offset %d, the rest is replayed",
					p.tp.topic, p.tp.partition, n, wm)
			} else {
				o.log.Warnf("kafka_watermark: drain of %s/%d timed out with %d batch(es) unacknowledged; committing through offset %d, the rest is replayed by the next owner",
					p.tp.topic, p.tp.partition, n, wm)
			}
		}
		o.forget(p)
	}
	if !final.empty() {
		final.after = o.afterCommit()
	}
	return final
}

// afterCommit returns a channel closed when the periodic commit in flight
// has its answer, or nil when none is in flight.
func (o *owner) afterCommit() <-chan struct{} {
	if !o.commits.committing {
		return nil
	}
	c := make(chan struct{})
	o.commits.commitWaiters = append(o.commits.commitWaiters, c)
	return c
}
