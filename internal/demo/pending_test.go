package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Issue 30: the key demo showed "1050 batches pending" where the limit it
// ran with was 16. Two figures that bound different things sat side by
// side: the progress line's batches pending are every partition's, summed,
// while max_pending_batches bounds each partition's; and a partition under
// ordering: key may pause with fewer batches pending than the limit,
// because there the limit also bounds the batches handed out and not yet
// answered (which no gauge shows), and max_held_records the records held
// for their key. (The 1050 itself was the segments under key, which
// max_pending_batches did not bound before commit 35a3feb.) Each figure
// is now said with what it is measured against.
func TestPendingIsToldBesideWhatBoundsIt(t *testing.T) {
	views := []partitionView{{Partition: 0, Pending: 16, Paused: true}, {Partition: 1, Pending: 12}, {Partition: 2, Pending: 100}}
	assert.Contains(t, progressLine(time.Second, views, 16), ", 128 batches pending in 3 partitions (max_pending_batches 16 each)")

	for _, c := range []struct {
		limit   pendingLimit
		pending int64
		want    string
	}{
		{pendingLimit{max: 16}, 16, "16 batches pending behind the failed one (max_pending_batches: 16 per partition)"},
		{pendingLimit{max: 16, keyed: true}, 16, "16 batches pending behind the failed one (max_pending_batches: 16 per partition)"},
		{pendingLimit{max: 16, keyed: true}, 12, "12 batches pending behind the failed one (max_pending_batches: 16 per partition, " +
			"which under ordering: key also bounds the batches handed out and not yet answered, as max_held_records bounds the records waiting for their key: one of those paused it)"},
		{pendingLimit{max: 16}, 19, "19 batches pending behind the failed one (max_pending_batches: 16 per partition; " +
			"the batches a replay in place skips as already delivered count too, registered at once)"},
	} {
		assert.Equal(t, c.want, c.limit.pausedWith(c.pending), "pausedWith(%d) under %+v", c.pending, c.limit)
	}

	// The live table calls a partition paused at the limit only when its
	// batches pending reached it.
	assert.Equal(t, "paused: max pending", partitionView{Pending: 16, MaxPending: 16, Paused: true, Committed: -1, End: 1}.state())
	assert.Equal(t, "paused", partitionView{Pending: 12, MaxPending: 16, Paused: true, Committed: -1, End: 1}.state())

	// The event of a partition paused behind its failed batch, under key.
	s := newStory(demoOptions{MaxPending: 16, Ordering: orderingKey}.withDefaults())
	failed := partitionView{Partition: 4, Pending: 12, MaxPending: 16, Stalled: true, Paused: true, Committed: 400, End: 2500,
		Sink: sinkState{Failed: []failedBatch{{Partition: 4, First: 400, Last: 499}}}}
	assert.Contains(t, strings.Join(s.record(time.Second, []partitionView{failed}, nil), "\n"),
		"[  1.0s] partition 4 paused: 12 batches pending behind the failed one (max_pending_batches: 16 per partition, which under ordering: key also bounds")
}
