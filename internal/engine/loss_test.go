package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// fetchFrom hands the owner one poll's records of tp, with the log end hwm
// and the log start logStart.
func (h *ownerHarness) fetchFrom(tp topicPartition, hwm, logStart int64, recs ...*kgo.Record) {
	f := kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: tp.topic, Partitions: []kgo.FetchPartition{{Partition: tp.partition, HighWatermark: hwm, LogStartOffset: logStart, Records: recs}}}}}
	h.polls++
	r := pollResult{seq: h.polls, fetches: kgo.Fetches{f}, done: make(chan struct{})}
	h.o.inbox.pollCh <- r
	<-r.done
}

// fetchErr hands the owner a poll holding only an error of tp, shaped as
// kgo injects one: no records, every offset zero.
func (h *ownerHarness) fetchErr(tp topicPartition, err error) {
	f := kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: tp.topic, Partitions: []kgo.FetchPartition{{Partition: tp.partition, Err: err}}}}}
	h.polls++
	r := pollResult{seq: h.polls, fetches: kgo.Fetches{f}, done: make(chan struct{})}
	h.o.inbox.pollCh <- r
	<-r.done
}

// epochRecords returns records of tp at offsets [from, to) with leader
// epoch epoch.
func epochRecords(tp topicPartition, from, to int64, epoch int32) []*kgo.Record {
	rs := records(tp, from, to)
	for _, r := range rs {
		r.LeaderEpoch = epoch
	}
	return rs
}

// lastMeta decodes the metadata of the last commit of tp and its loss.
func (h *ownerHarness) lastMeta(tp topicPartition) (commitmeta.Meta, commitmeta.Loss, bool) {
	h.t.Helper()
	m, fields := h.lastFields(tp)
	l, ok, err := commitmeta.LossFromFields(fields)
	require.NoError(h.t, err, fields)
	return m, l, ok
}

// setStart sets the log start the fake client lists for tp.
func (f *fakeClient) setStart(tp topicPartition, off int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = kadm.ListedOffsets{tp.topic: {tp.partition: {Topic: tp.topic, Partition: tp.partition, Offset: off}}}
}

// Retention overtakes a stalled partition (the first scenario, in
// the owner): partition 0 stalls at its batch 100-199 with 200-499
// delivered and paused at max_pending_batches, and everything below 1,500
// is deleted. The listed log start reports 500-1499 at once; the replay in
// place then finds its rewind below the log start, reports 100-199, and goes
// on from 1,500 without a restart. Before the fix, the replay's first fetch
// was dropped as "not read from the rewound position" and the partition
// never handed out again.
func TestOwnerRetentionPastAStallReportsTheLossAndGoesOn(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 100\nmax_pending_batches: 4\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 1s\ntopic_lag_refresh_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 2000, records(tp0, 0, 500)...)
		bs := h.readAll()
		require.Equal(t, []int64{0, 100, 200, 300}, firsts(bs))
		h.ack(bs[0], nil)
		h.ack(bs[1], errors.New("HTTP 503"))
		h.ack(bs[2], nil)
		h.ack(bs[3], nil)
		last := h.readAll()
		require.Equal(t, []int64{400}, firsts(last))
		h.ack(last[0], nil)
		require.True(t, h.cl.isPaused(tp0), "paused at max_pending_batches")

		h.cl.setStart(tp0, 1500) // DeleteRecords below 1,500
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(1000), g.Get(MetricLostRecords, "t", 0), "500-1499 were never fetched and are gone")
		time.Sleep(time.Second)
		synctest.Wait()
		meta, loss, ok := h.lastMeta(tp0)
		require.True(t, ok, "the commit carries the loss")
		require.Equal(t, int64(100), meta.Base)
		require.Equal(t, commitmeta.Loss{Report: commitmeta.Report{First: 500, Last: 1499, Since: loss.Since, Reason: commitmeta.CauseRetention}, Count: 1000}, loss)

		time.Sleep(10 * time.Second) // stall_replay_after: replayed in place
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStallReplays, "t", 0))
		h.fetch(tp0, 2000) // the poll window of the rewind
		h.fetchFrom(tp0, 2000, 1500, records(tp0, 1500, 2000)...)
		again := h.readAll()
		require.Equal(t, []int64{1500, 1600, 1700, 1800}, firsts(again), "handing out again from the log start")
		require.Equal(t, int64(1100), g.Get(MetricLostRecords, "t", 0), "and 100-199, the failed batch, is reported lost once")
		for _, b := range again {
			h.ack(b, nil)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		meta, loss, ok = h.lastMeta(tp0)
		require.True(t, ok)
		require.Equal(t, int64(1900), meta.Base, "the watermark went on from the first record that exists")
		require.Equal(t, int64(100), loss.First)
		require.Equal(t, int64(1499), loss.Last)
		require.Equal(t, int64(1100), loss.Count)
		require.Zero(t, g.Get(MetricStalled, "t", 0), "healed")
	})
}

