package plugin

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Rebalance callbacks run on kgo's group goroutine. With BlockRebalanceOnPoll
// they never overlap the window between a poll returning and the owner
// queueing its records, so no record fetched under an old assignment can be
// queued under a new one. Every wait here is bounded: a callback that hangs
// gets the member kicked from the group.

func (in *Input) onAssigned(o *owner, assigned map[string][]int32) {
	req := assignReq{tps: flatten(assigned), done: make(chan struct{})}
	select {
	case o.assignCh <- req:
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
// released the rebalance; (2) the owner marks the partitions revoking, drops
// their unregistered batches and stops handing them out; (3) acks keep
// arriving and advancing trackers; (4) when every registered batch is
// resolved, or drain_timeout passes, the owner computes the final
// watermarks, drops the partitions (later acks are late and ignored) and
// replies; (5) we commit synchronously here, on kgo's goroutine.
//
// On a loss it drops the partitions without committing: another member may
// already own them, and a commit now could move their offset backwards.
func (in *Input) revokeOrLose(ctx context.Context, o *owner, tps map[string][]int32, lost bool) {
	req := revokeReq{tps: flatten(tps), lost: lost, reply: make(chan map[string]map[int32]kgo.EpochOffset, 1)}
	select {
	case o.revokeCh <- req:
	case <-o.stopped():
		return
	}
	var offsets map[string]map[int32]kgo.EpochOffset
	select {
	case offsets = <-req.reply:
	case <-o.stopped():
		return
	}
	if lost || len(offsets) == 0 {
		return
	}
	// What is left of the rebalance budget after the drain goes to the commit.
	budget := in.conf.rebalanceTO - in.conf.drainTimeout
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	if err := o.finalCommit(cctx, offsets, "revoke"); err != nil {
		in.log.Warnf("%v", err)
	}
}

// forget ends p's epoch: later acks for it are late. Its fetch is resumed,
// because kgo keeps a partition paused across a revoke, and a partition
// assigned back to this member must be fetched again (start_offset:
// committed re-pauses it on assignment if it still has no commit).
func (o *owner) forget(p *partState) {
	if o.parts[p.tp] == p {
		delete(o.parts, p.tp)
	}
	o.m.retire(p)
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
	var parts []*partState
	for _, tp := range r.tps {
		p := o.parts[tp]
		if p == nil {
			continue
		}
		if r.lost {
			o.forget(p)
			o.log.Warnf("kafka_watermark: lost %s/%d: dropped without a commit; its in-flight acks are ignored", tp.topic, tp.partition)
			continue
		}
		o.beginDrain(p)
		parts = append(parts, p)
	}
	if r.lost || o.closed {
		r.reply <- nil
		return
	}
	o.startDrain(&drain{parts: parts, reply: r.reply}, o.conf.drainTimeout)
}

// onClose applies the acknowledgements already queued, replies with every
// partition's final watermark, and then refuses all further work. See
// Input.Close for why it does not wait for unresolved batches.
func (o *owner) onClose(r closeReq) {
	for queued := true; queued; {
		select {
		case a := <-o.ackCh:
			o.onAck(a)
		default:
			queued = false
		}
	}
	var parts []*partState
	for _, p := range o.parts {
		o.beginDrain(p)
		parts = append(parts, p)
	}
	o.completeDrain(&drain{parts: parts, reply: r.reply, close: true})
}

// beginDrain stops handing out p and drops its unregistered batches.
// Batches queued for a retry are not in the pipeline: they stay unresolved
// (and counted in retrying), so the watermark stops before them.
func (o *owner) beginDrain(p *partState) {
	p.revoking = true
	p.ready = nil
	p.retry = nil
}

func (o *owner) startDrain(d *drain, timeout time.Duration) {
	o.drains = append(o.drains, d)
	d.timer = time.AfterFunc(timeout, func() {
		select {
		case o.drainDone <- d:
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
			if p.unresolved > p.retrying {
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
// second of the two (the timer firing late) finds it gone and does nothing.
func (o *owner) finishDrain(d *drain) {
	for i, x := range o.drains {
		if x == d {
			o.drains = append(o.drains[:i], o.drains[i+1:]...)
			d.timer.Stop()
			o.completeDrain(d)
			return
		}
	}
}

// completeDrain replies with the final watermarks of a drain's partitions
// and ends their epoch.
func (o *owner) completeDrain(d *drain) {
	offsets := map[topicPartition]int64{}
	for _, p := range d.parts {
		if wm, ok := p.tracker.Watermark(); ok && (!p.hasCommitted || wm > p.committed) {
			offsets[p.tp] = wm
		}
		if n := p.unresolved - p.retrying; n > 0 {
			wm, _ := p.tracker.Watermark()
			if d.close {
				o.log.Debugf("kafka_watermark: shutdown of %s/%d with %d batch(es) the pipeline did not acknowledge; committing through offset %d, the rest is replayed",
					p.tp.topic, p.tp.partition, n, wm)
			} else {
				o.log.Warnf("kafka_watermark: drain of %s/%d timed out with %d batch(es) unacknowledged; committing through offset %d, the rest is replayed by the next owner",
					p.tp.topic, p.tp.partition, n, wm)
			}
		}
		o.forget(p)
	}
	if d.close {
		o.closed = true
	}
	d.reply <- toEpochOffsets(offsets)
}
