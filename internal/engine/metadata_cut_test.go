package engine

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// A commit tick that found a partition's delivered ranges filling
// commit_metadata_max_bytes exactly committed them whole: nothing cut,
// nothing counted. Every later plan, with more ranges, cut the new ones and
// kept the same ranges, so it encoded the very metadata the broker held
// already; the owner sent no commit for it (differs), and only sent commits
// counted their cut (noteCut), so kafka_watermark_commit_metadata_truncated_total
// stayed 0 while ranges were being left out. How likely a tick is to land on
// the exact fit depends on how many ranges a commit period adds: few when
// the sink is slow, as on a loaded machine, which is when the end-to-end
// TestFragmentedMetadata found a partition whose cut was never counted. Here
// a tick follows every delivery, so one always lands on it.
func TestCutCountedWhenTheCutMetadataIsCommittedAlready(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\ncommit_metadata_max_bytes: 200\nmax_pending_batches: 1000\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 200, records(tp0, 0, 200)...)
		bs := h.readAll()
		// Batch 0 is never acknowledged: the watermark stays at 0, and
		// every other batch after it is a delivered range of its own.
		cut, lastSent := 0, 0
		for i := 1; i < len(bs); i += 2 {
			h.ack(bs[i], nil)
			time.Sleep(time.Second)
			synctest.Wait()
			h.state(func(o *owner) {
				c, _ := o.plan(o.parts[tp0], o.commits.metaMax)
				cut = c.cut
			})
			h.cl.mu.Lock()
			lastSent = len(h.cl.commits)
			h.cl.mu.Unlock()
		}
		require.Positive(t, cut, "the ranges outgrew the metadata")
		require.Positive(t, g.Get(MetricMetaTruncated, tp0.topic, tp0.partition), "ranges cut (%d in the last plan, %d commits sent), counted", cut, lastSent)
	})
}

// The same for a revoke's final commit: a drain that ends just after its
// partition's ranges outgrew the room plans a cut commit that encodes what
// the last periodic commit holds already. planFinalCommits sends no commit for it,
// and it must count its cut all the same.
func TestDrainCountsTheCutOfACommitHeldAlready(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\ncommit_metadata_max_bytes: 200\nmax_pending_batches: 1000\ndrain_timeout: 1s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 200, records(tp0, 0, 200)...)
		bs := h.readAll()
		// Batch 0 is never acknowledged, so every other batch is a
		// delivered range of its own. A tick follows each delivery until
		// the one whose range no longer fits: then the revoke, at once.
		cut := 0
		for i := 1; i < len(bs) && cut == 0; i += 2 {
			h.ack(bs[i], nil)
			h.state(func(o *owner) {
				c, _ := o.plan(o.parts[tp0], o.commits.metaMax)
				cut = c.cut
			})
			if cut == 0 {
				time.Sleep(time.Second)
				synctest.Wait()
			}
		}
		require.Positive(t, cut, "the ranges outgrew the metadata")
		require.Zero(t, g.Get(MetricMetaTruncated, tp0.topic, tp0.partition), "every commit so far held all its ranges")
		h.cl.mu.Lock()
		sent := len(h.cl.commits)
		h.cl.mu.Unlock()
		reply := h.revoke(tp0)
		time.Sleep(2 * time.Second) // past drain_timeout: batch 0 never comes back
		synctest.Wait()
		final := <-reply
		require.Positive(t, sent, "periodic commits were sent")
		require.Empty(t, final.offsets, "the final commit would change nothing the broker holds")
		require.Positive(t, g.Get(MetricMetaTruncated, tp0.topic, tp0.partition), "the drain's cut of %d range(s) is counted", cut)
	})
}