// A member that starts from a commit below the log start (the pipeline was
// down while the records were deleted) reports what it can no longer
// deliver: from the commit to the log start, less the delivered ranges the
// commit carries, less a loss the commit already reports.
func TestOwnerCommitBelowTheLogStartIsALoss(t *testing.T) {
	stalled := commitmeta.Stall{Report: commitmeta.Report{First: 100, Last: 199, Since: time.Unix(1, 0), Reason: "r"}, Attempts: 1, Member: "m"}
	base := commitmeta.Meta{Base: 100, Epoch: 0, Delivered: []commitmeta.Range{{From: 200, To: 500}}}
	for name, tc := range map[string]struct {
		extra     string
		wantLost  int64
		wantFirst int64
	}{
		"nothing reported before": {extra: stalled.Fields() + " l=0", wantLost: 1100, wantFirst: 100},
		"500-1499 reported before": {
			extra:    stalled.Fields() + " l=0 " + commitmeta.Loss{Report: commitmeta.Report{First: 500, Last: 1499, Since: time.Now(), Reason: commitmeta.CauseRetention}, Count: 1000}.Fields(),
			wantLost: 100, wantFirst: 100,
		},
	} {
		t.Run(name, func(t *testing.T) {
			m, g := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, testConfig(t, "batch_max_records: 100\ncommit_period: 1s\n"), m)
				meta, cut := commitmeta.Encode(base, tc.extra, 4000)
				require.Zero(t, cut)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 100, leaderEpoch: 0, meta: meta}})
				h.fetchFrom(tp0, 2000, 1500, records(tp0, 1500, 1600)...)
				require.Equal(t, tc.wantLost, g.Get(MetricLostRecords, "t", 0))
				b := h.read()
				require.Equal(t, int64(1500), b.raw.first)
				h.ack(b, nil)
				time.Sleep(time.Second)
				synctest.Wait()
				got, loss, ok := h.lastMeta(tp0)
				require.True(t, ok)
				require.Equal(t, int64(1600), got.Base)
				require.Equal(t, tc.wantFirst, loss.First)
				require.Equal(t, int64(1499), loss.Last)
			})
		})
	}
}

// A gap that the log start did not pass is compaction or transaction
// markers, not a loss.
func TestOwnerGapAboveTheLogStartIsNoLoss(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 100\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 100, leaderEpoch: 0}})
		h.fetchFrom(tp0, 2000, 50, records(tp0, 150, 200)...)
		h.fetchFrom(tp0, 2000, 50, records(tp0, 300, 400)...)
		require.Len(t, h.readAll(), 2)
		require.Zero(t, g.Get(MetricLostRecords, "t", 0))
	})
}

// lost_records_report_for: the loss leaves the commits after it, and 0s
// carries none; the counter counts it all the same.
func TestOwnerLossReportExpires(t *testing.T) {
	for _, reportFor := range []time.Duration{0, time.Minute} {
		t.Run(reportFor.String(), func(t *testing.T) {
			m, g := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, testConfig(t, "batch_max_records: 100\ncommit_period: 1s\nlost_records_report_for: "+reportFor.String()+"\n"), m)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
				h.fetchFrom(tp0, 2000, 1000, records(tp0, 1000, 1100)...)
				require.Equal(t, int64(1000), g.Get(MetricLostRecords, "t", 0))
				h.ack(h.read(), nil)
				time.Sleep(time.Second)
				synctest.Wait()
				_, _, ok := h.lastMeta(tp0)
				require.Equal(t, reportFor > 0, ok)
				if reportFor == 0 {
					return
				}
				time.Sleep(reportFor)
				synctest.Wait()
				time.Sleep(time.Second)
				synctest.Wait()
				meta, _, ok := h.lastMeta(tp0)
				require.False(t, ok, "expired")
				require.Equal(t, int64(1100), meta.Base)
			})
		})
	}
}

// An error fetch kgo injects carries HighWatermark 0: it is no log end, and
// must not drop the delivered ranges as reaching past it (they did: records
// 20-29, delivered, went out again).
func TestOwnerErrorFetchKeepsTheDeliveredRanges(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
		meta, _ := commitmeta.Encode(commitmeta.Meta{Base: 0, Epoch: 0, Delivered: []commitmeta.Range{{From: 20, To: 30}}}, "l=0", 4000)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0, meta: meta}})
		h.fetchErr(tp0, kerr.TopicAuthorizationFailed)
		h.fetch(tp0, 40, records(tp0, 0, 40)...)
		require.Equal(t, []int64{0, 10, 30}, firsts(h.readAll()))
		require.Equal(t, int64(10), g.Get(MetricSkipped, "t", 0))
	})
}

