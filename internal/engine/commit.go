package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// commitJob is one periodic commit, run by the committer goroutine because
// kgo's CommitOffsets may block while a rebalance or a sync commit is under
// way, and the owner must never block. parts holds each partition of set,
// the epoch it was planned in and what its success means for its state.
type commitJob struct {
	set   commitSet
	parts []jobPart
	// abort, under exactly once, makes the job an abort of the open
	// transaction, and says why; reason is its label (txn.go).
	abort, reason string
}

type jobPart struct {
	p    *partState
	plan planned
}

// commit starts a periodic commit of every live partition whose watermark or
// delivered ranges changed what the broker holds. One periodic commit is in
// flight at a time; a partition left out by a failure is planned again on
// the next tick. It walks the dirty list only, so a tick costs what moved
// since the last one, whatever is assigned.
func (o *owner) commit() {
	if o.commits.committing || o.closed || len(o.lists.dirty.parts) == 0 {
		return
	}
	if o.txn.on && (!o.txn.barrier || o.txn.out > 0 || o.txn.abort != "" || o.txn.ending) {
		// Under exactly once a commit is a transaction's end, which
		// only txnStep makes, with the pipeline empty.
		o.txnRaise()
		return
	}
	job := commitJob{parts: make([]jobPart, 0, len(o.lists.dirty.parts))}
	metaBytes := 0
	o.lists.dirty.keep(func(p *partState) bool {
		// A draining partition's final commit is the drain's, and its
		// epoch ends with the drain: it leaves the list for good.
		if !p.live() || p.draining || !p.dirty {
			return false
		}
		p.dirty = false
		c, ok := o.planChange(p, false)
		if !ok {
			// Nothing is sent, and no commit of p is in flight (one
			// periodic commit at a time, and none now): the broker holds
			// all that a commit of p can carry, and what the gate waits
			// for is not in it. It will not come.
			o.ungate(p, nil, true)
			return false
		}
		c.gated = p.att.gatedNow()
		job.parts = append(job.parts, jobPart{p: p, plan: c})
		metaBytes += len(c.meta)
		return false
	})
	if len(job.parts) == 0 {
		return
	}
	if metaBytes > requestMetaBudget {
		plans := make(map[topicPartition]*planned, len(job.parts))
		for i := range job.parts {
			plans[job.parts[i].p.tp] = &job.parts[i].plan
		}
		o.budgetMeta(plans) // cuts the plans it holds in place
	}
	job.set = sizedSet(job.parts[0].p.tp.topic, len(job.parts), o.conf.CommitMetadata)
	for i := range job.parts {
		p, c := job.parts[i].p, &job.parts[i].plan
		o.noteCut(p, *c)
		job.set.add(p.tp, c.eo, c.meta, o.conf.CommitMetadata)
		p.commits.committing, p.commits.committingMeta = c.eo.Offset, c.meta
		p.commits.handedSinceSnap = 0
	}
	o.commits.committing = true
	o.inbox.commitJobs <- job // capacity 1 and one job at a time: never blocks
}

// sizedSet returns an empty commitSet with room for n partitions, of topic
// for the most part, so a large commit does not grow its maps step by step.
func sizedSet(topic string, n int, withMeta bool) commitSet {
	s := commitSet{offsets: epochOffsets{topic: make(map[int32]kgo.EpochOffset, n)}}
	if withMeta {
		s.meta = make(map[topicPartition]string, n)
	}
	return s
}

// onCommitDone applies a periodic commit's result. A failed commit changes
// no tracker: the partition is planned again next tick. The result of an
// epoch that has ended since changes nothing but counters.
func (o *owner) onCommitDone(c commitDone) {
	if c.abort != "" {
		o.txnAbortDone(c)
		return
	}
	o.commits.committing = false
	for _, w := range o.commits.commitWaiters {
		close(w)
	}
	o.commits.commitWaiters = nil
	o.m.commitLatency.Timing(c.took.Nanoseconds())
	o.noteMetaRefused(c.result.metaRefused)
	if o.txn.on && c.result.err != nil {
		for i := range c.parts {
			jp := &c.parts[i]
			o.m.countCommitOf(jp.p.tp, jp.p.labels[:], jp.plan.eo, c.result.err)
			if jp.p.live() {
				jp.p.commits.committing, jp.p.commits.committingMeta = -1, ""
			}
		}
		o.txnCommitDone(c)
		return
	}
	var failed []string
	for i := range c.parts {
		jp := &c.parts[i]
		p, tp, eo := jp.p, jp.p.tp, jp.plan.eo
		err := c.result.err
		if err == nil {
			err = c.result.errs[tp]
		}
		live := p.live()
		if live {
			p.commits.committing, p.commits.committingMeta = -1, ""
		}
		if msg := o.m.countCommitOf(tp, p.labels[:], eo, err); msg != "" {
			failed = append(failed, msg)
			if live {
				o.markDirty(p)
			}
			continue
		}
		if !live {
			continue
		}
		p.commits.committed, p.commits.hasCommitted = eo.Offset, true
		p.commits.committedMeta = "" // what set.meta holds: "" without commit_metadata
		p.commits.attempts = nil
		if c.set.meta != nil {
			p.commits.committedMeta = jp.plan.meta
			p.commits.attempts = jp.plan.attempts
		}
		if _, refused := c.result.metaRefused[tp]; refused {
			// Committed without its ranges: send them again, smaller.
			p.commits.committedMeta = ""
			p.commits.attempts = nil
			o.markDirty(p)
		}
		var noRoom []*Batch
		if jp.plan.attCut {
			noRoom = jp.plan.gated
		}
		o.ungate(p, noRoom, false)
		p.commits.exposure = jp.plan.exposure + p.commits.handedSinceSnap
		o.m.committed.Set(eo.Offset, p.labels[:]...)
		o.lists.gauges.add(p) // the exposure, the lag's resume point
	}
	if len(failed) > 0 {
		slices.Sort(failed) // the results come from maps
		o.log.Warnf("kafka_watermark: commit failed for %d partition(s), retrying next period: %s", len(failed), strings.Join(failed, "; "))
	}
	if o.txn.on {
		o.txnCommitDone(c)
	}
	if o.commits.again {
		o.commits.again = false
		o.commit()
	}
}

