package plugin

import (
	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// window mirrors one epoch's registered batches that are not yet behind the
// watermark, in sequence order: batches[i] is sequence base+i. The tracker
// decides the watermark; the window knows what the tracker need not: how many
// records a batch holds and whether it was delivered or skipped, which is
// what the delivered ranges of a commit and the replay exposure are made of.
//
// Invariants: base is the tracker's head after the owner trims it (every
// batch below base is behind the watermark); a batch is delivered only
// after its Delivered verdict was applied in the tracker; a skipped batch is
// delivered. Its size follows the pending batches, not max_pending_batches.
// Owned by the owner goroutine.
type window struct {
	base    uint64
	batches []windowBatch
}

type windowBatch struct {
	b         *inflight // nil for a skipped or delivered batch
	last      int64
	records   int32
	delivered bool
	skipped   bool // delivered in an earlier epoch: never handed out in this one
}

// add records batch seq, registered just now: handed out as b, or skipped
// when b is nil.
func (w *window) add(seq uint64, last int64, records int, b *inflight) {
	if len(w.batches) == 0 {
		w.base = seq
	}
	skipped := b == nil
	w.batches = append(w.batches, windowBatch{b: b, last: last, records: int32(records), delivered: skipped, skipped: skipped})
}

// deliver marks batch seq delivered, and forgets its inflight: only an
// undelivered batch is ever looked at again (stallInfo), so the records of
// a delivered batch above the watermark are not kept for nothing.
func (w *window) deliver(seq uint64) {
	if seq >= w.base && seq-w.base < uint64(len(w.batches)) {
		w.batches[seq-w.base].delivered = true
		w.batches[seq-w.base].b = nil
	}
}

// trim drops the batches below head, the tracker's new head.
func (w *window) trim(head uint64) {
	if head <= w.base {
		return
	}
	n := min(head-w.base, uint64(len(w.batches)))
	clear(w.batches[:n])
	w.batches = w.batches[n:]
	w.base = head
	if len(w.batches) == 0 {
		w.batches = nil
	}
}

// ranges appends to dst the delivered ranges above the watermark. start is
// the offset the window's first batch begins at (the watermark, or the
// epoch's start before it ever moved). A batch spans from one past the
// previous batch's last offset to its own last offset: offsets between two
// batches hold no record of this epoch (compaction, transaction markers), so
// adjacent delivered batches merge into one range.
func (w *window) ranges(start int64, dst []commitmeta.Range) []commitmeta.Range {
	from := start
	open := false
	for _, b := range w.batches {
		switch {
		case b.delivered && open:
			dst[len(dst)-1].To = b.last + 1
		case b.delivered:
			dst = append(dst, commitmeta.Range{From: from, To: b.last + 1})
			open = true
		default:
			open = false
		}
		from = b.last + 1
	}
	return dst
}

// exposure returns the records a crash would deliver again if the ranges
// through keptTo (the To of the last range a commit carries, or the
// commit's offset when none) were committed now: every batch of the window
// but the delivered ones those ranges cover. A skipped batch beyond them
// counts too: it was delivered in an earlier epoch, and would be again.
func (w *window) exposure(keptTo int64) int64 {
	var n int64
	for _, b := range w.batches {
		if b.delivered && b.last < keptTo {
			continue
		}
		n += int64(b.records)
	}
	return n
}