// Skip batches count against max_pending_batches: with a failed head, a
// partition whose commit shows much delivered above it must pause, not
// buffer every fetch for as long as the head is stuck.
func TestOwnerSkipBatchesPauseAtThePendingLimit(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\nmax_pending_batches: 2\ncommit_period: 1s\n"), m)
		meta, _ := commitmeta.Encode(commitmeta.Meta{Base: 0, Epoch: 0, Delivered: []commitmeta.Range{{From: 10, To: 5000}}}, "l=0", 4000)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0, meta: meta}})
		h.fetch(tp0, 6000, records(tp0, 0, 10)...)
		head := h.read()
		h.ack(head, errors.New("down"))
		h.fetch(tp0, 6000, records(tp0, 10, 20)...)
		require.True(t, h.cl.isPaused(tp0), "a skip batch took the partition to its limit")
	})
}

// A revoke's final commit is made even when a periodic commit of the same
// offset is in flight: that commit may fail, and nothing would send the
// drained watermark again. The final commit waits for the periodic one's
// answer, so an older periodic commit can never land after it.
func TestOwnerFinalCommitIsNotDedupedAgainstACommitInFlight(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		h.ack(h.read(), nil)
		block := make(chan struct{})
		h.cl.mu.Lock()
		h.cl.block, h.cl.blockAsync = block, true
		h.cl.codes[tp0] = int16(kerr.RebalanceInProgress.Code)
		h.cl.mu.Unlock()
		time.Sleep(time.Second) // the periodic commit of 10 starts, and waits
		synctest.Wait()
		final := <-h.revoke(tp0)
		require.Equal(t, kgo.EpochOffset{Epoch: 0, Offset: 10}, final.offsets["t"][0], "the drained watermark is committed")

		done := make(chan error, 1)
		go func() { done <- h.o.finalCommit(context.Background(), final, "revoke") }()
		synctest.Wait()
		h.cl.mu.Lock()
		require.Empty(t, h.cl.commits, "the final commit waits for the periodic one's answer")
		delete(h.cl.codes, tp0)
		h.cl.block = nil
		h.cl.mu.Unlock()
		close(block)
		require.NoError(t, <-done)
		h.cl.mu.Lock()
		defer h.cl.mu.Unlock()
		require.Len(t, h.cl.commits, 2)
		require.False(t, h.cl.commits[0].sync, "the periodic commit first")
		require.True(t, h.cl.commits[1].sync, "then the final one")
	})
}

// A revoke during a replay's drain ends the partition for good: the replay
// must not put a new, live epoch in its place (before the fix the replay's
// drain ended first, rewound into a new epoch, and the revoke ended only the
// old one: the member went on committing and rewinding a partition it no
// longer owned).
func TestOwnerRevokeDuringAReplayDrainEndsThePartition(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 5s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 6, records(tp0, 0, 6)...)
		bs := h.readAll()
		require.Len(t, bs, 3)
		h.ack(bs[0], errors.New("poison"))
		h.ack(bs[1], nil) // bs[2] stays in the pipeline: the replay drain waits
		time.Sleep(10 * time.Second)
		synctest.Wait()
		reply := h.revoke(tp0)
		h.ack(bs[2], nil) // both drains may end now
		final := <-reply
		require.Equal(t, int64(0), final.offsets["t"][0].Offset)
		h.cl.mu.Lock()
		commitsAtRevoke := len(h.cl.commits)
		h.cl.mu.Unlock()
		h.fetch(tp0, 6) // a poll window: a rewind would be made in it
		time.Sleep(5 * time.Second)
		synctest.Wait()
		h.state(func(o *owner) { require.Nil(t, o.parts[tp0], "nothing of tp0 is live") })
		h.cl.mu.Lock()
		defer h.cl.mu.Unlock()
		require.Empty(t, h.cl.rewinds, "no rewind of a revoked partition")
		require.Len(t, h.cl.commits, commitsAtRevoke, "no commit after the revoke")
		require.Zero(t, g.Get(MetricStallReplays, "t", 0))
		require.Zero(t, g.Get(MetricStalled, "t", 0))
	})
}

// A record at or below the delivered ranges with a newer leader epoch than
// they were written under proves them stale, even between or below them:
// member 1 starts from `d=10.10 l=0`, fetches 0-5 where 3-5 carry epoch 1,
// and must neither commit the stale ranges nor skip 10-19 of the new log.
func TestOwnerNewerEpochBelowTheRangesDropsThem(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
		meta, _ := commitmeta.Encode(commitmeta.Meta{Base: 0, Epoch: 0, Delivered: []commitmeta.Range{{From: 10, To: 20}}}, "l=0", 4000)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0, meta: meta}})
		h.fetch(tp0, 30, append(epochRecords(tp0, 0, 3, 0), epochRecords(tp0, 3, 6, 1)...)...)
		for _, b := range h.readAll() {
			h.ack(b, nil)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got, _, _ := h.lastMeta(tp0)
		require.Equal(t, int64(6), got.Base)
		require.Equal(t, int32(1), got.Epoch)
		require.Empty(t, got.Delivered, "the stale ranges are not carried on")
		h.fetch(tp0, 30, epochRecords(tp0, 6, 30, 1)...)
		require.Equal(t, []int64{6, 16, 26}, firsts(h.readAll()), "10-19 of the new log are delivered")
		require.Zero(t, g.Get(MetricSkipped, "t", 0))
	})
}

