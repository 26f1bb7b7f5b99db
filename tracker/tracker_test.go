package tracker

import (
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// mustAdvance advances t and fails unless the result is (want, wantMoved).
func mustAdvance(t *testing.T, tr *PartitionTracker, want int64, wantMoved bool) {
	t.Helper()
	got, moved := tr.Advance()
	if moved != wantMoved || (moved && got != want) {
		t.Fatalf("Advance() = (%d, %v), want (%d, %v)", got, moved, want, wantMoved)
	}
}

func mustResolve(t *testing.T, tr *PartitionTracker, seq uint64, s Status, want ResolveOutcome) {
	t.Helper()
	if got := tr.Resolve(seq, s); got != want {
		t.Fatalf("Resolve(%d, %v) = %v, want %v", seq, s, got, want)
	}
}

func TestSingleBatch(t *testing.T) {
	tr := New()
	tr.Register(0, 41)
	mustAdvance(t, tr, 0, false)
	mustResolve(t, tr, 0, Delivered, Applied)
	mustAdvance(t, tr, 42, true)
	if tr.Pending() != 0 {
		t.Fatalf("Pending() = %d, want 0", tr.Pending())
	}
	if wm, ok := tr.Watermark(); !ok || wm != 42 {
		t.Fatalf("Watermark() = (%d, %v), want (42, true)", wm, ok)
	}
}

func TestInOrderHappyPath(t *testing.T) {
	tr := New()
	for seq := range uint64(10) {
		tr.Register(seq, int64(seq*10+9))
		mustResolve(t, tr, seq, Delivered, Applied)
		mustAdvance(t, tr, int64(seq*10+10), true)
	}
	mustAdvance(t, tr, 100, false)
	if tr.Pending() != 0 || tr.Stalled() {
		t.Fatalf("Pending() = %d, Stalled() = %v, want 0, false", tr.Pending(), tr.Stalled())
	}
}

func TestOutOfOrderWaitsForHead(t *testing.T) {
	tr := New()
	for seq := range uint64(3) {
		tr.Register(seq, int64(seq*10+9))
	}
	mustResolve(t, tr, 2, Delivered, Applied)
	mustResolve(t, tr, 1, Delivered, Applied)
	mustAdvance(t, tr, 0, false)
	if tr.Pending() != 3 {
		t.Fatalf("Pending() = %d, want 3", tr.Pending())
	}
	mustResolve(t, tr, 0, Delivered, Applied)
	mustAdvance(t, tr, 30, true)
}

func TestFailureAtHeadStallsPermanently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New()
		tr.Register(0, 9)
		mustResolve(t, tr, 0, Failed, Applied)
		start := time.Now()
		mustAdvance(t, tr, 0, false)
		if !tr.Stalled() {
			t.Fatal("Stalled() = false after a failed head, want true")
		}
		if since, ok := tr.StalledSince(); !ok || !since.Equal(start) {
			t.Fatalf("StalledSince() = (%v, %v), want (%v, true)", since, ok, start)
		}
		if seq, ok := tr.StalledSeq(); !ok || seq != 0 {
			t.Fatalf("StalledSeq() = (%d, %v), want (0, true)", seq, ok)
		}

		// Later batches still register and resolve, never advance.
		time.Sleep(time.Minute) // fake clock: the stall time must not move
		tr.Register(1, 19)
		mustResolve(t, tr, 1, Delivered, Applied)
		mustAdvance(t, tr, 0, false)
		if tr.Pending() != 2 {
			t.Fatalf("Pending() = %d, want 2", tr.Pending())
		}
		if since, _ := tr.StalledSince(); !since.Equal(start) {
			t.Fatalf("StalledSince() moved to %v, want %v", since, start)
		}
		// A retry of the failed batch is a duplicate, not a cure.
		mustResolve(t, tr, 0, Delivered, Duplicate)
		mustAdvance(t, tr, 0, false)
	})
}

func TestAdvanceCommitsUpToFailure(t *testing.T) {
	tr := New()
	for seq := range uint64(4) {
		tr.Register(seq, int64(seq*10+9))
	}
	mustResolve(t, tr, 0, Delivered, Applied)
	mustResolve(t, tr, 1, Delivered, Applied)
	mustResolve(t, tr, 2, Failed, Applied)
	mustResolve(t, tr, 3, Delivered, Applied)
	mustAdvance(t, tr, 20, true)
	if !tr.Stalled() {
		t.Fatal("Stalled() = false, want true")
	}
	if seq, _ := tr.StalledSeq(); seq != 2 {
		t.Fatalf("StalledSeq() = %d, want 2", seq)
	}
	if off, ok := tr.LastOffset(2); !ok || off != 29 {
		t.Fatalf("LastOffset(2) = (%d, %v), want (29, true)", off, ok)
	}
	mustAdvance(t, tr, 0, false)
	if wm, _ := tr.Watermark(); wm != 20 {
		t.Fatalf("Watermark() = %d, want 20", wm)
	}
}

