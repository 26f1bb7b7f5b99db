package engine

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// lastStall decodes the stall provenance of the last commit of tp.
func (h *ownerHarness) lastStall(tp topicPartition) (commitmeta.Meta, commitmeta.Stall, bool) {
	h.t.Helper()
	m, fields := h.lastFields(tp)
	s, ok, err := commitmeta.StallFromFields(fields)
	require.NoError(h.t, err, fields)
	return m, s, ok
}

// lastFields decodes the metadata of the last commit of tp, and its extra
// fields; it fails the test if tp was never committed with metadata.
func (h *ownerHarness) lastFields(tp topicPartition) (commitmeta.Meta, map[string]string) {
	h.t.Helper()
	h.cl.mu.Lock()
	defer h.cl.mu.Unlock()
	for i := len(h.cl.commits) - 1; i >= 0; i-- {
		if meta, ok := h.cl.commits[i].meta[tp]; ok {
			m, fields, err := commitmeta.DecodeFields(meta)
			require.NoError(h.t, err, meta)
			return m, fields
		}
	}
	h.t.Fatalf("no commit of %v", tp)
	return commitmeta.Meta{}, nil
}

// A partition is stalled from the first nack of its head batch, even while
// the batch waits for a retry, and the stall reaches the broker with the next
// commit though the watermark does not move; it clears when the batch is
// delivered.
func TestOwnerStallShowsWhileRetryingAndClears(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\nnack_retry: { max_retries: -1, initial_backoff: 5s, max_backoff: 5s }\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := h.read(), h.read()
		h.ack(b, nil)
		start := time.Now()
		h.ack(a, errors.New("HTTP 503 Service Unavailable"))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStalled, "t", 0), "stalled at the first nack, retries pending")
		meta, s, ok := h.lastStall(tp0)
		require.True(t, ok, "the commit carries the stall")
		require.Equal(t, int64(0), meta.Base, "the same offset is committed again")
		require.Equal(t, commitmeta.Stall{Report: commitmeta.Report{First: 0, Last: 1, Since: start.UTC().Truncate(time.Millisecond), Reason: s.Reason}, Attempts: 1, Member: s.Member}, s)
		require.Contains(t, s.Reason, "503")

		time.Sleep(4 * time.Second)
		retry := h.read()
		require.Same(t, a, retry)
		h.ack(retry, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Zero(t, g.Get(MetricStalled, "t", 0))
		meta, _, ok = h.lastStall(tp0)
		require.False(t, ok, "healed: the provenance is cleared")
		require.Equal(t, int64(4), meta.Base)
	})
}

// nack_retry.max_retries: -1 retries through a sink outage of an hour, with
// the backoff, and nothing but the retried batch is delivered again.
func TestOwnerUnlimitedRetriesOutlastAnHourLongOutage(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 5\ncommit_period: 1s\nstall_replay_after: 1m\nnack_retry: { max_retries: -1, initial_backoff: 500ms, max_backoff: 10s }\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 20, records(tp0, 0, 20)...)
		bs := h.readAll()
		require.Len(t, bs, 4)
		for _, b := range bs[1:] {
			h.ack(b, nil)
		}
		outageEnds := time.Now().Add(time.Hour)
		b := bs[0]
		deliveries := 1
		for time.Now().Before(outageEnds) {
			h.ack(b, errors.New("sink down"))
			time.Sleep(10 * time.Second)
			b = h.read()
			deliveries++
		}
		require.Same(t, bs[0], b, "the same batch, retried")
		require.Greater(t, deliveries, 300)
		h.ack(b, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 20}}, h.cl.committed(tp0)[len(h.cl.committed(tp0))-1:])
		require.Zero(t, g.Get(MetricStallReplays, "t", 0), "retries never fail for good: no replay in place")
		_, ok := h.tryRead()
		require.False(t, ok, "nothing else is delivered again")
	})
}

// A batch error that names failed messages: the retry re-delivers those
// only, and the batch stays pending until they are delivered.
func TestOwnerRetriesOnlyTheRecordsABatchErrorNamed(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 5\ncommit_period: 1s\nnack_retry: { max_retries: 3, initial_backoff: 1s, max_backoff: 1s }\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 5, records(tp0, 0, 5)...)
		b := h.read()
		h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("two failed"), failed: []int{1, 3}}
		time.Sleep(time.Second)
		retry := h.read()
		require.Equal(t, []int{1, 3}, retry.only)
		h.state(func(o *owner) { require.Equal(t, 1, o.parts[tp0].led.pending()) })
		h.ack(retry, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 0}, {Epoch: 0, Offset: 5}}, h.cl.committed(tp0),
			"the stall is committed at offset 0, then the batch is delivered")
	})
}

