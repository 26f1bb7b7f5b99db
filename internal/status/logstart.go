package status

import (
	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// GoneBelowStart is the loss status itself sees: the committed offset is
// below the partition's log start, so retention (or DeleteRecords) deleted
// records the group had not delivered. No commit carries this report yet:
// the input writes its own (Partition.Loss) once it resumes there, which
// for a stopped pipeline is only at its restart. Until then the lag alone
// would hide the loss, and the exit status would read healthy.
//
// It counts as the input will when it resumes from the commit
// (internal/engine, lose and inheritLoss): the offsets from the committed
// offset up to the log start, minus those the commit metadata names as
// delivered above it and minus the span of the loss report the commit
// carries when that report says every offset of its span was lost
// (retention): those are reported already. A member that consumes the
// partition meanwhile may still hold some of the records in memory and
// deliver them; its next commit then passes them, and this report goes.
//
// A GoneBelowStart is a value, safe for concurrent reads.
type GoneBelowStart struct {
	First, Last int64 // the lost offsets lie within First..Last; Committed <= First <= Last < LogStart
	Count       int64 // how many of them: 1 <= Count <= Last-First+1
	LogStart    int64 // the log start the committed offset is below
}

// Cause is always commitmeta.CauseRetention: the log start moved past the
// records, by retention or by a delete-records call.
func (GoneBelowStart) Cause() string { return commitmeta.CauseRetention }

// goneBelowStart returns what p lost below its log start, or nil: no
// commit, a commit at or above the log start, or every offset below it
// delivered or reported already. It reads p's Committed, LogStart, the
// delivered ranges and Loss, so it runs after readMetadata.
func (p *Partition) goneBelowStart() *GoneBelowStart {
	if p.Committed < 0 || p.Committed >= p.LogStart {
		return nil
	}
	var reported []commitmeta.Range
	if l := p.Loss; l != nil && l.Reason == commitmeta.CauseRetention && l.Count == l.Last-l.First+1 {
		reported = []commitmeta.Range{{From: l.First, To: l.Last + 1}}
	}
	gone := commitmeta.SubtractRanges(commitmeta.Range{From: p.Committed, To: p.LogStart}, p.delivered, reported)
	if len(gone) == 0 {
		return nil
	}
	g := &GoneBelowStart{First: gone[0].From, Last: gone[len(gone)-1].To - 1, LogStart: p.LogStart}
	for _, r := range gone {
		g.Count += r.To - r.From
	}
	return g
}
