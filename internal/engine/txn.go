package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/txn"
)

// Exactly once (exactly_once: true): the input's client is transactional
// (internal/txn), the output bound to its group produces inside the open
// transaction, and every commit of the group's offsets is that
// transaction's commit. The owner keeps one rule, from which the
// guarantee follows:
//
//	A transaction ends only when every batch handed out has settled
//	(acknowledged, or not), and nothing is handed out from then until it
//	has ended. It commits only if no batch failed while it was open and
//	no batch of an ended epoch settled in it.
//
// Why that is enough, whatever the pipeline does between the input and the
// output (split, archive, branch, drop, max_in_flight above 1, batching):
// every record of the output in transaction T was written by a write that
// ended before T did (the gate, internal/txn), for messages that came from
// batches handed out before T's end began. Benthos acknowledges an input
// batch only when every message made from it was written (or dropped), so
// when all those batches settled, each is either acknowledged, and T's
// plan (the watermark and the delivered ranges, planned after they
// settled) commits it, or failed, and T aborts. A batch acknowledged in T
// had every output written by then, in T or in an earlier transaction
// that committed (an earlier abort rewound its partition and ended the
// epoch, so its acknowledgement would be late, which aborts T). So T holds
// no output whose source it or an earlier commit does not commit, and
// commits no source whose outputs are not in it or earlier: one input
// batch's outputs cannot straddle two transactions, because no
// transaction ends while it is in the pipeline. A processor that fails
// one half of a split batch after the other half was written nacks the
// batch: T aborts and the half written is discarded with it.
//
// What the rule costs: the pipeline empties at each end (every
// commit_period), and a nack aborts the open transaction, which sends
// every partition back to its last commit: a failing batch should be
// dead-lettered (dead_letter) rather than retried for long.
//
// An abort, for any reason (a nack, a refused commit, a fenced producer, a
// revoke, a loss), is a replay in place of every partition from its last
// committed offset and ranges (txnRewind): no restart, attempts kept.

// Transactor ends the open transaction: internal/txn.Session. Both run on
// the committer goroutine or in Close, never on the owner's.
type Transactor interface {
	// Commit commits the transaction with o as the group's offsets; any
	// error means it aborted. Unless last, the next one is begun.
	Commit(ctx context.Context, o txn.Offsets, last bool) (txn.Result, error)
	// Abort aborts it; unless last, the next one is begun.
	Abort(ctx context.Context, last bool) (txn.Result, error)
}

// txnPart is the owner's side of exactly once. Owned by the owner
// goroutine. Invariant: out counts every batch handed out and not yet
// settled, of any epoch; while barrier is up, serve hands nothing out.
type txnPart struct {
	on bool
	// out is the batches in the pipeline, of every epoch.
	out int
	// barrier holds hand-outs until the open transaction ends; since is
	// when it went up, warned when the owner last said it still waits.
	barrier       bool
	since, warned time.Time
	// abort, when not empty, says why the open transaction must abort;
	// reason is its label (kafka_watermark_transactions_total).
	abort, reason string
	// ending: an abort is with the committer (a commit is
	// commits.committing).
	ending bool
	// fatal: the producer cannot begin another transaction (fenced, or
	// failed for good); the owner stops, and the input makes a new one
	// (Engine.Failed).
	fatal error
}

// txnWaitWarn is how long a transaction's end may wait for the pipeline
// before the owner says what it waits for, and how often it says it again.
const txnWaitWarn = 10 * time.Second

// txnHolds reports whether hand-outs wait for the open transaction's end.
func (o *owner) txnHolds() bool { return o.txn.barrier }

// txnHandedOut counts b into the pipeline: handed out, or its dead-letter
// write started (which goes into the open transaction).
func (o *owner) txnHandedOut(b *Batch) {
	if o.txn.on && !b.txnOut {
		b.txnOut = true
		o.txn.out++
	}
}

// txnSettled counts a batch out of the pipeline: acknowledged, failed, or
// given back unread (err nil, late false). A failure, or the settling of a
// batch of an ended epoch, dooms the open transaction.
func (o *owner) txnSettled(b *Batch, err error, late bool) {
	if !o.txn.on || !b.txnOut {
		return
	}
	b.txnOut = false
	o.txn.out--
	switch {
	case err != nil:
		p := b.part
		o.txnMustAbort(ReasonNack, fmt.Sprintf("batch %s/%d offsets %d-%d failed: %v", p.tp.topic, p.tp.partition, b.raw.first, b.raw.last, err))
	case late:
		o.txnMustAbort(ReasonLateAck, "a batch of an epoch that ended settled (its records may be in the transaction)")
	}
}

// txnDeadLetterFailed settles b, whose dead-letter write failed, as a
// failure: under exactly once the write is not tried again in this
// transaction (it may hold part of it), which aborts, and b is written
// again after the partition goes back to its last commit.
func (o *owner) txnDeadLetterFailed(b *Batch, err error) {
	b.part.att.endWrite(b)
	b.deadLettering = false
	o.txnSettled(b, fmt.Errorf("its dead-letter write failed: %w", err), !b.part.live())
}

