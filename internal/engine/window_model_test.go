package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// refWindow is the window as it was before it kept its array: a plain slice,
// appended to and sliced from the front. It is the model the window is held
// to; its ranges and exposure are written from their definitions (per
// offset), not from the window's code.
type refWindow struct {
	base    uint64
	batches []windowBatch
}

func (r *refWindow) add(seq uint64, last int64, records int, b *Batch) {
	if len(r.batches) == 0 {
		r.base = seq
	}
	skipped := b == nil
	r.batches = append(r.batches, windowBatch{b: b, last: last, records: int32(records), delivered: skipped, skipped: skipped})
}

func (r *refWindow) deliver(seq uint64) {
	if seq >= r.base && seq < r.base+uint64(len(r.batches)) {
		r.batches[seq-r.base].delivered = true
		r.batches[seq-r.base].b = nil
	}
}

func (r *refWindow) trim(head uint64) {
	if head <= r.base {
		return
	}
	r.batches = r.batches[min(head-r.base, uint64(len(r.batches))):]
	r.base = head
}

// ranges: mark every offset a delivered batch spans (from one past the
// batch before, or start, through its last), then read off the runs.
func (r *refWindow) ranges(start int64) []commitmeta.Range {
	var out []commitmeta.Range
	covered := map[int64]bool{}
	from := start
	for _, b := range r.batches {
		for off := from; off <= b.last; off++ {
			covered[off] = b.delivered
		}
		from = b.last + 1
	}
	for off := start; off < from; off++ {
		switch {
		case !covered[off]:
		case len(out) > 0 && out[len(out)-1].To == off:
			out[len(out)-1].To = off + 1
		default:
			out = append(out, commitmeta.Range{From: off, To: off + 1})
		}
	}
	return out
}

func (r *refWindow) exposure(keptTo int64) int64 {
	var n int64
	for _, b := range r.batches {
		if !b.delivered || b.last >= keptTo {
			n += int64(b.records)
		}
	}
	return n
}

// TestWindowModel drives the window and refWindow with the same random
// sequences of what the owner does to a window (register a batch, handed
// out or skipped; deliver any sequence, including ones already trimmed or
// not registered yet; trim to a head between the window's base and the
// next sequence, or below the base) and checks after every step that every
// observable agrees: base, length, each batch (its inflight, last, records,
// verdict), the first and last batch (what stallInfo and deliveredRanges
// read), ranges from several starts, and exposure at several cuts. It also
// checks what the kept array must not cost: batches is buf[off:off+len],
// every slot of buf outside it is zero (no trimmed or moved batch keeps its
// inflight alive), and an emptied window keeps at most keepEmpty slots.
//
// The phases make the array do all it can: windows that grow well past
// keepEmpty, windows that slide at a steady size (moves to the front),
// and windows that empty and start again.
func TestWindowModel(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x3a11))
			var (
				w    window
				ref  refWindow
				next uint64 // the tracker's next sequence
				last = int64(rng.IntN(50)) - 1
			)
			// Start somewhere other than sequence 0 now and then: a window
			// empties, and its base follows the tracker.
			next = uint64(rng.IntN(3))
			steps := 400 + rng.IntN(800)
			for step := range steps {
				// Phase: grow (mostly adds), slide (as many trims as adds),
				// or shrink (mostly delivers and trims).
				var addW, delW, trimW int
				switch (step / 100) % 3 {
				case 0:
					addW, delW, trimW = 6, 3, 1
				case 1:
					addW, delW, trimW = 3, 3, 3
				default:
					addW, delW, trimW = 1, 3, 4
				}
				var op string
				switch x := rng.IntN(addW + delW + trimW); {
				case x < addW:
					last += 1 + int64(rng.IntN(3)) // gaps: compaction, markers
					records := 1 + rng.IntN(10)
					var b *Batch
					if rng.IntN(5) != 0 {
						b = &Batch{seq: next}
					}
					op = fmt.Sprintf("add(%d, %d, %d, skipped=%v)", next, last, records, b == nil)
					w.add(next, last, records, b)
					ref.add(next, last, records, b)
					next++
				case x < addW+delW:
					lo := ref.base
					if lo >= 2 {
						lo -= 2
					}
					seq := lo + uint64(rng.IntN(int(next-lo)+3))
					op = fmt.Sprintf("deliver(%d)", seq)
					w.deliver(seq)
					ref.deliver(seq)
				default:
					head := ref.base + uint64(rng.IntN(int(next-ref.base)+1))
					if rng.IntN(8) == 0 && ref.base > 0 {
						head = ref.base - 1
					}
					op = fmt.Sprintf("trim(%d)", head)
					w.trim(head)
					ref.trim(head)
				}
				if err := windowAgrees(&w, &ref, rng); err != nil {
					t.Fatalf("step %d, %s: %v", step, op, err)
				}
			}
		})
	}
}

