package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// committer runs periodic commits and reports each result to the owner.
func (o *owner) committer() {
	for {
		select {
		case job := <-o.inbox.commitJobs:
			start := time.Now()
			var res commitResult
			if job.abort != "" {
				r, err := o.conf.Txn.Abort(o.ioCtx, false)
				res = commitResult{err: err, records: r.Records}
			} else {
				res = commitAndWait(o.ioCtx, o.cl, job.set, false)
			}
			select {
			case o.inbox.commitCh <- commitDone{commitJob: job, result: res, took: time.Since(start), records: res.records}:
			case <-o.stopped():
				return
			}
		case <-o.stopped():
			return
		}
	}
}

// commitResult is what the broker said to a commit: the request's error, or
// each refused partition's. metaRefused holds the length of every metadata
// string the broker refused as too large; those partitions were committed
// again at once without metadata, and errs holds that second answer.
type commitResult struct {
	errs        map[topicPartition]error
	err         error
	metaRefused map[topicPartition]int
	// records, under exactly once, is how many records the transaction
	// held.
	records int64
}

// commitAndWait commits set and waits for the response. kgo reports
// per-partition errors inside the response with a nil error; this returns
// them per partition.
//
// A partition whose metadata the broker refuses
// (OFFSET_METADATA_TOO_LARGE: its offset.metadata.max.bytes is below ours)
// is committed again without metadata at once: metadata never stops commits.
//
// final selects kgo's CommitOffsetsSync, which a rebalance callback must
// use: it cannot be cancelled by other commits and does not wait for the
// rebalance it is part of. Periodic commits use CommitOffsets, which yields
// to a rebalance in progress.
func commitAndWait(ctx context.Context, cl groupClient, set commitSet, final bool) commitResult {
	res := cl.Commit(ctx, set, final)
	var again commitSet
	for tp, err := range res.errs {
		if errors.Is(err, kerr.OffsetMetadataTooLarge) && set.meta[tp] != "" {
			if res.metaRefused == nil {
				res.metaRefused = map[topicPartition]int{}
			}
			res.metaRefused[tp] = len(set.meta[tp])
			again.add(tp, set.offsets[tp.topic][tp.partition], "", true)
		}
	}
	if !again.empty() {
		retry := cl.Commit(ctx, again, final)
		eachResult(again.offsets, retry.errs, retry.err, func(tp topicPartition, _ kgo.EpochOffset, err error) {
			if err != nil {
				res.errs[tp] = err
			} else {
				delete(res.errs, tp)
			}
		})
	}
	return res
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
				errs[tp] = errors.New("no answer for this partition in the commit response (kgo drops the answers of a group session that has ended)")
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
func (m *Metrics) countCommit(tp topicPartition, eo kgo.EpochOffset, err error) string {
	l := labels(tp)
	return m.countCommitOf(tp, l[:], eo, err)
}

// countCommitOf is countCommit with tp's labels formatted already.
func (m *Metrics) countCommitOf(tp topicPartition, l []string, eo kgo.EpochOffset, err error) string {
	if err != nil {
		m.commitErrors.Incr(1, l...)
		return fmt.Sprintf("%s/%d@%d: %v", tp.topic, tp.partition, eo.Offset, err)
	}
	m.commits.Incr(1, l...)
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