// txnEpochEnds settles the dead-letter writes of p, whose epoch ends, as
// late: they may have written into the open transaction.
func (o *owner) txnEpochEnds(p *partState) {
	if !o.txn.on {
		return
	}
	for b := range p.att.writes {
		o.txnSettled(b, nil, true)
	}
}

// txnMustAbort dooms the open transaction and raises the barrier, so that
// it ends as soon as the pipeline is empty.
func (o *owner) txnMustAbort(reason, why string) {
	if o.txn.abort == "" {
		o.txn.abort, o.txn.reason = why, reason
	}
	o.txnRaise()
}

func (o *owner) txnRaise() {
	if !o.txn.barrier {
		o.txn.barrier = true
		o.txn.since, o.txn.warned = o.now(), time.Time{}
	}
}

// txnTick is the commit period's tick under exactly once: the barrier goes
// up when there is anything to end.
func (o *owner) txnTick() {
	if o.closed || (len(o.lists.dirty.parts) == 0 && o.txn.abort == "") {
		return
	}
	o.txnRaise()
}

// txnStep ends the open transaction once the barrier is up and the
// pipeline is empty: an abort if it is doomed, else a commit of every
// partition whose plan changed (commit). Called after every event.
func (o *owner) txnStep() {
	t := &o.txn
	if !t.on || !t.barrier || t.ending || o.commits.committing || o.closed {
		return
	}
	if t.out > 0 {
		if now := o.now(); now.Sub(t.since) >= txnWaitWarn && now.Sub(t.warned) >= txnWaitWarn {
			t.warned = now
			o.log.Warnf("kafka_watermark: exactly_once: the transaction has waited %v for %d batch(es) still in the pipeline; nothing is handed out until they settle (a stuck output holds every partition)",
				now.Sub(t.since).Round(time.Second), t.out)
		}
		return
	}
	if t.abort != "" {
		t.ending = true
		o.inbox.commitJobs <- commitJob{abort: t.abort, reason: t.reason} // capacity 1, one job at a time
		return
	}
	o.commit()
	if !o.commits.committing {
		t.barrier = false // nothing changed: the transaction holds nothing to commit
	}
}

// txnCommitDone handles a transaction's commit. A failure aborted it
// (txn.Session.Commit): every partition goes back to its last commit.
func (o *owner) txnCommitDone(c commitDone) {
	if errors.Is(c.result.err, txn.ErrCannotBegin) {
		o.txnFatal(c.result.err)
	}
	if c.result.err != nil {
		o.m.txnEnded(false, txnReason(c.result.err), c.records, c.took)
		o.txnRewind("the commit failed: " + c.result.err.Error())
		return
	}
	o.m.txnEnded(true, "", c.records, c.took)
	o.txn.barrier = false
}

// txnAbortDone handles an abort's end.
func (o *owner) txnAbortDone(c commitDone) {
	o.txn.ending = false
	if errors.Is(c.result.err, txn.ErrCannotBegin) {
		o.txnFatal(c.result.err)
	}
	o.m.txnEnded(false, c.reason, c.records, c.took)
	if c.result.err != nil {
		o.log.Errorf("kafka_watermark: exactly_once: aborting the transaction failed (%v); its records stay invisible to read_committed readers and the broker aborts it after transaction_timeout", c.result.err)
	}
	o.txnRewind(c.abort)
}

// txnFatal stops the owner after the event at hand: its producer cannot go
// on, and no transaction can end from here. Said once, at ERROR: a fence
// by another producer of the same transactional id is a misconfiguration
// (two members sharing one), or the end of this member's transaction
// after the broker gave up on it.
func (o *owner) txnFatal(err error) {
	if o.txn.fatal != nil {
		return
	}
	o.txn.fatal = err
	o.log.Errorf("kafka_watermark: exactly_once: the transactional producer cannot go on (%v); another member may use the same transactional_id, or the broker aborted the transaction after transaction_timeout. The input reconnects with a new producer, and every partition is read again from its last commit", err)
}

// txnRewind sends every live partition back to its last commit, after an
// abort: its successor (successor.go) starts at the committed offset and
// skips the committed delivered ranges, with attempts kept; it is rewound
// in the next poll window. Nothing is in the pipeline (the barrier).
func (o *owner) txnRewind(why string) {
	n := 0
	for _, p := range o.liveParts() {
		if p.draining {
			continue
		}
		s, ok := p.lastCommit()
		if !ok {
			continue // nothing fetched yet: nothing to go back over
		}
		o.cancelSuccession(p)
		np := o.succeed(p, s)
		o.rewindLater(np)
		n++
	}
	o.txn.abort, o.txn.reason, o.txn.barrier = "", "", false
	o.log.Infof("kafka_watermark: exactly_once: transaction aborted (%s); %d partition(s) go back to their last commit and are read again", why, n)
}

