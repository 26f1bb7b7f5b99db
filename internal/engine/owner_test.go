package engine

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

var (
	tp0 = topicPartition{"t", 0}
	tp1 = topicPartition{"t", 1}
)

func TestOwnerRoundRobinsPartitions(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\n"), m)
		h.assign(tp0, tp1)
		h.fetch(tp0, 6, records(tp0, 0, 6)...)
		h.fetch(tp1, 6, records(tp1, 0, 6)...)
		var got []topicPartition
		for range 6 {
			got = append(got, h.read().part.tp)
		}
		require.Equal(t, []topicPartition{tp0, tp1, tp0, tp1, tp0, tp1}, got, "one batch of each partition in turn")
		_, ok := h.tryRead()
		require.False(t, ok, "nothing left")
	})
}

func TestOwnerGiveBackGoesOutFirstAndIsNotAnAttempt(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 6, records(tp0, 0, 6)...)
		first := h.read()
		h.o.inbox.withdrawCh <- withdrawReq{given: first}
		again := h.read()
		require.Same(t, first, again, "the given-back batch goes out before the next one")
		require.Zero(t, again.attempt, "a batch the pipeline never saw is not a new attempt")
		h.state(func(o *owner) {
			p := o.parts[tp0]
			require.Equal(t, 1, unresolved(p))
			require.Zero(t, retrying(p))
			require.Equal(t, 1, p.led.pending(), "registered once")
		})
	})
}

func TestOwnerRetryArithmeticAndDrainSkipsRetries(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\nnack_retry: { max_retries: 2, initial_backoff: 1s, max_backoff: 1s }\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := h.read(), h.read()
		h.ack(a, errors.New("sink down"))
		h.state(func(o *owner) {
			p := o.parts[tp0]
			require.Equal(t, 2, unresolved(p), "a nacked batch with retries left is unresolved")
			require.Equal(t, 1, retrying(p), "and waits for its retry")
		})
		_, ok := h.tryRead()
		require.False(t, ok, "the retry waits for its backoff")
		time.Sleep(time.Second)
		retry := h.read()
		require.Same(t, a, retry)
		require.Equal(t, 1, retry.attempt)
		h.ack(retry, errors.New("still down"))
		h.ack(b, nil)
		// The revoke's drain does not wait for the batch in backoff: only b
		// was in the pipeline, and it is resolved.
		reply := h.revoke(tp0)
		select {
		case final := <-reply:
			require.Equal(t, epochOffsets{"t": {0: {Epoch: 0, Offset: 0}}}, final.offsets,
				"the watermark never moved: the start offset is committed, for its delivered ranges, with the leader epoch of the record there")
			dm, fields, err := commitmeta.DecodeFields(final.meta[tp0])
			require.NoError(t, err)
			require.Equal(t, []commitmeta.Range{{From: 2, To: 4}}, dm.Delivered, "b (offsets 2-3) is delivered; a is not")
			s, stalled, err := commitmeta.StallFromFields(fields)
			require.NoError(t, err)
			require.True(t, stalled, "a, nacked at the head, is a stall even while it waits for its retry")
			require.Equal(t, 2, s.Attempts)
		default:
			t.Fatal("the drain waited for a batch that is not in the pipeline")
		}
	})
}

func TestOwnerPausesAtLimitAndResumesBelowIt(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\nmax_pending_batches: 2\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 5, records(tp0, 0, 5)...)
		a := h.read()
		require.False(t, h.cl.isPaused(tp0))
		b := h.read()
		require.True(t, h.cl.isPaused(tp0), "paused at max_pending_batches")
		_, ok := h.tryRead()
		require.False(t, ok, "no hand-out at the limit")
		h.ack(b, nil)
		require.True(t, h.cl.isPaused(tp0), "b is behind a, so still 2 pending")
		h.ack(a, nil)
		require.False(t, h.cl.isPaused(tp0), "resumed below the limit")
		c := h.read()
		require.Equal(t, int64(2), c.raw.first)
	})
}

func TestOwnerDrainTimesOutAndLaterAcksAreLate(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ndrain_timeout: 3s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 6, records(tp0, 0, 6)...)
		a, b, c := h.read(), h.read(), h.read()
		h.ack(a, nil)
		h.ack(c, nil)
		reply := h.revoke(tp0)
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		require.Empty(t, reply, "the drain waits for b until drain_timeout")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		final := <-reply
		require.Equal(t, int64(2), final.offsets["t"][0].Offset, "the watermark stops before b")
		h.ack(b, nil)
		require.Equal(t, int64(1), g.Get(MetricLateAcks, "t", 0), "an ack after the drain is late")
	})
}

