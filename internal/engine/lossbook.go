package engine

import (
	"slices"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// lossBook is what this process reported lost, per partition and across its
// epochs. Owned by the owner goroutine.
type lossBook struct {
	// lossReported holds, per partition, the offsets reported lost in
	// this process or by a commit an epoch started from (inheritLoss):
	// sorted, disjoint ranges, kept across epochs so that a revoke and a
	// reassignment report nothing twice.
	lossReported map[topicPartition][]commitmeta.Range
	// truncations holds, per partition, the offsets at which truncations
	// were reported in this process, each once.
	truncations map[topicPartition][]int64
	// accepted holds, per partition, the offsets of records the sink
	// accepted in a hand-out whose batch error named other records of it
	// (noteAccepted): the batch is not delivered as a whole, so no
	// delivered range says so, and a deletion of them is not a loss
	// before delivery (issue 29: 9 of "10 lost" had reached the sink 3
	// times). Sorted, disjoint. Cut at a truncation's divergence point
	// (the offsets hold other records from there), and dropped when the
	// assignment ends (forget): a truncation this member does not see may
	// rewrite them meanwhile, and a loss must never go unreported.
	accepted map[topicPartition]acceptedOffsets
}

// acceptedOffsets are the offsets of one partition in lossBook.accepted:
// sorted, disjoint ranges, and the newest leader epoch of their records
// (lose compares it with the log's).
type acceptedOffsets struct {
	ranges []commitmeta.Range
	epoch  int32
}

// noteAccepted records the offsets of the records of b's hand-out that the
// sink accepted, given the indices (in b.raw.records) of those a batch
// error named as failed.
func (o *owner) noteAccepted(p *partState, b *Batch, failed []int) {
	var offs []int64
	epoch := o.lost.accepted[p.tp].epoch
	take := func(i int) {
		if !slices.Contains(failed, i) {
			offs = append(offs, b.raw.records[i].Offset)
			epoch = max(epoch, b.raw.records[i].LeaderEpoch)
		}
	}
	if b.only == nil {
		for i := range b.raw.records {
			take(i)
		}
	} else {
		for _, i := range b.only {
			take(i)
		}
	}
	if len(offs) == 0 {
		return
	}
	slices.Sort(offs)
	var rs []commitmeta.Range
	for _, off := range offs {
		if n := len(rs); n > 0 && rs[n-1].To == off {
			rs[n-1].To++
		} else {
			rs = append(rs, commitmeta.Range{From: off, To: off + 1})
		}
	}
	// What is below the watermark is never lost: kept, it would only grow.
	base, _ := p.commitBase()
	kept := slices.DeleteFunc(o.lost.accepted[p.tp].ranges, func(r commitmeta.Range) bool { return r.To <= base })
	o.lost.accepted[p.tp] = acceptedOffsets{ranges: commitmeta.MergeRanges(kept, rs), epoch: epoch}
}
