package demo

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyRun is a short keyed run: 2 partitions of 4 keys, batches of 10 so a
// key's records go out over several batches, and a failed batch that the
// sink takes at the first replay, 2s after the stall: long enough
// for the partition's other keys to finish while the failed key waits.
func keyRun(ordering string) demoOptions {
	return demoOptions{Ordering: ordering, Keys: 8, Partitions: 2, Records: 1200, BatchMaxRecords: 10, FailBatches: 1, Seed: 9,
		Duration: 40 * time.Second, StallReplayAfter: 2 * time.Second, FailFor: 100 * time.Millisecond, MaxLatency: 10 * time.Millisecond}
}

// Under --ordering key no batch goes out with a key of another unanswered
// batch and every key lands in log order; the failed batch's key waits,
// its later records held by the input, while the partition's other keys
// land past it; the commit stops at the failed record or at a record fetched
// before it and not delivered yet, and heals at the replay, which delivers
// no record again after a newer one of its key.
func TestDemoKeyOrder(t *testing.T) {
	t.Parallel()
	o := keyRun(orderingKey)
	r, out := runDemoT(t, o, false)
	require.True(t, r.Settled, out)
	assert.Equal(t, 8, r.KeySpace)
	ko := r.KeyOrder
	assert.Equal(t, keyOrderSeen{Keys: 8, Records: 1200}, ko,
		"no key out of order, no batch sharing a key, no record again after a newer one of its key, every record landed once at least:\n%s", out)

	require.Len(t, r.Failures, 1, out)
	f := r.Failures[0]
	require.NotEmpty(t, f.Offsets, "under key the failed batch is a set of offsets")
	assert.Len(t, f.Offsets, int(f.records()))
	require.NotEmpty(t, f.Wait.Keys)
	assert.Positive(t, f.Wait.Passed, "other keys landed past the failed batch while it waited:\n%s", out)
	assert.Zero(t, f.Wait.OwnPassed, "none of its keys' later records landed before it:\n%s", out)

	var v partitionView
	for _, pv := range r.Parts {
		assert.Equal(t, pv.LogEnd, pv.Committed, "partition %d commits to the log end:\n%s", pv.Partition, out)
		if pv.Partition == f.Partition {
			v = pv
		}
	}
	require.NotNil(t, r.Story.firstStall, "status saw the stall:\n%s", out)
	at := stallCommit(r, v)
	assert.LessOrEqual(t, at, f.First, "the commit stopped short of the failed record")

	held, ok := r.Story.keys.held[f.Partition]
	require.True(t, ok, "the held records were told once the failed key alone waited:\n%s", out)
	assert.Positive(t, held)
	assert.Contains(t, out, "ordering: key, 8 keys")
	assert.Contains(t, out, "key order:                  0 keys delivered out of order over 1200 records (8 keys)")
	assert.Contains(t, out, "batches sharing a key:      0 went out")
	assert.Contains(t, out, fmt.Sprintf("partition %d: %s alone waits, behind its rejected batch; the input holds %d record(s) back for it "+
		"(kafka_watermark_held_records) while %d record(s)", f.Partition, keyList(f.Wait.Keys), held, f.Wait.Passed))
	assert.Contains(t, out, fmt.Sprintf("partition %d: the sink accepted the batch of %s; while it waited, %d record(s) of other keys went past offset %d, and 0 of its own",
		f.Partition, keyList(f.Wait.Keys), f.Wait.Passed, f.First))
	assert.Contains(t, unwrapped(out), "Run with --ordering none --keys 8")
}

// The same records under ordering: none: batches share keys, and the
// failed batch's keys land later records before it: what key order is for.
func TestDemoKeysUnderNone(t *testing.T) {
	t.Parallel()
	r, out := runDemoT(t, keyRun(orderingNone), false)
	require.True(t, r.Settled, out)
	require.Len(t, r.Failures, 1, out)
	f := r.Failures[0]
	assert.Nil(t, f.Offsets, "under none a batch is its range")
	assert.Positive(t, f.Wait.OwnPassed, "later records of the failed batch's keys landed while it waited:\n%s", out)
	assert.Positive(t, r.KeyOrder.Reordered, "so its keys went out of order")
	assert.Positive(t, r.KeyOrder.Late)
	assert.Equal(t, 1200, r.KeyOrder.Records)
	assert.Empty(t, r.Story.keys.held, "nothing is held under none")
	assert.Regexp(t, `key order: +[1-9]\d* of 8 keys delivered out of order over 1200 records`, out)
	assert.NotContains(t, out, "held for their key:")
	assert.Contains(t, unwrapped(out), "Run with --ordering key to see the same records kept in order per key.")
}

func TestKeyOptions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    demoOptions
		want string // "" when valid
	}{
		{demoOptions{Ordering: orderingKey}, ""},
		{demoOptions{Ordering: orderingNone, Keys: 8}, ""},
		{demoOptions{Ordering: orderingKey, DeadLetterAfter: 1}, ""},
		{demoOptions{Ordering: "sideways"}, `--ordering must be one of none, key; got "sideways"`},
		{demoOptions{Ordering: orderingKey, DeadLetterAfter: 3}, ""},
		{demoOptions{Keys: -1}, "--keys must be at least 0"},
		{demoOptions{Keys: 4, Partitions: 8}, "--keys 4 leaves partitions without records: with --partitions 8 it must be at least 8"},
	} {
		err := c.o.withDefaults().validate()
		if c.want == "" {
			assert.NoError(t, err, "%+v", c.o)
			continue
		}
		if assert.Error(t, err, "%+v", c.o) {
			assert.Contains(t, err.Error(), c.want)
		}
	}

	for _, c := range []struct {
		o    demoOptions
		want int
	}{{demoOptions{}, 0}, {demoOptions{Ordering: orderingKey}, 32}, {demoOptions{Ordering: orderingKey, Keys: 12}, 12}, {demoOptions{Keys: 8}, 8}} {
		assert.Equal(t, c.want, c.o.withDefaults().keySpace(), "keySpace of %+v", c.o)
	}
	// A key lives in one partition; with keys a multiple of the partitions
	// the records go round robin, as without keys.
	for i := range 64 {
		p, key := keyed(i, 16, 4)
		assert.Equal(t, int32(i%4), p, "record %d", i)
		assert.Equal(t, fmt.Sprint("k", i%16), string(key))
	}
}

// keyCheck's verdicts on a scripted partition of two keys.
func TestKeyCheck(t *testing.T) {
	t.Parallel()
	k := newKeyCheck(10, 20)
	k.sent([]string{"a"})
	k.sent([]string{"a", "b"}) // a is in the first batch, unanswered
	k.answered([]string{"a", "b"})
	assert.True(t, k.land(12, "a"))
	assert.True(t, k.land(13, "b"))
	k.answered([]string{"a"})
	assert.True(t, k.land(11, "a"), "first landing of 11")
	assert.False(t, k.land(12, "a"), "12 landed before")
	assert.False(t, k.land(30, "a"), "outside the run")
	k.sent([]string{"b"})
	assert.Equal(t, keyOrderSeen{Keys: 2, Reordered: 1, Late: 1, Overlaps: 1, WentBack: 0, Records: 3}, k.seen())
	assert.True(t, k.land(14, "a"))
	assert.False(t, k.land(11, "a"))
	assert.Equal(t, 1, k.seen().WentBack, "11 landed again after 14 of its key")
}
