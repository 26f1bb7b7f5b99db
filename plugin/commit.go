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
	offsets map[topicPartition]int64
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
	job := commitJob{offsets: map[topicPartition]int64{}, parts: map[topicPartition]*partState{}}
	for tp, p := range o.parts {
		if p.revoking {
			continue // its final watermark is committed synchronously by the drain
		}
		if wm, ok := p.commitCandidate(); ok {
			job.offsets[tp] = wm
			job.parts[tp] = p
			p.committing = wm
		}
	}
	if len(job.offsets) == 0 {
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
			errs, err := o.commitSync(o.commitCtx, toEpochOffsets(job.offsets), false)
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

// commitSync commits offsets and waits for the response. It returns the
// request-level error, or the error of each partition the broker refused:
// kgo reports those inside the response with a nil error.
//
// final selects kgo's CommitOffsetsSync, which a rebalance callback must
// use: it cannot be cancelled by other commits and does not wait for the
// rebalance it is part of. Periodic commits use CommitOffsets, which yields
// to a rebalance in progress.
func (o *owner) commitSync(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset, final bool) (map[topicPartition]error, error) {
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
		o.cl.CommitOffsetsSync(ctx, offsets, onDone)
	} else {
		o.cl.CommitOffsets(ctx, offsets, onDone)
	}
	<-done
	return errs, reqErr
}

// responseErrors maps each requested partition to its error in resp; a
// partition the broker did not answer for is an error too.
func responseErrors(offsets map[string]map[int32]kgo.EpochOffset, resp *kmsg.OffsetCommitResponse) map[topicPartition]error {
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

func toEpochOffsets(offsets map[topicPartition]int64) map[string]map[int32]kgo.EpochOffset {
	out := map[string]map[int32]kgo.EpochOffset{}
	for tp, off := range offsets {
		if out[tp.topic] == nil {
			out[tp.topic] = map[int32]kgo.EpochOffset{}
		}
		// Epoch -1: the batch's leader epoch is not tracked, and -1 tells
		// the broker and later fetchers to skip truncation checks on it.
		out[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	return out
}

// onCommitDone applies a periodic commit's result. A failed commit changes
// no tracker: the watermark stays ahead and the next tick tries again.
func (o *owner) onCommitDone(c commitDone) {
	o.committing = false
	o.m.commitLatency.Timing(c.took.Nanoseconds())
	var failed []string
	for tp, off := range c.offsets {
		p := c.parts[tp]
		live := o.parts[tp] == p
		if live {
			p.committing = -1
		}
		err := c.err
		if err == nil {
			err = c.errs[tp]
		}
		if err != nil {
			o.m.commitErrors.Incr(1, p.labels[0], p.labels[1])
			failed = append(failed, fmt.Sprintf("%s/%d@%d: %v", tp.topic, tp.partition, off, err))
			continue
		}
		o.m.commits.Incr(1, p.labels[0], p.labels[1])
		o.m.committed.Set(off, p.labels[0], p.labels[1])
		if live {
			p.committed, p.hasCommitted = off, true
		}
	}
	if len(failed) > 0 {
		o.log.Warnf("kafka_watermark: commit failed for %d partition(s), retrying next period: %s", len(failed), strings.Join(failed, "; "))
	}
}

// finalCommit commits a revoke's or a close's final watermarks and waits, on
// the caller's goroutine (a rebalance callback or Close), never the owner's.
func (o *owner) finalCommit(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset, why string) error {
	if len(offsets) == 0 {
		return nil
	}
	start := time.Now()
	errs, err := o.commitSync(ctx, offsets, true)
	o.m.commitLatency.Timing(time.Since(start).Nanoseconds())
	var failed []string
	for t, ps := range offsets {
		for p, eo := range ps {
			l := labels(topicPartition{t, p})
			perr := err
			if perr == nil {
				perr = errs[topicPartition{t, p}]
			}
			if perr != nil {
				o.m.commitErrors.Incr(1, l[0], l[1])
				failed = append(failed, fmt.Sprintf("%s/%d@%d: %v", t, p, eo.Offset, perr))
				continue
			}
			o.m.commits.Incr(1, l[0], l[1])
			o.m.committed.Set(eo.Offset, l[0], l[1])
		}
	}
	if len(failed) > 0 {
		// Nothing is lost: the next owner resumes from the last successful
		// commit and replays the rest.
		return fmt.Errorf("kafka_watermark: %s commit failed for %d partition(s), they will be replayed from their last commit: %s",
			why, len(failed), strings.Join(failed, "; "))
	}
	return nil
}