// Regression: Close never answered the revoke drains in progress. A revoke
// that is draining holds kgo's group goroutine, so leaving the group waited
// for the drain timer, and the revoke then committed again after Close's
// own commit.
func TestOwnerCloseAnswersRevokeDrains(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ndrain_timeout: 5s\n"), m)
		h.assign(tp0, tp1)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		h.fetch(tp1, 4, records(tp1, 0, 4)...)
		a0, _ := h.read(), h.read() // tp0 0-1; tp1 0-1 stays in the pipeline
		_, a1 := h.read(), h.read() // tp0 2-3 stays in the pipeline; tp1 2-3
		h.ack(a0, nil)
		revoked := h.revoke(tp1)

		r := closeReq{reply: make(chan closeReply, 1)}
		h.o.inbox.closeCh <- r
		last := <-r.reply
		require.Equal(t, epochOffsets{"t": {0: {Epoch: 0, Offset: 2}}}, last.final.offsets,
			"Close commits every partition, the one being revoked included (tp1 has nothing delivered yet)")
		require.Len(t, last.held, 1, "the revoke's reply is handed to Close")
		h.ack(a1, nil) // late now
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Empty(t, revoked, "the drain timer no longer answers the revoke: Close does, after its commit")
		require.Empty(t, h.cl.commits, "the owner itself commits nothing after Close")
	})
}

func TestOwnerCommitsTheLeaderEpochOfTheRecordBefore(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 4\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		recs := records(tp0, 0, 12)
		for _, r := range recs {
			r.LeaderEpoch = 3
			if r.Offset >= 6 {
				r.LeaderEpoch = 4 // a leader election between offsets 5 and 6
			}
		}
		h.fetch(tp0, 12, recs...)
		a, b, c := h.read(), h.read(), h.read() // 0-3, 4-7, 8-11
		h.ack(a, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		h.ack(b, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		h.ack(c, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 3, Offset: 4}, {Epoch: 4, Offset: 8}, {Epoch: 4, Offset: 12}}, h.cl.committed(tp0))
		h.state(func(o *owner) {
			require.Len(t, o.parts[tp0].led.leaderEpochs.changes, 1, "changes below the watermark are forgotten")
		})
	})
}

// Regression: gauges moved only on the commit tick, so with a long
// commit_period the stall and age alerts fired that much late, and the log
// ends of paused partitions were queried every ten commit periods.
func TestOwnerGaugesHaveTheirOwnClock(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\nmax_pending_batches: 2\ncommit_period: 1h\ntopic_lag_refresh_period: 5s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 3, records(tp0, 0, 3)...)
		a, _ := h.read(), h.read() // paused at 2 pending
		h.ack(a, errors.New("rejected"))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricStalled, "t", 0), "the stall shows within a second")
		require.Equal(t, int64(1), g.Get(MetricPaused, "t", 0))
		require.Equal(t, int64(1), g.Get(MetricAge, "t", 0))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, int64(3), g.Get(MetricAge, "t", 0), "the age moves every second")

		h.cl.mu.Lock()
		h.cl.ends = kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 50}}}
		h.cl.mu.Unlock()
		time.Sleep(2 * time.Second) // 5s since start: the first lag refresh
		synctest.Wait()
		require.Equal(t, int64(50), g.Get(MetricLag, "t", 0), "the paused partition's log end is queried every topic_lag_refresh_period")
		require.Empty(t, h.cl.commits, "no commit tick has passed")
	})
}

// Regression: retire left lag and committed frozen on a member that no
// longer owns the partition, and a commit result arriving after the epoch
// ended set committed again.
func TestOwnerEndedEpochGaugesReadZero(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetch(tp0, 10, records(tp0, 0, 4)...)
		a := h.read()
		h.ack(a, nil)
		time.Sleep(2 * time.Second) // a commit tick, then a gauge tick after its result
		synctest.Wait()
		require.Equal(t, int64(2), g.Get(MetricCommitted, "t", 0))
		require.Equal(t, int64(8), g.Get(MetricLag, "t", 0))

		block := make(chan struct{})
		h.cl.mu.Lock()
		h.cl.block = block
		h.cl.mu.Unlock()
		b := h.read()
		h.ack(b, nil)
		time.Sleep(time.Second) // the periodic commit of 4 starts and blocks
		synctest.Wait()
		reply := h.revoke(tp0)
		<-reply
		for _, name := range []string{MetricCommitted, MetricLag, MetricPending, MetricAge, MetricStalled, MetricPaused} {
			require.Zero(t, g.Get(name, "t", 0), "%s of a revoked partition", name)
		}
		close(block) // the periodic commit of the ended epoch completes
		time.Sleep(time.Second)
		synctest.Wait()
		require.Zero(t, g.Get(MetricCommitted, "t", 0), "a commit of an ended epoch sets no gauge")
	})
}