// lastCommit is the succession that goes back to what the group holds for
// p: its last committed offset and delivered ranges, or where p's lineage
// started fetching when it has no commit. ok is false when p has fetched
// nothing yet.
func (p *partState) lastCommit() (succession, bool) {
	s := succession{holdsTo: noTruncation, fromCommit: true, leaderEpoch: -1}
	switch {
	case p.commits.hasCommitted:
		s.base = p.commits.committed
		if d, err := commitmeta.DecodeCommit(p.commits.committedMeta); err == nil && d.Base == s.base && d.RangesErr == nil {
			s.leaderEpoch = d.Epoch
			s.delivered, s.deliveredEpoch = d.Delivered, d.LastEpoch
		}
	case p.commits.origin >= 0:
		s.base = p.commits.origin
	default:
		if start, ok := p.resume.start(); ok {
			s.base, s.leaderEpoch = start, p.resume.committedLeaderEpoch()
			s.delivered, s.deliveredEpoch = p.resume.inherited, p.resume.skipLeaderEpoch
			return s, true
		}
		return s, false
	}
	return s, true
}

// txnClient is the groupClient under exactly once: commits are the
// transaction's.
type txnClient struct {
	kgoGroupClient
	t Transactor
}

// Commit commits the open transaction with set. final is a close's: the
// next transaction is not begun.
func (c txnClient) Commit(ctx context.Context, set commitSet, final bool) commitResult {
	o := txn.Offsets{Offsets: set.offsets}
	if set.meta != nil {
		o.Meta = map[string]map[int32]string{}
		for tp, m := range set.meta {
			if o.Meta[tp.topic] == nil {
				o.Meta[tp.topic] = map[int32]string{}
			}
			o.Meta[tp.topic][tp.partition] = m
		}
	}
	r, err := c.t.Commit(ctx, o, final)
	res := commitResult{err: err, records: r.Records}
	if errors.Is(err, kerr.OffsetMetadataTooLarge) {
		// The whole transaction aborted; the owner lowers the metadata
		// size (noteMetaRefused) before the next one.
		res.metaRefused = map[topicPartition]int{}
		for tp, m := range set.meta {
			res.metaRefused[tp] = len(m)
		}
	}
	return res
}

// txnReason is the reason label of a failed commit.
func txnReason(err error) string {
	switch {
	case errors.Is(err, txn.ErrAborted):
		return ReasonRebalance
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch),
		errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.UnknownMemberID),
		errors.Is(err, kerr.StaleMemberEpoch), errors.Is(err, kerr.FencedInstanceID):
		return ReasonFenced
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kerr.TransactionAbortable):
		return ReasonTimeout
	}
	return ReasonCommitRefused
}

// The reason labels of an aborted transaction
// (kafka_watermark_transactions_total{result="aborted",reason}).
const (
	ReasonNack          = "nack"           // a batch failed while the transaction was open
	ReasonLateAck       = "late_ack"       // a batch of an ended epoch settled in it
	ReasonRebalance     = "rebalance"      // partitions were revoked or lost while it was open
	ReasonFenced        = "fenced"         // the group or the broker fenced this member or producer
	ReasonTimeout       = "timeout"        // the broker timed it out, or its end did not answer in time
	ReasonCommitRefused = "commit_refused" // the group refused its offsets for another reason
	ReasonShutdown      = "shutdown"       // the input closed with batches still in the pipeline
)

// liveParts returns the live epochs, in topic and partition order, so that
// what an abort does is the same from run to run.
func (o *owner) liveParts() []*partState {
	ps := make([]*partState, 0, len(o.parts))
	for _, p := range o.parts {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *partState) int {
		if c := strings.Compare(a.tp.topic, b.tp.topic); c != 0 {
			return c
		}
		return cmp.Compare(a.tp.partition, b.tp.partition)
	})
	return ps
}

// txnRevoke ends the epochs of revoked or lost partitions at once, without
// a drain or a commit of their own: under exactly once the group's offsets
// are committed only by a transaction, and the open one may hold outputs
// of the partitions going (kgo's GroupTransactSession aborts it anyway,
// txn.go:91-129). It is doomed, unless every partition going had nothing
// since its last commit (not dirty, nothing in the pipeline): then it
// holds none of their outputs. The callback returns at once: it must not
// wait for the transaction's end, which would deadlock in kgo (End takes
// the lock the session's callback wrapper holds, txn.go:59-62). What the
// pipeline still holds of them settles late, into the doomed transaction.
func (o *owner) txnRevoke(r revokeReq) {
	var gone []string
	doomed := false
	for _, tp := range r.tps {
		p := o.parts[tp]
		if p == nil {
			continue
		}
		if p.dirty || p.inPipeline() > 0 || p.queue.retryLen() > 0 {
			doomed = true
		}
		o.cancelSuccession(p)
		o.forget(p)
		gone = append(gone, fmt.Sprintf("%s/%d", tp.topic, tp.partition))
	}
	if doomed || r.lost {
		how := "revoked"
		if r.lost {
			how = "lost"
		}
		slices.Sort(gone)
		o.txnMustAbort(ReasonRebalance, fmt.Sprintf("partitions %s: %s", how, strings.Join(gone, ", ")))
	}
	r.reply <- commitSet{}
}
