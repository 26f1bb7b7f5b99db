package engine

import (
	"context"
	"time"
)

// Rebalance callbacks run on kgo's group goroutine. With BlockRebalanceOnPoll
// they never overlap the window between a poll returning and the owner
// queueing its records, so no record fetched under an old assignment can be
// queued under a new one. Every wait here is bounded: a callback that hangs
// gets the member kicked from the group.

func (o *owner) assigned(assigned map[string][]int32) {
	req := assignReq{tps: flatten(assigned), done: make(chan struct{})}
	select {
	case o.inbox.assignCh <- req:
		<-req.done
	case <-o.stopped():
	}
}

// revokeOrLose, on a revoke, drains the revoked partitions' in-flight
// batches for at most drain_timeout, then commits their final watermark
// before the rebalance goes on, so the next owner starts where this one
// stopped.
//
// The interleaving that matters: (1) kgo calls us after the last poll has
// released the rebalance; (2) the owner marks the partitions draining, drops
// their unregistered batches and stops handing them out; (3) acks keep
// arriving and advancing trackers; (4) when every registered batch is
// resolved, or drain_timeout passes, the owner computes the final
// watermarks, drops the partitions (later acks are late and ignored) and
// replies; (5) we commit synchronously here, on kgo's goroutine.
//
// On a loss it drops the partitions without committing: another member may
// already own them, and a commit now could move their offset backwards.
func (o *owner) revokeOrLose(ctx context.Context, tps map[string][]int32, lost bool) {
	req := revokeReq{tps: flatten(tps), lost: lost, reply: make(chan commitSet, 1)}
	select {
	case o.inbox.revokeCh <- req:
	case <-o.stopped():
		return
	}
	var final commitSet
	select {
	case final = <-req.reply:
	case <-o.stopped():
		return
	}
	if lost || final.empty() {
		return
	}
	// What is left of the rebalance budget after the drain goes to the commit.
	budget := o.conf.RebalanceTimeout - o.conf.DrainTimeout
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	if err := o.finalCommit(cctx, final, "revoke"); err != nil {
		o.log.Warnf("%v", err)
	}
}

// forget ends p's epoch: later acks for it are late. Its fetch is resumed,
// because kgo keeps a partition paused across a revoke, and a partition
// assigned back to this member must be fetched again (start_offset:
// committed re-pauses it on assignment if it still has no commit).
func (o *owner) forget(p *partState) {
	delete(o.lost.accepted, p.tp)
	o.endEpoch(p)
	o.m.retire(p)
}

// endEpoch ends p's epoch without retiring its gauges: for a replay in
// place, whose next epoch goes on showing them.
func (o *owner) endEpoch(p *partState) {
	if p.live() {
		delete(o.parts, p.tp)
		p.ended = true
	}
	o.txnEpochEnds(p)
	p.cancelDeadLetters()
	o.cl.ResumeFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
}

func flatten(m map[string][]int32) []topicPartition {
	var out []topicPartition
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, topicPartition{t, p})
		}
	}
	return out
}

// onRevoke starts a drain of the named partitions (or drops them, if lost).
func (o *owner) onRevoke(r revokeReq) {
	if o.txn.on {
		o.txnRevoke(r)
		return
	}
	var parts []*partState
	for _, tp := range r.tps {
		p := o.parts[tp]
		if p == nil {
			continue
		}
		if r.lost {
			o.cancelSuccession(p)
			o.forget(p)
			o.log.Warnf("kafka_watermark: lost %s/%d: dropped without a commit; its in-flight acks are ignored", tp.topic, tp.partition)
			continue
		}
		o.cancelSuccession(p)
		o.beginDrain(p)
		parts = append(parts, p)
	}
	if r.lost || o.closed {
		r.reply <- commitSet{}
		return
	}
	o.startDrain(&drain{parts: parts, reply: r.reply}, o.conf.DrainTimeout)
}

func (o *owner) onAssign(tps []topicPartition) {
	now := time.Now()
	for _, tp := range tps {
		if old := o.parts[tp]; old != nil {
			// Assigned again without a revoke in between: the old epoch
			// ends here and its acks become late.
			o.forget(old)
		}
		p := o.newEpoch(tp, now)
		if ms, ok := o.queries.retention[tp.topic]; ok {
			p.loss.setRetention(ms)
		}
		o.parts[tp] = p
		o.log.Debugf("kafka_watermark: assigned %s/%d", tp.topic, tp.partition)
	}
}