func TestFailureBehindPendingStallsOnlyWhenReached(t *testing.T) {
	tr := New()
	for seq := range uint64(3) {
		tr.Register(seq, int64(seq*10+9))
	}
	mustResolve(t, tr, 1, Failed, Applied)
	mustAdvance(t, tr, 0, false)
	if tr.Stalled() {
		t.Fatal("Stalled() = true while the head is still pending, want false")
	}
	mustResolve(t, tr, 0, Delivered, Applied)
	mustAdvance(t, tr, 10, true)
	if !tr.Stalled() {
		t.Fatal("Stalled() = false once the failure is the head, want true")
	}
}

func TestDuplicateAndStaleResolutions(t *testing.T) {
	tr := New()
	tr.Register(0, 9)
	tr.Register(1, 19)
	mustResolve(t, tr, 1, Delivered, Applied)
	mustResolve(t, tr, 1, Delivered, Duplicate)
	mustResolve(t, tr, 1, Failed, Duplicate) // a verdict cannot be changed
	mustResolve(t, tr, 2, Delivered, Unregistered)
	mustResolve(t, tr, 0, Delivered, Applied)
	mustAdvance(t, tr, 20, true)
	mustResolve(t, tr, 0, Delivered, AlreadyAdvanced)
	mustResolve(t, tr, 1, Failed, AlreadyAdvanced)
	if tr.Stalled() || tr.Pending() != 0 {
		t.Fatalf("Stalled() = %v, Pending() = %d, want false, 0", tr.Stalled(), tr.Pending())
	}
}

func TestRegistrationGapPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		seqs []uint64
		msg  string
	}{
		{"skip first", []uint64{1}, "expected seq 0, received 1"},
		{"gap", []uint64{0, 1, 3}, "expected seq 2, received 3"},
		{"repeat", []uint64{0, 0}, "expected seq 1, received 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tc.msg) {
					t.Fatalf("panic = %v, want one containing %q", r, tc.msg)
				}
			}()
			for _, s := range tc.seqs {
				tr.Register(s, int64(s))
			}
		})
	}
}

func TestNonIncreasingLastOffsetPanics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offsets []int64 // registered as seq 0, 1, 2, ...
		advance int     // resolve and advance this many batches first
		msg     string
	}{
		{"decrease", []int64{9, 19, 15}, 0, "seq 2, previous last offset 19, received 15"},
		{"equal", []int64{9, 19, 19}, 0, "seq 2, previous last offset 19, received 19"},
		{"equal second", []int64{9, 9}, 0, "seq 1, previous last offset 9, received 9"},
		{"decrease below zero", []int64{0, -1}, 0, "seq 1, previous last offset 0, received -1"},
		// The previous registration counts even once Advance consumed it.
		{"decrease after advance", []int64{9, 19, 5}, 2, "seq 2, previous last offset 19, received 5"},
		{"equal after advance", []int64{9, 19, 19}, 2, "seq 2, previous last offset 19, received 19"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewWithCapacity(2) // the advance cases also wrap the ring
			bad := len(tc.offsets) - 1
			for seq, off := range tc.offsets[:bad] {
				tr.Register(uint64(seq), off)
			}
			for seq := range tc.advance {
				mustResolve(t, tr, uint64(seq), Delivered, Applied)
			}
			tr.Advance()
			next, pending := tr.NextSeq(), tr.Pending()
			func() {
				defer func() {
					r := recover()
					msg, _ := r.(string)
					if !strings.Contains(msg, "non-increasing last offset") || !strings.Contains(msg, tc.msg) {
						t.Fatalf("panic = %v, want one about a non-increasing last offset containing %q", r, tc.msg)
					}
				}()
				tr.Register(uint64(bad), tc.offsets[bad])
			}()
			// The rejected registration changed nothing: the same seq with
			// a good offset is still the one expected.
			if tr.NextSeq() != next || tr.Pending() != pending {
				t.Fatalf("after the panic NextSeq() = %d, Pending() = %d, want %d, %d", tr.NextSeq(), tr.Pending(), next, pending)
			}
			tr.Register(uint64(bad), tc.offsets[bad-1]+1)
			if off, ok := tr.LastOffset(uint64(bad)); !ok || off != tc.offsets[bad-1]+1 {
				t.Fatalf("LastOffset(%d) = (%d, %v), want (%d, true)", bad, off, ok, tc.offsets[bad-1]+1)
			}
		})
	}
}

func TestFirstRegistrationAcceptsAnyLastOffset(t *testing.T) {
	for _, first := range []int64{math.MinInt64, -1, 0, 41, math.MaxInt64 - 1} {
		for name, tr := range map[string]*PartitionTracker{"New": New(), "zero": new(PartitionTracker)} {
			tr.Register(0, first)
			tr.Register(1, first+1)
			mustResolve(t, tr, 0, Delivered, Applied)
			mustResolve(t, tr, 1, Delivered, Applied)
			if got, moved := tr.Advance(); !moved || got != first+2 {
				t.Fatalf("%s, first %d: Advance() = (%d, %v), want (%d, true)", name, first, got, moved, first+2)
			}
		}
	}
}

