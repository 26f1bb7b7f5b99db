package engine

import (
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// The ordering mode is one seam: a partState's delivery (its dlv), chosen
// once, when the epoch is made (newEpoch), from the configuration. Every
// place where ordering: none and ordering: key differ asks it; the rest of
// the engine (the ledger, the queue, the commits, the replays, the losses,
// the gate) is the same code for both. A new ordering mode is one more
// implementation of delivery and one more case in newEpoch, besides the
// config: nothing else checks which mode a partition is in.
//
// The two implementations:
//
//   - unordered (delivery_none.go), ordering: none: batches go out whole,
//     in offset order, each registered as it goes out; the ledger's
//     counts are the pipeline's.
//   - keyPart (keyed.go, keyed_ack.go, keyed_commit.go), ordering: key:
//     fetched records are registered in segments as they arrive, and a
//     hand-out is a set of records whose keys are free, picked by a
//     keyorder.Scheduler; a commit is exact to the record.
//
// Its methods run on the owner goroutine, as part of the partState that
// holds it; none of them blocks.
type delivery interface {
	// Hand-outs (handout.go).

	// admit takes in the batches at the front of p's ready queue that may
	// be registered before the next hand-out: the skip batches (passSkipped,
	// resume.go), and under key the segments the scheduler holds.
	admit(o *owner, p *partState)
	// next makes p's next hand-out of records not handed out before, or
	// returns nil when none may go out now (a later ack schedules p
	// again). Called only when canHandOut said yes and no retry waits.
	next(o *owner, p *partState) *Batch
	// canHandOut reports whether p has something to hand out within
	// maxPending (retries always may: they are registered already).
	canHandOut(p *partState, maxPending int) bool
	// atLimit reports whether p's fetching must pause on a bound of the
	// mode's own, besides the ledger's max_pending_batches.
	atLimit(o *owner, p *partState) bool
	// pickable is the number of records that may go out now without being
	// in a ready batch (askPoll counts them); held is the number waiting
	// for an earlier record of their key (kafka_watermark_held_records),
	// -1 in a mode that holds none back: the gauge is not shown.
	pickable() int
	held() int

	// The pipeline (drain.go, ack.go).

	// waitRetry counts a hand-out of p that leaves the pipeline to go out
	// again later; retryOut counts it back in when it goes out; inPipeline
	// is what is out and not acknowledged, what a drain waits for.
	waitRetry(p *partState)
	retryOut(p *partState)
	inPipeline(p *partState) int
	// drainsBeforeSuccessor reports whether an epoch that ends in a
	// successor outside a drain (a truncation, truncate.go) must first let
	// its hand-outs leave the pipeline.
	drainsBeforeSuccessor() bool

	// Acks (ack.go).

	// nacked takes a nack of b (its nackedAt and lastErr set), with the
	// indices of the records a batch error named (nil for a plain error),
	// and returns what the ack goes on with: the indices b.only takes.
	nacked(o *owner, b *Batch, failed []int) []int
	// resolve records the final verdict on b and advances its partition.
	resolve(o *owner, b *Batch, err error)

	// Commits (plan.go, attempts.go, stall.go).

	// commitBase is the offset a commit of p may carry, given wm, the
	// first offset of the batch or segment at its watermark
	// (segmentBase); baseMoved reports whether base moved past p's resume
	// point otherwise than with the watermark.
	commitBase(p *partState, wm int64) int64
	baseMoved(p *partState, base int64) bool
	// leaderEpochBefore is, when the mode knows better than the ledger,
	// the leader epoch that goes with base as a position (plan.go,
	// leaderEpochBefore); ok is false to let the ledger answer.
	leaderEpochBefore(p *partState, base int64) (epoch int32, ok bool)
	// delivered adds to ranges, the ledger's delivered batches above base,
	// what else the mode knows delivered above it.
	delivered(base int64, ranges []commitmeta.Range) []commitmeta.Range
	// attemptRanges returns the attempts a commit of p at base carries
	// (attempts.go); appendAttempts appends the ranges of b's records
	// that b's n attempts count for.
	attemptRanges(p *partState, base int64) []commitmeta.Attempts
	appendAttempts(dst []commitmeta.Attempts, b *Batch, n int32) []commitmeta.Attempts
	// stallFirst is the first offset of a stall at the nacked batch whose
	// first offset is first, under a commit at base: where a restart
	// knows it.
	stallFirst(first, base int64) int64
}

// newEpoch returns a new epoch of tp, made at now, with the delivery the
// configuration asks for: the one place that reads the ordering mode.
func (o *owner) newEpoch(tp topicPartition, now time.Time) *partState {
	p := newPartState(tp, now)
	if o.conf.OrderingKey {
		p.dlv = newKeyPart()
	} else {
		p.dlv = unordered{}
	}
	return p
}

// waitRetry, retryOut and inPipeline are p's delivery's (delivery).
func (p *partState) waitRetry()      { p.dlv.waitRetry(p) }
func (p *partState) retryOut()       { p.dlv.retryOut(p) }
func (p *partState) inPipeline() int { return p.dlv.inPipeline(p) }