// A truncation below what was queued: 0-7 were delivered from the old log
// (epoch 0), then the fetch goes back to 5 with epoch 1. 5-11 of the new
// log are all delivered (before the fix 5-7 were dropped as fetched
// already, and the commit passed them), the commit goes back to 5 once,
// carrying the truncation, and 3 truncated offsets are counted.
func TestOwnerTruncationBelowTheQueueDeliversTheNewLog(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 4\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 8, epochRecords(tp0, 0, 8, 0)...)
		for _, b := range h.readAll() {
			h.ack(b, nil)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 8}}, h.cl.committed(tp0))

		h.fetch(tp0, 12, epochRecords(tp0, 5, 12, 1)...)
		again := h.readAll()
		require.Equal(t, []int64{5, 9}, firsts(again), "the new log from the divergence point")
		require.Equal(t, int64(3), g.Get(MetricTruncated, "t", 0))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 8}, {Epoch: 0, Offset: 5}}, h.cl.committed(tp0), "one commit back, at the divergence point")
		_, loss, ok := h.lastMeta(tp0)
		require.True(t, ok)
		require.Equal(t, commitmeta.CauseTruncation, loss.Reason)
		for _, b := range again {
			h.ack(b, nil)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		c := h.cl.committed(tp0)
		require.Equal(t, kgo.EpochOffset{Epoch: 1, Offset: 12}, c[len(c)-1])
	})
}

// After a restart from a commit that the new log does not hold, kgo's
// epoch validation resumes at the divergence point: the new records are
// delivered, and the truncation is reported.
func TestOwnerTruncationBelowTheCommitAtStart(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 4\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 8, leaderEpoch: 0}})
		h.fetch(tp0, 12, epochRecords(tp0, 5, 12, 1)...)
		require.Equal(t, []int64{5, 9}, firsts(h.readAll()))
		require.Equal(t, int64(3), g.Get(MetricTruncated, "t", 0))
		require.Zero(t, g.Get(MetricLostRecords, "t", 0))
	})
}

// The retention headroom of a stalled partition: the topic's retention.ms
// less the age of the record at its watermark, going down as it waits;
// absent for a compact-only topic, and where the config cannot be read.
func TestOwnerRetentionHeadroom(t *testing.T) {
	for name, tc := range map[string]struct {
		retention map[string]int64
		err       error
		want      bool
	}{
		"an hour":      {retention: map[string]int64{"t": 3_600_000}, want: true},
		"compact only": {retention: map[string]int64{"t": -1}},
		"refused":      {err: kerr.TopicAuthorizationFailed},
	} {
		t.Run(name, func(t *testing.T) {
			m, g := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				conf := testConfig(t, "batch_max_records: 10\ncommit_period: 1s\nstall_replay_after: 0s\n")
				h := startOwner(t, conf, m)
				h.cl.mu.Lock()
				h.cl.retention, h.cl.retentionErr = tc.retention, tc.err
				h.cl.mu.Unlock()
				h.assign(tp0)
				rs := records(tp0, 0, 10)
				for _, r := range rs {
					r.Timestamp = time.Now().Add(-10 * time.Minute)
				}
				h.fetch(tp0, 10, rs...)
				h.ack(h.read(), errors.New("down"))
				time.Sleep(time.Second)
				synctest.Wait()
				got := g.Get(MetricHeadroom, "t", 0)
				if !tc.want {
					require.Zero(t, got, "not shown")
					return
				}
				require.InDelta(t, 3000-1, got, 1)
				require.Equal(t, int64(3600), g.Get(MetricRetention, "t", 0))
				time.Sleep(time.Hour)
				synctest.Wait()
				require.InDelta(t, -601, g.Get(MetricHeadroom, "t", 0), 1, "past retention: negative")
			})
		})
	}
}

// A loss is reported once per process, across the partition's epochs: a
// revoke and a reassignment that start from the same commit below the log
// start (nothing delivered since, and with commit_metadata off nothing
// carries the report) do not report it again. Found by the owner's model
// test (TestOwnerModel).
func TestOwnerLossIsReportedOncePerProcess(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 100\ncommit_period: 1s\ncommit_metadata: false\n"), m)
		for range 2 {
			h.assign(tp0)
			h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
			h.fetchFrom(tp0, 2000, 1000, records(tp0, 1000, 1100)...)
			h.read() // in the pipeline, never acknowledged
			<-h.revoke(tp0)
		}
		require.Equal(t, int64(1000), g.Get(MetricLostRecords, "t", 0))
	})
}