func TestZeroValueIsUsable(t *testing.T) {
	var tr PartitionTracker
	// Before any registration every query answers without touching the ring.
	if tr.NextSeq() != 0 || tr.Pending() != 0 || tr.Stalled() {
		t.Fatalf("zero value: NextSeq() = %d, Pending() = %d, Stalled() = %v, want 0, 0, false", tr.NextSeq(), tr.Pending(), tr.Stalled())
	}
	if _, ok := tr.Watermark(); ok {
		t.Fatal("zero value: Watermark() ok = true, want false")
	}
	if _, ok := tr.LastOffset(0); ok {
		t.Fatal("zero value: LastOffset(0) ok = true, want false")
	}
	mustResolve(t, &tr, 0, Delivered, Unregistered)
	mustAdvance(t, &tr, 0, false)

	// The first Register allocates the same ring New does.
	tr.Register(0, 9)
	if len(tr.ring) != defaultCapacity || len(tr.ring) != len(New().ring) {
		t.Fatalf("ring length after the first Register = %d, want %d (as New)", len(tr.ring), defaultCapacity)
	}
	tr.Register(1, 19)
	tr.Register(2, 29)
	mustResolve(t, &tr, 1, Delivered, Applied)
	mustAdvance(t, &tr, 0, false)
	mustResolve(t, &tr, 0, Delivered, Applied)
	mustAdvance(t, &tr, 20, true)

	// Past the default capacity it grows like any other tracker.
	for seq := uint64(3); seq < 3+2*defaultCapacity; seq++ {
		tr.Register(seq, int64(seq*10+9))
	}
	for seq := uint64(2); seq < 3+2*defaultCapacity; seq++ {
		mustResolve(t, &tr, seq, Delivered, Applied)
	}
	mustAdvance(t, &tr, int64((2+2*defaultCapacity)*10+10), true)
	if tr.Pending() != 0 || tr.Stalled() {
		t.Fatalf("Pending() = %d, Stalled() = %v, want 0, false", tr.Pending(), tr.Stalled())
	}
}

func TestScrambledOrderIsMonotonic(t *testing.T) {
	tr := NewWithCapacity(1) // force growth too
	const n = 100
	for seq := range uint64(n) {
		tr.Register(seq, int64((seq+1)*7))
	}
	last := int64(-1)
	for step := range uint64(n) {
		mustResolve(t, tr, (step*37)%n, Delivered, Applied)
		if wm, moved := tr.Advance(); moved {
			if wm <= last {
				t.Fatalf("step %d: watermark %d after %d, want strictly increasing", step, wm, last)
			}
			last = wm
		}
	}
	if last != 701 || tr.Pending() != 0 {
		t.Fatalf("final watermark = %d, Pending() = %d, want 701, 0", last, tr.Pending())
	}
}

// Jeffail/checkpoint's Uncapped, which Redpanda Connect's kafka inputs use,
// treats every resolve call as fresh: resolving batch 1 a second time after
// batch 0 splices the list again and leaves the watermark short of the end.
// Benthos documents that an ack may be called more than once, so this
// sequence happens in production.
func TestRegressionDoubleResolveDoesNotStick(t *testing.T) {
	tr := New()
	for seq := range uint64(3) {
		tr.Register(seq, int64(seq*10+9))
	}
	mustResolve(t, tr, 1, Delivered, Applied)
	mustResolve(t, tr, 0, Delivered, Applied)
	mustAdvance(t, tr, 20, true)
	mustResolve(t, tr, 1, Delivered, AlreadyAdvanced)
	mustResolve(t, tr, 2, Delivered, Applied)
	mustAdvance(t, tr, 30, true)
}

func TestGrowPreservesWindow(t *testing.T) {
	tr := NewWithCapacity(4)
	// Move head off zero so the window wraps inside the ring before growing.
	for seq := range uint64(3) {
		tr.Register(seq, int64(seq))
		tr.Resolve(seq, Delivered)
	}
	mustAdvance(t, tr, 3, true)
	for seq := uint64(3); seq < 20; seq++ {
		tr.Register(seq, int64(seq))
	}
	for seq := uint64(19); seq >= 3; seq-- {
		if off, ok := tr.LastOffset(seq); !ok || off != int64(seq) {
			t.Fatalf("LastOffset(%d) = (%d, %v) after growth, want (%d, true)", seq, off, ok, seq)
		}
		tr.Resolve(seq, Delivered)
	}
	mustAdvance(t, tr, 20, true)
}

func TestInvalidStatusPanics(t *testing.T) {
	tr := New()
	tr.Register(0, 1)
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("Resolve with Status(0) did not panic")
		}
	}()
	tr.Resolve(0, Status(0))
}

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	// AllocsPerRun warms up with one call, in which the zero value
	// allocates its ring; after that neither may allocate.
	for name, tr := range map[string]*PartitionTracker{"New": NewWithCapacity(64), "zero": new(PartitionTracker)} {
		var seq uint64
		allocs := testing.AllocsPerRun(1000, func() {
			tr.Register(seq, int64(seq))
			tr.Resolve(seq, Delivered)
			tr.Advance()
			seq++
		})
		if allocs != 0 {
			t.Fatalf("%s: allocations per batch = %v, want 0", name, allocs)
		}
	}
}