func firsts(bs []*Batch) []int64 {
	var out []int64
	for _, b := range bs {
		out = append(out, b.raw.first)
	}
	return out
}

func TestOwnerSkipsTheDeliveredRangesOfItsStartingCommit(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, meta: "wm1 o=0 e=0 d=2.4 l=0"}})
		h.fetch(tp0, 10, records(tp0, 0, 10)...)
		bs := h.readAll()
		require.Equal(t, []int64{0, 6, 8}, firsts(bs), "offsets 2-5 are not handed out")
		require.Equal(t, int64(4), g.Get(MetricSkipped, "t", 0))
		for _, b := range bs {
			h.ack(b, nil)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 10}}, h.cl.committed(tp0), "the watermark passes the skipped batches")
	})
}

// The ranges name offsets: after an unclean leader election the log above
// the commit can hold other records. A record whose leader epoch is newer
// than the one the metadata was written under is not skipped.
func TestOwnerDoesNotSkipRecordsOfANewerLeaderEpoch(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, meta: "wm1 o=0 e=0 d=2.2,2.2 l=0"}})
		recs := records(tp0, 0, 10)
		for _, r := range recs[3:] {
			r.LeaderEpoch = 1
		}
		h.fetch(tp0, 10, recs...)
		require.Equal(t, []int64{0, 3, 5, 7, 9}, firsts(h.readAll()), "offset 2 (epoch 0) is skipped; from offset 3 (epoch 1) on nothing is")
		require.Equal(t, int64(1), g.Get(MetricSkipped, "t", 0))
	})
}

// Metadata is untrusted: any that does not describe the commit it came with
// is ignored, and nothing is skipped.
func TestOwnerIgnoresMetadataItCannotTrust(t *testing.T) {
	for _, meta := range []string{
		"wm1 o=0 e=0 d=2.4",      // no leader epoch of the ranges
		"wm1 o=1 e=0 d=2.4 l=0",  // written for offset 1
		"wm1 o=0 e=0 d=2.4 l=x",  // a bad leader epoch
		"wm1 o=0 e=0 d=2.40 l=0", // reaches past the log end
		"wm9 o=0 e=0 d=2.4 l=0",  // a version this input does not know
		"consumer-1-4b825dc6-42c0-4a9b-b0f1-b1a0c0ffee00",
	} {
		t.Run(meta, func(t *testing.T) {
			m, _ := testMetrics(t)
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, testConfig(t, "batch_max_records: 2\n"), m)
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, meta: meta}})
				h.fetch(tp0, 10, records(tp0, 0, 10)...)
				require.Equal(t, []int64{0, 2, 4, 6, 8}, firsts(h.readAll()))
			})
		})
	}
}

// A broker whose offset.metadata.max.bytes is below commit_metadata_max_bytes
// refuses the metadata; the partition is committed again at once without
// it, and later commits fit the smaller limit.
func TestOwnerCommitsWithoutMetadataWhenTheBrokerRefusesIt(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\ncommit_metadata_max_bytes: 200\n"), m)
		h.cl.metaLimit = 60
		h.assign(tp0)
		h.fetch(tp0, 100, records(tp0, 0, 100)...)
		bs := h.readAll()
		for i, b := range bs {
			if i%2 == 1 { // every other batch delivered: many ranges
				h.ack(b, nil)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		h.cl.mu.Lock()
		require.Len(t, h.cl.commits, 2, "refused, then committed again at once")
		require.Greater(t, len(h.cl.commits[0].meta[tp0]), 60)
		require.Equal(t, "", h.cl.commits[1].meta[tp0], "the second commit carries no metadata")
		h.cl.mu.Unlock()
		// Each refusal halves the size; it converges below the broker's
		// limit and metadata is committed again.
		h.ack(bs[0], nil)
		for range 4 {
			h.ack(bs[len(bs)-1], nil) // a repeat: only moves time on
			time.Sleep(time.Second)
			synctest.Wait()
		}
		h.cl.mu.Lock()
		defer h.cl.mu.Unlock()
		refused := 0
		for i, c := range h.cl.commits {
			meta := c.meta[tp0]
			if len(meta) > 60 {
				refused++
				require.Less(t, i+1, len(h.cl.commits))
				require.Equal(t, "", h.cl.commits[i+1].meta[tp0], "a refused commit is made again at once without metadata")
				if refused > 1 {
					require.LessOrEqual(t, len(meta), 199/2, "the size halves after a refusal")
				}
			}
		}
		last := h.cl.commits[len(h.cl.commits)-1]
		require.NotEmpty(t, last.meta[tp0], "metadata that fits is committed again")
		require.LessOrEqual(t, len(last.meta[tp0]), 60)
		require.Equal(t, int64(2), last.offsets["t"][0].Offset)
	})
}