// windowAgrees returns how w differs from ref, or how w's array breaks its
// invariants, or nil.
func windowAgrees(w *window, ref *refWindow, rng *rand.Rand) error {
	if w.base != ref.base {
		return fmt.Errorf("base = %d, want %d", w.base, ref.base)
	}
	if len(w.batches) != len(ref.batches) {
		return fmt.Errorf("len(batches) = %d, want %d", len(w.batches), len(ref.batches))
	}
	for i := range ref.batches {
		if w.batches[i] != ref.batches[i] {
			return fmt.Errorf("batches[%d] (seq %d) = %+v, want %+v", i, ref.base+uint64(i), w.batches[i], ref.batches[i])
		}
	}
	// The array: batches is buf[off:off+len], and nothing else in buf
	// holds a batch.
	n := len(w.batches)
	if w.off < 0 || w.off+n > len(w.buf) {
		return fmt.Errorf("off %d + len %d outside buf of %d", w.off, n, len(w.buf))
	}
	if n > 0 && &w.batches[0] != &w.buf[w.off] {
		return fmt.Errorf("batches does not start at buf[off] (off %d)", w.off)
	}
	for i, b := range w.buf {
		if (i < w.off || i >= w.off+n) && b != (windowBatch{}) {
			return fmt.Errorf("buf[%d], outside the live batches [%d,%d), holds %+v", i, w.off, w.off+n, b)
		}
	}
	if n == 0 && len(w.buf) > keepEmpty {
		return fmt.Errorf("an empty window keeps %d slots, more than %d", len(w.buf), keepEmpty)
	}
	if n > 0 {
		// The first span starts at or below the first batch's last.
		first := ref.batches[0].last
		for range 3 {
			start := first - int64(rng.IntN(4))
			got, want := w.ranges(start, nil), ref.ranges(start)
			if !slices.Equal(got, want) {
				return fmt.Errorf("ranges(%d) = %v, want %v", start, got, want)
			}
		}
		end := ref.batches[n-1].last
		if w.batches[n-1].last != end {
			return fmt.Errorf("last batch's last = %d, want %d", w.batches[n-1].last, end)
		}
		for range 3 {
			keptTo := first - 1 + int64(rng.IntN(int(end-first)+3))
			if got, want := w.exposure(keptTo), ref.exposure(keptTo); got != want {
				return fmt.Errorf("exposure(%d) = %d, want %d", keptTo, got, want)
			}
		}
	} else if got := w.ranges(0, nil); len(got) != 0 {
		return fmt.Errorf("ranges of an empty window = %v, want none", got)
	}
	return nil
}

// TestWindowSteadyFlowAllocatesNothing: a window that batches flow through
// at a steady size allocates nothing once it has grown to that size, which
// is what cb8b996 kept the array for.
func TestWindowSteadyFlowAllocatesNothing(t *testing.T) {
	for _, size := range []int{1, 3, 16, 100} {
		var w window
		var seq uint64
		b := &Batch{}
		step := func() {
			w.add(seq, int64(seq), 1, b)
			w.deliver(seq - uint64(size) + 1)
			if seq+1 >= uint64(size) {
				w.trim(seq - uint64(size) + 2)
			}
			seq++
		}
		for range 4 * size {
			step()
		}
		if got := allocsPerRun(1000, step); got != 0 {
			t.Errorf("window of %d: %v allocations per batch, want 0", size, got)
		}
	}
}