// A head batch that failed for good is replayed in place after
// stall_replay_after: drained, rewound in the next poll window (SetOffsets),
// and read again from the watermark; a poll that started before the rewind
// does not enter the new epoch, and only what was not delivered is handed
// out again. Consecutive replays at one offset back off.
func TestOwnerReplaysAFailedPartitionInPlace(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 2s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 8, records(tp0, 0, 8)...)
		bs := h.readAll()
		require.Len(t, bs, 4)
		h.ack(bs[0], errors.New("poison"))
		h.ack(bs[1], nil)
		h.ack(bs[3], nil) // bs[2] stays in the pipeline through the drain
		old := bs[0].part

		time.Sleep(10 * time.Second) // stall_replay_after: the drain starts
		synctest.Wait()
		require.Zero(t, g.Get(MetricStallReplays, "t", 0), "draining")
		time.Sleep(2 * time.Second) // drain_timeout: bs[2] is left behind
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStallReplays, "t", 0))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStalled, "t", 0), "stalled through the replay, before the batch is out again")
		require.GreaterOrEqual(t, g.Get(MetricAge, "t", 0), int64(13), "a replay does not move the watermark: its age goes on")
		h.ack(bs[2], nil)
		require.Equal(t, int64(1), g.Get(MetricLateAcks, "t", 0), "an ack of the ended epoch is late")

		// Poll 2 started before the rewind: it is handled in the window
		// where the rewind is made, and dropped.
		h.fetch(tp0, 8, records(tp0, 4, 8)...)
		h.cl.mu.Lock()
		require.Equal(t, []map[string]map[int32]kgo.EpochOffset{{"t": {0: {Epoch: 0, Offset: 0}}}}, h.cl.rewinds, "with the leader epoch of the record there: nothing before it was fetched")
		h.cl.mu.Unlock()
		_, ok := h.tryRead()
		require.False(t, ok, "records of a poll from before the rewind are dropped")

		h.fetch(tp0, 8, records(tp0, 0, 8)...)
		again := h.readAll()
		require.Equal(t, []int64{0, 4}, firsts(again), "the failed batch and the one left in the pipeline; 2-3 and 6-7 were delivered")
		require.NotSame(t, old, again[0].part, "a new epoch")
		_, s, ok := h.lastStall(tp0)
		require.True(t, ok, "still stalled while the replayed batch is out")
		require.Equal(t, 1, s.Attempts)

		// It fails again: the next replay waits twice as long.
		h.ack(again[0], errors.New("poison"))
		h.ack(again[1], nil)
		time.Sleep(19 * time.Second)
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStallReplays, "t", 0), "backing off")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, int64(2), g.Get(MetricStallReplays, "t", 0))
		_, s, _ = h.lastStall(tp0)
		require.Equal(t, 2, s.Attempts, "attempts count across replays")

		// The third read succeeds: the watermark passes, the backoff resets.
		h.fetch(tp0, 8, records(tp0, 0, 8)...)
		h.fetch(tp0, 8, records(tp0, 0, 8)...)
		third := h.readAll()
		require.Equal(t, []int64{0}, firsts(third))
		h.ack(third[0], nil)
		time.Sleep(time.Second)
		synctest.Wait()
		meta, _, ok := h.lastStall(tp0)
		require.False(t, ok)
		require.Equal(t, int64(8), meta.Base, "healed in place, committed to the end")
		h.state(func(o *owner) { require.Zero(t, o.parts[tp0].replay.state.count) })
	})
}

// stall_replay_after: 0s keeps a failed partition stalled.
func TestOwnerNeverReplaysWhenDisabled(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\nstall_replay_after: 0s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		h.ack(h.read(), errors.New("poison"))
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Zero(t, g.Get(MetricStallReplays, "t", 0))
		require.Equal(t, int64(1), g.Get(MetricStalled, "t", 0))
	})
}

// Retries go out in offset order, whatever order their backoffs ended in:
// two retries due at one instant came out in the order their timers fired,
// which synctest leaves open, so a model schedule did not replay by its
// seed (20 of 300 schedules differed between two runs).
// Retries that fall due at one instant go out by partition, whatever order
// their nacks came in: with a timer goroutine per retry they reached the
// owner in the scheduler's order (8 partitions: sorted by chance once in
// 40,320 runs), and the model could not replay a seed step for step.
func TestRetriesDueTogetherGoOutByPartition(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\nnack_retry: { max_retries: 3, initial_backoff: 1s, max_backoff: 1s }\n"), m)
		var tps []topicPartition
		for p := range int32(8) {
			tps = append(tps, topicPartition{"t", p})
		}
		h.assign(tps...)
		for _, tp := range tps {
			h.fetch(tp, 1, records(tp, 0, 1)...)
		}
		bs := h.readAll()
		require.Len(t, bs, 8)
		slices.SortFunc(bs, func(x, y *Batch) int { return cmp.Compare(y.part.tp.partition, x.part.tp.partition) })
		for _, b := range bs { // the last partition's nack first
			h.ack(b, errors.New("sink down"))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		var got []int32
		for _, b := range h.readAll() {
			got = append(got, b.part.tp.partition)
		}
		require.Equal(t, []int32{0, 1, 2, 3, 4, 5, 6, 7}, got)
	})
}

func TestRetriesGoOutInOffsetOrder(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\nnack_retry: { max_retries: 3, initial_backoff: 1s, max_backoff: 1s }\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 3, records(tp0, 0, 3)...)
		bs := h.readAll()
		require.Equal(t, []int64{0, 1, 2}, firsts(bs))
		h.ack(bs[0], nil)
		h.ack(bs[2], errors.New("later first"))
		time.Sleep(500 * time.Millisecond)
		h.ack(bs[1], errors.New("earlier second"))
		time.Sleep(1500 * time.Millisecond) // both backoffs are over
		synctest.Wait()
		require.Equal(t, []int64{1, 2}, firsts(h.readAll()), "the earlier batch first")
	})
}