// A second replay in place after a deletion passed over a delivered range:
// the range is still known delivered, so the second replay reports nothing
// more lost (before, the first replay's epoch forgot the range its fetch
// jumped over, and the second reported its delivered offsets lost; found
// by the chaos harness's retention fault).
func TestOwnerSecondReplayAfterADeletionKeepsTheDeliveredRanges(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		bs := h.readAll()
		require.Equal(t, []int64{0, 2, 4, 6, 8}, firsts(bs))
		for i, b := range bs {
			if i == 2 {
				h.ack(b, nil) // 4-5 delivered
			} else {
				h.ack(b, errors.New("down"))
			}
		}
		time.Sleep(10 * time.Second) // the first replay
		synctest.Wait()
		h.fetch(tp0, 10) // its poll window
		h.fetchFrom(tp0, 10, 7, records(tp0, 7, 10)...)
		require.Equal(t, int64(5), g.Get(MetricLostRecords, "t", 0), "0-3 and 6 are gone; 4-5 were delivered")
		for _, b := range h.readAll() {
			h.ack(b, errors.New("down"))
		}
		time.Sleep(30 * time.Second) // the second replay, backed off
		synctest.Wait()
		require.Equal(t, int64(2), g.Get(MetricStallReplays, "t", 0))
		h.fetch(tp0, 10)
		h.fetchFrom(tp0, 10, 7, records(tp0, 7, 10)...)
		require.Equal(t, int64(5), g.Get(MetricLostRecords, "t", 0), "nothing more: 4-5 are still known delivered")
		// A batch starts at each boundary of the attempts carried from the
		// epoch before (6-7 and 8-9 failed as two batches): 7, then 8-9.
		require.Equal(t, []int64{7, 8}, firsts(h.readAll()))
	})
}

// A position the owner hands to kgo or the broker always carries a leader
// epoch it knows, so that a later unclean truncation below it is caught by
// OffsetForLeaderEpoch: -1 skips that check, and the member then passes
// records of the new log in silence. Four places used to give -1 (found by
// TestOwnerModel): the second replay in place at one offset, the rewind of
// a truncation, the commit after a truncation whose record before the
// divergence was never fetched, and a first commit above a gap.
func TestOwnerPositionsCarryAKnownLeaderEpoch(t *testing.T) {
	t.Run("second replay at one offset", func(t *testing.T) {
		m, _ := testMetrics(t)
		synctest.Test(t, func(t *testing.T) {
			h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 1s\n"), m)
			h.assign(tp0)
			h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
			h.fetch(tp0, 3, records(tp0, 0, 3)...)
			bs := h.readAll()
			h.ack(bs[0], nil)
			h.ack(bs[1], errors.New("down"))
			time.Sleep(11 * time.Second)
			synctest.Wait()
			h.fetch(tp0, 3) // the rewind's poll window
			h.fetch(tp0, 3, records(tp0, 1, 3)...)
			h.ack(h.read(), errors.New("down"))
			time.Sleep(21 * time.Second)
			synctest.Wait()
			h.fetch(tp0, 3)
			h.cl.mu.Lock()
			defer h.cl.mu.Unlock()
			require.Len(t, h.cl.rewinds, 2)
			for _, r := range h.cl.rewinds {
				require.Equal(t, kgo.EpochOffset{Epoch: 0, Offset: 1}, r["t"][0])
			}
		})
	})
	t.Run("truncation rewind", func(t *testing.T) {
		m, _ := testMetrics(t)
		synctest.Test(t, func(t *testing.T) {
			h := startOwner(t, testConfig(t, "batch_max_records: 4\ncommit_period: 1s\n"), m)
			h.assign(tp0)
			h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
			h.fetch(tp0, 8, epochRecords(tp0, 0, 8, 0)...)
			bs := h.readAll()
			h.ack(bs[0], nil) // 4-7 stay undelivered: a rewind to 4
			h.fetch(tp0, 9, epochRecords(tp0, 6, 9, 1)...)
			h.cl.mu.Lock()
			defer h.cl.mu.Unlock()
			require.Equal(t, []map[string]map[int32]kgo.EpochOffset{{"t": {0: {Epoch: 0, Offset: 4}}}}, h.cl.rewinds)
		})
	})
	t.Run("commit back after a truncation", func(t *testing.T) {
		m, _ := testMetrics(t)
		synctest.Test(t, func(t *testing.T) {
			h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
			h.assign(tp0)
			h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 10, leaderEpoch: 0}})
			h.fetch(tp0, 12, epochRecords(tp0, 6, 12, 1)...)
			time.Sleep(time.Second)
			synctest.Wait()
			require.Equal(t, []kgo.EpochOffset{{Epoch: 1, Offset: 6}}, h.cl.committed(tp0))
		})
	})
	t.Run("first commit above a gap", func(t *testing.T) {
		m, _ := testMetrics(t)
		synctest.Test(t, func(t *testing.T) {
			h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\n"), m)
			h.assign(tp0)
			h.fetchFrom(tp0, 3, 0, records(tp0, 1, 3)...)
			h.ack(h.read(), errors.New("down"))
			time.Sleep(time.Second)
			synctest.Wait()
			require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 1}}, h.cl.committed(tp0))
		})
	})
}

