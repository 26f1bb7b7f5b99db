package tracker_test

import (
	"fmt"

	"github.com/watermark-connect/watermark-connect/tracker"
)

// Three batches of one partition are acknowledged out of order; the
// watermark waits for the first, then jumps. A fourth fails and stalls it.
func Example() {
	t := tracker.New()
	t.Register(0, 9)  // offsets 0..9
	t.Register(1, 19) // offsets 10..19
	t.Register(2, 24) // offsets 20..24 (a compacted gap is fine)
	t.Register(3, 30)

	t.Resolve(2, tracker.Delivered)
	t.Resolve(1, tracker.Delivered)
	_, moved := t.Advance()
	fmt.Println("moved before batch 0:", moved)

	t.Resolve(0, tracker.Delivered)
	offset, _ := t.Advance()
	fmt.Println("commit offset:", offset)

	t.Resolve(3, tracker.Failed)
	t.Advance()
	seq, _ := t.StalledSeq()
	fmt.Println("stalled at batch:", seq, "pending:", t.Pending())
	// Output:
	// moved before batch 0: false
	// commit offset: 25
	// stalled at batch: 3 pending: 1
}
