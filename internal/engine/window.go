package engine

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
	batches []windowBatch // buf[off:off+len(batches)]
	// buf is the array batches lives in: trim moves batches forward in it,
	// and add moves them back to its start, or to a new array twice the
	// size, only when its end is full. A window that batches flow through
	// so allocates nothing once it has its size; an emptied one keeps a
	// small array, and gives a large one back (keepEmpty).
	buf []windowBatch
	off int
}

// keepEmpty is the largest array an emptied window keeps.
const keepEmpty = 16

type windowBatch struct {
	b         *Batch // nil for a skipped or delivered batch
	last      int64
	records   int32
	delivered bool
	skipped   bool // delivered in an earlier epoch: never handed out in this one
}

// add records batch seq, registered just now: handed out as b, or skipped
// when b is nil.
func (w *window) add(seq uint64, last int64, records int, b *Batch) {
	n := len(w.batches)
	if n == 0 {
		w.base = seq
	}
	if w.off+n == len(w.buf) {
		if w.off < n || w.off == 0 {
			// More than half the array is live: a new one, twice the size.
			buf := make([]windowBatch, max(2*len(w.buf), 2))
			copy(buf, w.batches)
			w.buf = buf
		} else {
			copy(w.buf, w.batches)
			clear(w.buf[n : w.off+n])
		}
		w.off = 0
	}
	skipped := b == nil
	w.buf[w.off+n] = windowBatch{b: b, last: last, records: int32(records), delivered: skipped, skipped: skipped}
	w.batches = w.buf[w.off : w.off+n+1]
}

// deliver marks batch seq delivered, and forgets its Batch: only an
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
	w.off += int(n)
	w.batches = w.batches[n:]
	w.base = head
	if len(w.batches) == 0 {
		w.off = 0
		w.batches = w.buf[:0]
		if len(w.buf) > keepEmpty {
			w.buf, w.batches = nil, nil
		}
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