// kgo's data loss locates a truncation even when the records that follow
// start higher (retention took the new log's first records too): 0-9 were
// delivered from the old log, which was truncated at 5 and rewritten, and
// the new log was then deleted below 12. 5-9 are truncated and 5-11 lost;
// before, only 10-11 were reported, and nothing truncated.
func TestOwnerDataLossThenDeletion(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 10, leaderEpoch: 0}})
		h.fetchErr(tp0, &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: 10, ConsumedToEpoch: 0, ResetTo: 5, ResetToEpoch: 1})
		h.fetchFrom(tp0, 15, 12, epochRecords(tp0, 12, 15, 1)...)
		require.Equal(t, int64(5), g.Get(MetricTruncated, "t", 0))
		require.Equal(t, int64(7), g.Get(MetricLostRecords, "t", 0))
		require.Equal(t, []int64{12}, firsts(h.readAll()))
	})
}

// A carried loss that merged events with offsets between them not lost
// does not count its whole span as reported: offsets held in memory then,
// and lost since, are reported by the member that starts from it (before,
// they were hidden; found by TestOwnerModel).
func TestOwnerMergedLossHidesNothing(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
		loss := commitmeta.Loss{Report: commitmeta.Report{First: 2, Last: 10, Since: time.Now(), Reason: commitmeta.CauseRetention}, Count: 2}
		meta, _ := commitmeta.Encode(commitmeta.Meta{Base: 0, Epoch: 0}, loss.Fields(), 4000)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0, meta: meta}})
		h.fetchFrom(tp0, 15, 11, records(tp0, 11, 15)...)
		require.Equal(t, int64(11), g.Get(MetricLostRecords, "t", 0), "0-10: the report said 2 of 2-10, not which")
	})
}

// A partition paused at max_pending_batches resumes fetching only once its
// ready queue is short too: resumed at once, it could take a poll asked for
// while it was paused on top of a full queue, every time (found by
// TestOwnerModel: 20 records ready with room for 15).
func TestOwnerResumesFetchingBelowBothLimits(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\nmax_pending_batches: 1\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 16, records(tp0, 0, 16)...)
		h.ack(h.read(), nil)
		require.True(t, h.cl.isPaused(tp0), "15 batches still ready")
		for range 7 {
			h.ack(h.read(), nil)
		}
		require.True(t, h.cl.isPaused(tp0), "8 ready")
		h.ack(h.read(), nil)
		require.False(t, h.cl.isPaused(tp0), "7 ready, none pending: fetching again")
	})
}

// Two unclean elections in a row that truncate at the same offset are two
// truncations: kgo's report of the second (it had consumed records of the
// log the first one made) is not the first one met again. Before, it was
// taken for the first and dropped: the record of the first new log still in
// flight stood for an offset the second rewrote, and when retention then
// deleted the second new log's records there, one of them was lost without
// a word (found by TestOwnerModel under ordering: key, seed 1973).
func TestOwnerSecondTruncationAtTheSameOffset(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 4, epochRecords(tp0, 0, 4, 0)...)
		h.ack(h.read(), nil) // 0-3 delivered from the first log
		// Epoch 1 rewrites the log from 2; kgo reports it and resumes at 2.
		h.fetchErr(tp0, &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: 4, ConsumedToEpoch: 0, ResetTo: 2, ResetToEpoch: 0})
		require.Equal(t, int64(2), g.Get(MetricTruncated, "t", 0))
		h.fetchFrom(tp0, 3, 0, epochRecords(tp0, 2, 3, 1)...)
		inFlight := h.read() // offset 2 of epoch 1's log
		require.Equal(t, []int64{2}, firsts([]*Batch{inFlight}))
		// Epoch 2 rewrites it from 2 again, and retention deletes below 5:
		// kgo had consumed epoch 1's record at 2.
		h.fetchErr(tp0, &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: 3, ConsumedToEpoch: 1, ResetTo: 2, ResetToEpoch: 0})
		h.fetchFrom(tp0, 8, 5, epochRecords(tp0, 5, 8, 2)...)
		require.Equal(t, int64(3), g.Get(MetricLostRecords, "t", 0), "2-4 of epoch 2's log were never delivered: all three are lost")
		h.ack(inFlight, nil)
		require.Equal(t, int64(1), g.Get(MetricLateAcks, "t", 0), "epoch 1's record at 2 is of a log that no longer exists")
	})
}

