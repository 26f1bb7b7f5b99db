package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitJob is one periodic commit, run by the committer goroutine because
// kgo's CommitOffsets may block while a rebalance or a sync commit is under
// way, and the owner must never block.
type commitJob struct {
	offsets epochOffsets
	parts   map[topicPartition]*partState
}

// commit starts a periodic commit of every live partition whose watermark is
// ahead of its last commit. One periodic commit is in flight at a time; a
// partition left out by a failure is retried on the next tick, since its
// watermark is still ahead.
func (o *owner) commit() {
	if o.committing || o.closed {
		return
	}
	job := commitJob{offsets: epochOffsets{}, parts: map[topicPartition]*partState{}}
	for tp, p := range o.parts {
		if p.draining {
			continue // its final watermark is committed synchronously by the drain
		}
		if eo, ok := p.commitCandidate(); ok {
			setOffset(job.offsets, tp, eo)
			job.parts[tp] = p
			p.committing = eo.Offset
		}
	}
	if len(job.parts) == 0 {
		return
	}
	o.committing = true
	o.commitJobs <- job // capacity 1 and one job at a time: never blocks
}

// committer runs periodic commits and reports each result to the owner.
func (o *owner) committer() {
	for {
		select {
		case job := <-o.commitJobs:
			start := time.Now()
			errs, err := commitAndWait(o.ioCtx, o.cl, job.offsets, false)
			select {
			case o.commitCh <- commitDone{offsets: job.offsets, parts: job.parts, errs: errs, err: err, took: time.Since(start)}:
			case <-o.stopped():
				return
			}
		case <-o.stopped():
			return
		}
	}
}

// commitAndWait commits offsets and waits for the response. It returns the
// request-level error, or the error of each partition the broker refused:
// kgo reports those inside the response with a nil error.
//
// final selects kgo's CommitOffsetsSync, which a rebalance callback must
// use: it cannot be cancelled by other commits and does not wait for the
// rebalance it is part of. Periodic commits use CommitOffsets, which yields
// to a rebalance in progress.
func commitAndWait(ctx context.Context, cl groupClient, offsets epochOffsets, final bool) (map[topicPartition]error, error) {
	var (
		errs   map[topicPartition]error
		reqErr error
		done   = make(chan struct{})
	)
	onDone := func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		defer close(done)
		if err != nil {
			reqErr = err
			return
		}
		errs = responseErrors(offsets, resp)
	}
	if final {
		cl.CommitOffsetsSync(ctx, offsets, onDone)
	} else {
		cl.CommitOffsets(ctx, offsets, onDone)
	}
	<-done
	return errs, reqErr
}

// responseErrors maps each requested partition to its error in resp; a
// partition the broker did not answer for is an error too.
func responseErrors(offsets epochOffsets, resp *kmsg.OffsetCommitResponse) map[topicPartition]error {
	errs := map[topicPartition]error{}
	answered := map[topicPartition]bool{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			answered[tp] = true
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs[tp] = err
			}
		}
	}
	for t, ps := range offsets {
		for p := range ps {
			if tp := (topicPartition{t, p}); !answered[tp] {
				errs[tp] = errors.New("no answer for this partition in the commit response")
			}
		}
	}
	return errs
}

// setOffset adds one partition's offset to offsets.
func setOffset(offsets epochOffsets, tp topicPartition, eo kgo.EpochOffset) {
	if offsets[tp.topic] == nil {
		offsets[tp.topic] = map[int32]kgo.EpochOffset{}
	}
	offsets[tp.topic][tp.partition] = eo
}

// countCommit counts one partition's commit result and, for a failure,
// returns the words that name it. It is the accounting every commit shares
// (periodic, revoke, shutdown); it touches only counters, which are safe
// for concurrent use, because the revoke and shutdown commits run off the
// owner goroutine. Gauges are the owner's, and only for live epochs.
func (m *metrics) countCommit(tp topicPartition, eo kgo.EpochOffset, err error) string {
	l := labels(tp)
	if err != nil {
		m.commitErrors.Incr(1, l[0], l[1])
		return fmt.Sprintf("%s/%d@%d: %v", tp.topic, tp.partition, eo.Offset, err)
	}
	m.commits.Incr(1, l[0], l[1])
	return ""
}

// eachResult calls fn for every partition of a commit with its error: the
// request's, or the partition's own.
func eachResult(offsets epochOffsets, errs map[topicPartition]error, err error, fn func(topicPartition, kgo.EpochOffset, error)) {
	for t, ps := range offsets {
		for p, eo := range ps {
			tp := topicPartition{t, p}
			perr := err
			if perr == nil {
				perr = errs[tp]
			}
			fn(tp, eo, perr)
		}
	}
}

// onCommitDone applies a periodic commit's result. A failed commit changes
// no tracker: the watermark stays ahead and the next tick tries again. The
// result of an epoch that has ended since changes nothing but counters.
func (o *owner) onCommitDone(c commitDone) {
	o.committing = false
	o.m.commitLatency.Timing(c.took.Nanoseconds())
	var failed []string
	eachResult(c.offsets, c.errs, c.err, func(tp topicPartition, eo kgo.EpochOffset, err error) {
		p := c.parts[tp]
		live := o.parts[tp] == p
		if live {
			p.committing = -1
		}
		if msg := o.m.countCommit(tp, eo, err); msg != "" {
			failed = append(failed, msg)
			return
		}
		if live {
			p.committed, p.hasCommitted = eo.Offset, true
			o.m.committed.Set(eo.Offset, p.labels[0], p.labels[1])
		}
	})
	if len(failed) > 0 {
		o.log.Warnf("kafka_watermark: commit failed for %d partition(s), retrying next period: %s", len(failed), strings.Join(failed, "; "))
	}
}

// finalCommit commits a revoke's or a close's final watermarks and waits, on
// the caller's goroutine (a rebalance callback or Close), never the owner's.
// The epochs have ended, so no gauge is set: a partition this member no
// longer owns reads 0.
func (o *owner) finalCommit(ctx context.Context, offsets epochOffsets, why string) error {
	if len(offsets) == 0 {
		return nil
	}
	start := time.Now()
	errs, err := commitAndWait(ctx, o.cl, offsets, true)
	o.m.commitLatency.Timing(time.Since(start).Nanoseconds())
	var failed []string
	eachResult(offsets, errs, err, func(tp topicPartition, eo kgo.EpochOffset, err error) {
		if msg := o.m.countCommit(tp, eo, err); msg != "" {
			failed = append(failed, msg)
		}
	})
	if len(failed) > 0 {
		// Nothing is lost: the next owner resumes from the last successful
		// commit and replays the rest.
		return fmt.Errorf("kafka_watermark: %s commit failed for %d partition(s), they will be replayed from their last commit: %s",
			why, len(failed), strings.Join(failed, "; "))
	}
	return nil
}