// noteMetaRefused lowers the metadata size after a broker refused some as
// too large, and says so once per refusal. It halves it, but not below
// commitmeta.MinCommitBudget (room for a stall's mark) until the broker
// refuses that much too (its offset.metadata.max.bytes is below 61): then
// a stalled commit whose mark does not fit carries no metadata at all,
// never a header that says it is not stalled.
func (o *owner) noteMetaRefused(lengths map[topicPartition]int) {
	for _, n := range lengths {
		if n <= o.commits.metaMax {
			o.commits.metaMax = n / 2
			if n > commitmeta.MinCommitBudget {
				o.commits.metaMax = max(n/2, commitmeta.MinCommitBudget)
			}
			o.log.Warnf("kafka_watermark: the broker refused %d bytes of commit metadata as too large (its offset.metadata.max.bytes is below %s %d); committed again without it, and from now on at most %d bytes",
				n, FieldCommitMetadataMaxBytes, o.conf.CommitMetadataMaxBytes, o.commits.metaMax)
		}
	}
}

// finalCommit commits a revoke's or a close's final offsets and waits, on
// the caller's goroutine (a rebalance callback or Close), never the owner's.
// The epochs have ended, so no gauge is set: a partition this member no
// longer owns reads 0.
func (o *owner) finalCommit(ctx context.Context, set commitSet, why string) error {
	if set.empty() {
		return nil
	}
	if set.after != nil {
		select {
		case <-set.after:
		case <-ctx.Done():
			// The commit below fails at once; the next owner
			// replays from the last commit that landed.
		case <-o.stopped():
		}
	}
	start := time.Now()
	res := commitAndWait(ctx, o.cl, set, true)
	o.m.commitLatency.Timing(time.Since(start).Nanoseconds())
	var failed []string
	eachResult(set.offsets, res.errs, res.err, func(tp topicPartition, eo kgo.EpochOffset, err error) {
		if msg := o.m.countCommit(tp, eo, err); msg != "" {
			failed = append(failed, msg)
		}
	})
	if len(failed) > 0 {
		// Nothing is lost: the next owner resumes from the last successful
		// commit and replays the rest. Sorted: the results come from maps.
		slices.Sort(failed)
		return fmt.Errorf("kafka_watermark: %s commit failed for %d partition(s), they will be replayed from their last commit: %s",
			why, len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// commitState is what the broker holds for one epoch, the commit in flight,
// and the replay exposure. Invariant: committing is -1 when no periodic
// commit of this epoch is in flight; committed only moves with an
// acknowledged commit of this epoch (one that goes back after a truncation
// is made by a new epoch, loss.go). Owned by the owner goroutine, inside
// its partState.
type commitState struct {
	// committed is the last offset the broker acknowledged for this epoch,
	// with committedMeta its metadata; committing and committingMeta are
	// the commit in flight (committing is -1 when there is none).
	committed      int64
	hasCommitted   bool
	committedMeta  string
	committing     int64
	committingMeta string
	// attempts are the attempts the broker holds in committedMeta
	// (attempts.go), what the gate waits for.
	attempts []commitmeta.Attempts
	// origin, under exactly once, is where this partition's lineage
	// started fetching when the group held no commit for it: where an
	// abort goes back to before the first commit (-1: unknown).
	origin int64
	// exposure is the replay exposure (records a crash now would deliver
	// again). When the commit in flight succeeds it becomes that commit's
	// planned exposure plus handedSinceSnap, what was handed out since the
	// commit was planned.
	exposure, handedSinceSnap int64
}

// handedOut counts n records handed out for the first time.
func (c *commitState) handedOut(n int64) {
	c.exposure += n
	c.handedSinceSnap += n
}

// inheritFrom takes what the group holds from old, the epoch this one
// follows in place (a replay or a truncation).
func (c *commitState) inheritFrom(old commitState) {
	c.committed, c.hasCommitted, c.committedMeta = old.committed, old.hasCommitted, old.committedMeta
	c.origin = old.origin
	c.exposure = old.exposure
}

// commitLoop is the owner's side of the periodic commits. Owned by the
// owner goroutine.
type commitLoop struct {
	// committing: a periodic commit is in flight (one at a time); again:
	// another is wanted as soon as it ends (commitSoon).
	committing, again bool
	// commitWaiters are closed when the periodic commit in flight has
	// its answer (afterCommit).
	commitWaiters []chan struct{}
	// metaMax is the most bytes of metadata one partition's commit
	// carries: commit_metadata_max_bytes, halved each time a broker
	// refuses metadata as too large (its offset.metadata.max.bytes is
	// smaller).
	metaMax int
	// member names this client in stall provenance (memberName).
	member string
}