// A transaction marker launders stale delivered ranges (issue 28, model
// seed 5206): member A delivers 4-5 under leader epoch 0 and commits
// `2/e0` with the range [4,6). An unclean election truncates the log at 2;
// the new leader (epoch 1) writes a transaction marker at 2, then records
// 3-6. Member B, assigned from `2/e0`, fetches only the marker. Before the
// fix, the stale-range check never saw a control record, so B kept the
// range and committed `3/e1` restating it under the marker's leader epoch
// (l=1); member C, assigned from that commit, skipped 4-5 of the new log,
// never delivered, and committed past them. Under both orderings.
func TestOwnerTransactionMarkerProvesTheRangesStale(t *testing.T) {
	for _, ordering := range []string{"none", "key"} {
		t.Run(ordering, func(t *testing.T) {
			m, g := testMetrics(t)
			conf := "ordering: " + ordering + "\nbatch_max_records: 10\ncommit_period: 1s\n"
			keyOf := func(o int64) (string, bool) { return fmt.Sprint("k", o), true }
			// B: from A's commit, fetches the new leader's marker at 2.
			meta := fetchedCommit{offset: 2, leaderEpoch: 0, meta: "wm1 o=2 e=0 d=2.2 l=0"}
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, testConfig(t, conf), m)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: meta})
				marker := &kgo.Record{Topic: tp0.topic, Partition: tp0.partition, Offset: 2, LeaderEpoch: 1,
					Attrs: kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: true})}
				h.fetch(tp0, 7, marker)
				require.Empty(t, h.readAll())
				time.Sleep(time.Second)
				synctest.Wait()
				meta = h.lastFetched(tp0)
				meta.leaderEpoch = 1
			})
			d, err := commitmeta.DecodeCommit(meta.meta)
			require.NoError(t, err)
			require.Equal(t, int64(3), d.Base, "past the marker")
			require.Empty(t, d.Delivered, "the marker's newer leader epoch proves [4,6) stale: it is not restated")
			// C: from B's commit, fetches 3-6 of the new log.
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, testConfig(t, conf), m)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: meta})
				h.fetch(tp0, 7, keyedRecords(tp0, 3, 7, keyOf)...)
				var out []int64
				for _, b := range h.readAll() {
					out = append(out, offsets(b)...)
				}
				require.Equal(t, []int64{3, 4, 5, 6}, out, "4-5 of the new log are delivered")
			})
			require.Zero(t, g.Get(MetricSkipped, "t", 0))
		})
	}
}

// A truncation met late does not forget the losses reported since it: a
// partition stalled at 5 (5-9 failed for good, not fetching) misses an
// unclean election that rewrites its log from 2; the new log then grows
// and retention deletes below 20, and the listed log start reports 10-19
// lost, offsets of the new log. When the truncation is met (kgo's data loss
// at 2) the new epoch resumes at 2 and finds the log start at 20: only 2-9
// are lost besides, 5-9 of the old log that were queued and not delivered
// counting once more. Before, the truncation forgot every offset reported
// at or above 2 as if it were of the old log, and 10-19 were reported
// twice (found by TestOwnerModel, seeds 1704, 3109 and eight more).
func TestOwnerLateTruncationKeepsTheLossesReportedSince(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 5\ncommit_period: 1s\ntopic_lag_refresh_period: 1s\nstall_replay_after: 0s\nnack_retry: { max_retries: 0 }\ncommit_metadata: false\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 10, epochRecords(tp0, 0, 10, 0)...)
		bs := h.readAll()
		require.Equal(t, []int64{0, 5}, firsts(bs))
		h.ack(bs[0], nil)
		h.ack(bs[1], errors.New("HTTP 503")) // failed for good: stalled at 5

		h.cl.setStart(tp0, 20) // the new log, deleted below 20
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(10), g.Get(MetricLostRecords, "t", 0), "10-19 were never fetched and are gone")

		h.fetchErr(tp0, &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: 10, ConsumedToEpoch: 0, ResetTo: 2, ResetToEpoch: 0})
		require.Equal(t, int64(3), g.Get(MetricTruncated, "t", 0), "2-4 were delivered from the old log")
		h.fetchFrom(tp0, 30, 20, epochRecords(tp0, 20, 30, 1)...)
		require.Equal(t, []int64{20, 25}, firsts(h.readAll()))
		require.Equal(t, int64(10+5+8), g.Get(MetricLostRecords, "t", 0), "5-9 of the old log, and 2-9 of the new one: 10-19 once")
	})
}

