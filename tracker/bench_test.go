package tracker

import (
	"math/rand/v2"
	"testing"

	"github.com/Jeffail/checkpoint"
)

// The three patterns are run on this tracker and on Jeffail/checkpoint's
// Uncapped (what Redpanda Connect's kafka inputs use) in one file, so the
// ratio comes from one run on one machine. One op is one batch: register,
// resolve, advance.

// windowOrder returns, for windows of n, the order in which the batches of a
// window are resolved.
func windowOrder(n int, random bool) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = n - 1 - i // reverse
	}
	if random {
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	return order
}

func benchTracker(b *testing.B, window int, order []int) {
	benchTrackerOf(b, NewWithCapacity(window), window, order)
}

// benchTrackerOf runs the window pattern on tr: sized up front, or with one
// slot, as the kafka_watermark input starts its trackers, whose ring grows
// to the window in the first round and then stays.
func benchTrackerOf(b *testing.B, tr *PartitionTracker, window int, order []int) {
	var seq uint64
	filled := 0
	b.ReportAllocs()
	for b.Loop() {
		// One iteration is one batch; a window resolves when its last
		// batch is registered, so per-op cost is amortised exactly.
		tr.Register(seq, int64(seq))
		seq++
		if filled++; filled == window {
			filled = 0
			base := seq - uint64(window)
			for _, i := range order {
				tr.Resolve(base+uint64(i), Delivered)
				tr.Advance()
			}
		}
	}
}

func benchUncapped(b *testing.B, window int, order []int) {
	cp := checkpoint.NewUncapped[int64]()
	resolvers := make([]func() *int64, window)
	var seq int64
	filled := 0
	b.ReportAllocs()
	for b.Loop() {
		resolvers[filled] = cp.Track(seq, 1)
		seq++
		if filled++; filled == window {
			filled = 0
			for _, i := range order {
				_ = resolvers[i]()
			}
		}
	}
}

// In order, each batch is resolved and advanced as soon as it is
// registered: no window bookkeeping in the loop.
func benchTrackerInOrder(b *testing.B) {
	tr := NewWithCapacity(64)
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		tr.Register(seq, int64(seq))
		tr.Resolve(seq, Delivered)
		tr.Advance()
		seq++
	}
}

func benchUncappedInOrder(b *testing.B) {
	cp := checkpoint.NewUncapped[int64]()
	var seq int64
	b.ReportAllocs()
	for b.Loop() {
		_ = cp.Track(seq, 1)()
		seq++
	}
}

func BenchmarkTracker(b *testing.B) {
	b.Run("in-order", benchTrackerInOrder)
	b.Run("reverse-window-64", func(b *testing.B) { benchTracker(b, 64, windowOrder(64, false)) })
	b.Run("random-window-1024", func(b *testing.B) { benchTracker(b, 1024, windowOrder(1024, true)) })
	b.Run("random-window-1024-from-1-slot", func(b *testing.B) {
		benchTrackerOf(b, NewWithCapacity(1), 1024, windowOrder(1024, true))
	})
}

func BenchmarkUncapped(b *testing.B) {
	b.Run("in-order", benchUncappedInOrder)
	b.Run("reverse-window-64", func(b *testing.B) { benchUncapped(b, 64, windowOrder(64, false)) })
	b.Run("random-window-1024", func(b *testing.B) { benchUncapped(b, 1024, windowOrder(1024, true)) })
}