// A loss report that merged a truncation is named after it: its count holds
// the offsets delivered from the old log, so it does not say that every
// offset of its span was lost. Here 0-4 are lost to retention and 5-9,
// delivered, are truncated: the merged report spans 0-9 with a count of 10.
// Before, it kept the cause of the first event (retention), and the epoch
// that started from it took 5-9 as reported lost: when retention deleted the
// new log's 5-8, never delivered, nothing was said (found by TestOwnerModel,
// seeds 101034 and 5637).
func TestOwnerMergedTruncationHidesNothing(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 5\ncommit_period: 1s\nlost_records_report_for: 1h\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetchFrom(tp0, 10, 5, epochRecords(tp0, 5, 10, 0)...)
		require.Equal(t, int64(5), g.Get(MetricLostRecords, "t", 0), "0-4 deleted")
		h.ack(h.read(), nil) // 5-9

		h.fetch(tp0, 9, epochRecords(tp0, 5, 9, 1)...) // the new log from 5
		require.Equal(t, int64(5), g.Get(MetricTruncated, "t", 0))
		time.Sleep(time.Second)
		synctest.Wait()
		meta, loss, ok := h.lastMeta(tp0)
		require.True(t, ok)
		require.Equal(t, int64(5), meta.Base, "the commit back to the divergence point")
		require.Equal(t, commitmeta.Loss{Report: commitmeta.Report{First: 0, Last: 9, Since: loss.Since, Reason: commitmeta.CauseTruncation}, Count: 10}, loss)

		h.cl.mu.Lock()
		raw := h.cl.commits[len(h.cl.commits)-1].meta[tp0]
		h.cl.mu.Unlock()
		<-h.revoke(tp0)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 5, leaderEpoch: 0, meta: raw}})
		h.fetchFrom(tp0, 12, 9, epochRecords(tp0, 9, 12, 1)...) // the new log deleted below 9
		require.Equal(t, int64(5+4), g.Get(MetricLostRecords, "t", 0), "5-8 of the new log were never delivered")
	})
}

// Bug (issue 29): LOST over-counted. A batch error named one record of ten;
// the sink accepted the other nine, but the batch, not delivered as a
// whole, was in no delivered range, and when the replay in place found
// retention had taken the partition, all ten were reported lost before
// delivery. Only the one no hand-out was acknowledged for is. A truncation
// below accepted records makes them other records: they are forgotten.
func TestLostCountsOnlyWhatNoHandOutAccepted(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\nstall_replay_after: 1s\ndrain_timeout: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		b := h.read()
		h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("one failed"), failed: []int{5}}
		synctest.Wait()
		h.state(func(o *owner) {
			require.Equal(t, []commitmeta.Range{{From: 0, To: 5}, {From: 6, To: 10}}, o.lost.accepted[tp0].ranges)
		})
		time.Sleep(time.Second) // stall_replay_after: the replay in place
		synctest.Wait()
		h.fetch(tp0, 10) // the rewind's window
		// Retention took everything below 20.
		h.fetchFrom(tp0, 22, 20, records(tp0, 20, 22)...)
		require.Equal(t, int64(11), g.Get(MetricLostRecords, "t", 0), "offset 5, and 10-19, never fetched")

		h.state(func(o *owner) {
			o.lost.accepted[tp0] = acceptedOffsets{ranges: []commitmeta.Range{{From: 21, To: 22}, {From: 23, To: 30}}}
			o.truncated(o.parts[tp0], 25, 1, noPollWindow)
			require.Equal(t, []commitmeta.Range{{From: 21, To: 22}, {From: 23, To: 25}}, o.lost.accepted[tp0].ranges, "cut at the divergence point")
		})
	})
}

// Bug (model seeds 108713, 200395): a record delivered above the watermark
// from a log that an unclean election then truncated, rewrote and
// retention deleted, vouched for its offset: the new record there, deleted
// before delivery, went unreported. kgo resets a position below the log
// start without checking its leader epoch, so the only sign is the first
// record past the gap, of a newer leader epoch than the delivery: the
// delivery then no longer vouches for its offset. Of the same epoch, it
// does.
func TestLostCountsADeliveryOfAnOlderLeaderEpoch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		epoch int32 // of the first record past the gap
		want  int64
	}{
		{"same leader epoch: 7 was delivered", 0, 2},
		{"newer leader epoch: 7 may be another record", 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, g := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n"), m)
				meta, _, _ := commitmeta.EncodeCommit(commitmeta.Commit{Base: 5, Epoch: 0,
					Delivered: []commitmeta.Range{{From: 7, To: 8}}, EpochOf: func(int64) int32 { return 0 }}, 4000)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 5, leaderEpoch: 0, meta: meta}})
				h.fetchFrom(tp0, 10, 8, epochRecords(tp0, 8, 10, tc.epoch)...)
				require.Equal(t, tc.want, g.Get(MetricLostRecords, "t", 0))
			})
		})
	}
}
