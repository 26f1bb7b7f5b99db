package engine

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// keyedRecords returns records of tp at offsets [from, to) whose keys are
// keyOf(offset); keyOf returning "" with ok false makes a null key.
func keyedRecords(tp topicPartition, from, to int64, keyOf func(int64) (string, bool)) []*kgo.Record {
	rs := records(tp, from, to)
	for _, r := range rs {
		if k, ok := keyOf(r.Offset); ok {
			r.Key = []byte(k)
		}
	}
	return rs
}

func offsets(b *Batch) []int64 {
	var out []int64
	for _, r := range b.raw.records {
		out = append(out, r.Offset)
	}
	return out
}

// Under ordering: key a record waits while an earlier record of its key is
// out, and the others go past it; when the earlier one is delivered, the
// waiting one goes out, and the commit reaches the end.
func TestKeyedHoldsAKeyAndLetsTheOthersPass(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 2\ncommit_period: 1s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		// Keys: a b a c a d (offsets 0-5), e null at 6.
		keys := []string{"a", "b", "a", "c", "a", "d"}
		h.fetch(tp0, 7, keyedRecords(tp0, 0, 7, func(o int64) (string, bool) {
			if o < 6 {
				return keys[o], true
			}
			return "", false
		})...)
		bs := h.readAll()
		var got [][]int64
		for _, b := range bs {
			got = append(got, offsets(b))
		}
		require.Equal(t, [][]int64{{0, 2}, {1, 3}, {5, 6}}, got,
			"a's first two records go out together, in log order; b, c, d and the null key pass a's offset 4, which waits")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(1), g.Get(MetricHeld, "t", 0))
		h.ack(bs[1], nil)
		h.ack(bs[2], nil)
		_, none := h.tryRead()
		require.False(t, none, "a's records still wait for offset 0")
		h.ack(bs[0], nil)
		next := h.readAll()
		require.Len(t, next, 1)
		require.Equal(t, []int64{4}, offsets(next[0]), "a's last record, once its earlier ones are delivered")
		h.ack(next[0], nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(7), h.lastCommit(tp0).Base)
		require.Equal(t, int64(0), g.Get(MetricHeld, "t", 0))
	})
}

// A failure holds only its keys: the other keys flow, the commit stops at
// the failed record, and the partition is stalled.
func TestKeyedFailureHoldsOnlyItsKeys(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 1\ncommit_period: 1s\nstall_replay_after: 0s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 6, keyedRecords(tp0, 0, 6, func(o int64) (string, bool) { return fmt.Sprint("k", o%3), true })...)
		bs := h.readAll()
		require.Len(t, bs, 3, "k0 k1 k2 go out; their next records wait")
		h.ack(bs[0], errors.New("HTTP 400")) // k0 at offset 0 fails for good
		h.ack(bs[1], nil)
		h.ack(bs[2], nil)
		next := h.readAll()
		var got []int64
		for _, b := range next {
			got = append(got, offsets(b)...)
			h.ack(b, nil)
		}
		require.Equal(t, []int64{4, 5}, got, "k1 and k2 go on; k0's offset 3 waits behind the failure")
		time.Sleep(time.Second)
		synctest.Wait()
		d := h.lastCommit(tp0)
		require.Equal(t, int64(0), d.Base, "the commit stops at the failed record")
		require.NotNil(t, d.Stall)
		require.Equal(t, int64(1), g.Get(MetricStalled, "t", 0))
		require.Equal(t, int64(1), g.Get(MetricHeld, "t", 0))
	})
}

// Under ordering: key, a hand-out dead-lettered after max_attempts is done:
// its keys are free again, the next record of its key goes out, and the
// commit passes the dead letters.
func TestKeyedDeadLetterFreesTheKey(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "ordering: key\nbatch_max_records: 1\ncommit_period: 1s\nstall_replay_after: 0s\ndead_letter: { max_attempts: 1 }\n")
		h := startOwner(t, conf, m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 3, keyedRecords(tp0, 0, 3, func(o int64) (string, bool) { return "a", true })...)
		b := h.read()
		require.Equal(t, []int64{0}, offsets(b))
		_, more := h.tryRead()
		require.False(t, more, "a's 1 and 2 wait for its 0")
		h.ack(b, errors.New("HTTP 400"))
		require.Len(t, w.written(), 1)
		next := h.read()
		require.Equal(t, []int64{1}, offsets(next), "dead-lettered: the key is free")
		h.ack(next, nil)
		h.ack(h.read(), nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(3), h.lastCommit(tp0).Base)
		require.Equal(t, int64(1), g.Get(MetricDeadLettered, "t", 0))
	})
}

// Under ordering: key, a batch error frees the keys of the records it did
// not name at once: their next records go out while the named one is
// retried, and only the named one's key waits.
func TestKeyedBatchErrorFreesTheDeliveredKeys(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 3\ncommit_period: 1s\nnack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		// Keys: a b c, then a b c (offsets 0-5), fetched after the first
		// three are out.
		keyOf := func(o int64) (string, bool) { return string(rune('a' + o%3)), true }
		h.fetch(tp0, 3, keyedRecords(tp0, 0, 3, keyOf)...)
		b := h.read()
		require.Equal(t, []int64{0, 1, 2}, offsets(b))
		h.fetch(tp0, 6, keyedRecords(tp0, 3, 6, keyOf)...)
		_, more := h.tryRead()
		require.False(t, more, "a, b and c are out")
		h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("row 1 refused"), failed: []int{1}}
		next := h.read()
		require.Equal(t, []int64{3, 5}, offsets(next), "a's and c's next records go out: their first were delivered; b's waits")
		h.ack(next, nil)
		time.Sleep(time.Second) // the backoff
		synctest.Wait()
		retry := h.read()
		require.Equal(t, []int64{1}, offsets(retry), "the retry holds the named record only")
		require.Equal(t, 1, retry.Attempt())
		h.ack(retry, nil)
		last := h.read()
		require.Equal(t, []int64{4}, offsets(last))
		h.ack(last, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(6), h.lastCommit(tp0).Base)
	})
}

// Under ordering: key, attempts survive restarts by the runs of offsets a
// hand-out held: a batch error names offset 1 of key p, which crashes the
// next two processes; the records around it are never counted with it,
// never go out with it (a hand-out holds one carried count), and the fourth
// process dead-letters offset 1 alone without handing it out, after which
// p's later record goes out and the commit passes everything.
func TestKeyedAttemptsSurviveRestarts(t *testing.T) {
	m, _ := testMetrics(t)
	var meta fetchedCommit
	conf := "ordering: key\nbatch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 1h\ndead_letter: { max_attempts: 3 }\n"
	keyOf := func(o int64) (string, bool) {
		if o == 1 || o == 5 {
			return "p", true
		}
		return fmt.Sprint("k", o), true
	}
	// run is one process from meta: it acks every hand-out but the one
	// holding offset 1, which it nacks naming offset 1 (nack) or leaves
	// unanswered (a crash mid-delivery); it returns that hand-out.
	run := func(t *testing.T, nack bool) (*Batch, *fakeWriter, []*Batch) {
		var got *Batch
		var w *fakeWriter
		var all []*Batch
		synctest.Test(t, func(t *testing.T) {
			var c *Config
			c, w = deadLetterConfig(t, conf)
			h := startOwner(t, c, m)
			h.assign(tp0)
			h.fetched(map[topicPartition]fetchedCommit{tp0: meta})
			h.fetch(tp0, 8, keyedRecords(tp0, 0, 8, keyOf)...)
			for range 4 {
				bs := h.readAll()
				if len(bs) == 0 {
					break
				}
				for _, b := range bs {
					all = append(all, b)
					i := slices.Index(offsets(b), 1)
					switch {
					case i < 0:
						h.ack(b, nil)
					case nack:
						got = b
						h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("HTTP 400"), failed: []int{i}}
						synctest.Wait()
					default:
						got = b
					}
				}
			}
			time.Sleep(time.Second)
			synctest.Wait()
			meta = h.lastFetched(tp0)
		})
		return got, w, all
	}
	meta = fetchedCommit{offset: 0, leaderEpoch: 0}
	b, _, _ := run(t, true)
	require.Equal(t, 1, b.DeliveryAttempt())
	d, err := commitmeta.DecodeCommit(meta.meta)
	require.NoError(t, err)
	require.Equal(t, []commitmeta.Attempts{{From: 1, To: 2, N: 1}}, d.Attempts, "offset 1's run only, not its hand-out's offset 0")
	for _, n := range []int{2, 3} {
		b, _, all := run(t, false) // crashes mid-delivery
		require.Equal(t, []int64{1}, offsets(b), "offset 1 goes out alone: no fresh record rides with it")
		require.Equal(t, n, b.DeliveryAttempt(), "its attempts were carried across the restart")
		for _, o := range all {
			if o != b {
				require.Equal(t, 1, o.DeliveryAttempt(), "hand-out %v", offsets(o))
				require.NotContains(t, offsets(o), int64(5), "p's later record waits for offset 1")
			}
		}
	}
	b, w, all := run(t, false)
	require.Nil(t, b, "tried max_attempts times: not handed out again")
	letters := w.written()
	require.Len(t, letters, 1)
	require.Equal(t, []int64{1}, letters[0].offsets())
	require.Equal(t, 3, letters[0].Attempts)
	var out []int64
	for _, o := range all {
		out = append(out, offsets(o)...)
	}
	require.Contains(t, out, int64(5), "p is free once offset 1 is dead-lettered")
	d, err = commitmeta.DecodeCommit(meta.meta)
	require.NoError(t, err)
	require.Equal(t, int64(8), d.Base, "committed past the dead letter")
	require.Empty(t, d.Attempts)
}

func TestMergeMax(t *testing.T) {
	a := []commitmeta.Attempts{{From: 0, To: 10, N: 1}, {From: 20, To: 30, N: 2}}
	b := []commitmeta.Attempts{{From: 2, To: 4, N: 3}, {From: 4, To: 5, N: 3}, {From: 8, To: 12, N: 1}, {From: 25, To: 26, N: 1}, {From: 40, To: 41, N: 4}}
	require.Equal(t, []commitmeta.Attempts{
		{From: 0, To: 2, N: 1}, {From: 2, To: 5, N: 3}, {From: 5, To: 12, N: 1},
		{From: 20, To: 30, N: 2}, {From: 40, To: 41, N: 4},
	}, mergeMax(a, b))
	require.Equal(t, b, mergeMax(nil, b))
}

// Under ordering: key a segment resolves only when its last record is
// done, so a commit made from segments alone stops at the first record of
// a segment that has a record waiting, and forgets the done records of the
// segments not resolved: the next owner delivered them again, after newer
// records of their keys. The commit carries the records exactly: its base
// goes past the done records at the head, its ranges cover the done ones
// above.
func TestKeyedHandoverCommitsTheDoneRecords(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 3\ncommit_period: 1h\nnack_retry: { max_retries: -1, initial_backoff: 1h, max_backoff: 1h }\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		keys := []string{"a", "b", "c", "d", "e", "b"}
		keyOf := func(o int64) (string, bool) { return keys[o], true }
		h.fetch(tp0, 3, keyedRecords(tp0, 0, 3, keyOf)...)
		first := h.read()
		require.Equal(t, []int64{0, 1, 2}, offsets(first))
		h.fetch(tp0, 6, keyedRecords(tp0, 3, 6, keyOf)...)
		second := h.read()
		require.Equal(t, []int64{3, 4}, offsets(second), "b's offset 5 waits for its 1")
		h.ack(second, nil)
		h.o.inbox.ackCh <- ackMsg{b: first, err: errors.New("row 1 refused"), failed: []int{1}}
		synctest.Wait()
		final := <-h.revoke(tp0)
		require.Equal(t, int64(1), final.offsets["t"][0].Offset)
		d, err := commitmeta.DecodeCommit(final.meta[tp0])
		require.NoError(t, err)
		require.Equal(t, int64(1), d.Base, "past offset 0, done in the segment at the watermark")
		require.Equal(t, []commitmeta.Range{{From: 2, To: 5}}, d.Delivered, "2, 3 and 4 are done; 5 waits for b")
	})
}

// Under ordering: key, replays in place count attempts too: a hand-out of
// keys a and b fails for good, the other key's hand-out is delivered; each
// replay hands out a's and b's records alone (c's were delivered: exact
// ranges skip them), one attempt more, and the third nack dead-letters
// them, after which the commit reaches the end.
func TestKeyedDeadLetterCountsReplaysInPlace(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "ordering: key\nbatch_max_records: 2\ncommit_period: 1s\nstall_replay_after: 10s\ndrain_timeout: 1s\ndead_letter: { max_attempts: 3 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		keys := []string{"a", "b", "c", "c"}
		fetchAll := func() {
			h.fetch(tp0, 4, keyedRecords(tp0, 0, 4, func(o int64) (string, bool) { return keys[o], true })...)
		}
		fetchAll()
		bs := h.readAll()
		var a *Batch
		for _, b := range bs {
			if slices.Contains(offsets(b), 0) {
				a = b
				continue
			}
			h.ack(b, nil)
		}
		require.Equal(t, []int64{0, 1}, offsets(a), "a and b: c's two records go out together")
		for attempt := 1; attempt <= 3; attempt++ {
			require.Equal(t, attempt, a.DeliveryAttempt())
			h.ack(a, errors.New("HTTP 422"))
			if attempt == 3 {
				break
			}
			time.Sleep(10 * time.Second << (attempt - 1))
			synctest.Wait()
			require.Equal(t, int64(attempt), g.Get(MetricStallReplays, "t", 0))
			h.fetch(tp0, 4) // the rewind's poll window
			fetchAll()
			bs := h.readAll()
			require.Len(t, bs, 1)
			require.Equal(t, []int64{0, 1}, offsets(bs[0]), "c's records were delivered: skipped")
			a = bs[0]
		}
		letters := w.written()
		require.Len(t, letters, 1)
		require.Equal(t, []int64{0, 1}, letters[0].offsets())
		require.Equal(t, 3, letters[0].Attempts)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(4), h.lastCommit(tp0).Base)
	})
}

// max_held_records bounds the records waiting for their key, not the read
// ahead: records free to go out do not count, nor show in the gauge. Past
// the limit the partition pauses and admits nothing more, every key
// included, until the waiting key is free.
func TestKeyedHeldCountsOnlyWaitingRecords(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 1\nmax_held_records: 2\ncommit_period: 1s\n"), m)
		h.assignFrom(tp0, 0)
		// a a a, then b to k one record each (offsets 3-11)
		h.fetch(tp0, 12, keyedRecords(tp0, 0, 12, func(o int64) (string, bool) { return string(rune('a' + max(o-2, 0))), true })...)
		first := h.read()
		require.Equal(t, []int64{0}, offsets(first))
		var got []int64
		for _, b := range h.readAll() {
			got = append(got, offsets(b)...)
			h.ack(b, nil)
		}
		require.Equal(t, []int64{3, 4, 5, 6, 7}, got,
			"the read-ahead (8 batches of 1) went out; a's 1 and 2 wait, at max_held_records, so 8-11 are not admitted")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(2), g.Get(MetricHeld, "t", 0), "a's two waiting records, not the read-ahead")
		h.state(func(o *owner) { require.True(t, o.parts[tp0].paused, "at max_held_records fetching pauses") })
		h.ack(first, nil)
		got = nil
		for range 10 {
			bs := h.readAll()
			if len(bs) == 0 {
				break
			}
			for _, b := range bs {
				got = append(got, offsets(b)...)
				h.ack(b, nil)
			}
		}
		slices.Sort(got)
		require.Equal(t, []int64{1, 2, 8, 9, 10, 11}, got)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(12), h.lastCommit(tp0).Base)
		require.Equal(t, int64(0), g.Get(MetricHeld, "t", 0))
	})
}

// Under ordering: key the commit passes the done records at the head of the
// segment at the watermark, also over a gap, to the next record not done.
// It carried the leader epoch of the record before its offset as the
// ledger's change log answers it: for a gap, that of the last record below
// the gap. Offsets 0-2 under leader epoch 0, 3 absent (epoch 1 began
// there), 4 under epoch 1: the commit of 0-2 done and 4 not was 4/e0, and
// Kafka answers OffsetForLeaderEpoch(0) with 3, below 4: kgo reported data
// loss on the next assignment and the engine a truncation that never
// happened. Without a gap the record before the offset is the one consumed
// last, and its epoch stays (tp1: 0-2 under epoch 0, 3 under epoch 1).
func TestKeyedCommitPastAGapCarriesTheEpochOfTheNextRecord(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 4\ncommit_period: 1s\nnack_retry: { max_retries: -1, initial_backoff: 1h, max_backoff: 1h }\n"), m)
		h.assign(tp0, tp1)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}, tp1: {offset: 0, leaderEpoch: 0}})
		keyOf := func(o int64) (string, bool) { return fmt.Sprint("k", o), true }
		gap := slices.Concat(keyedRecords(tp0, 0, 3, keyOf), keyedRecords(tp0, 4, 5, keyOf))
		noGap := keyedRecords(tp1, 0, 4, keyOf)
		for _, r := range slices.Concat(gap, noGap) {
			if r.Offset >= 3 {
				r.LeaderEpoch = 1
			}
		}
		h.fetch(tp0, 5, gap...)
		h.fetch(tp1, 4, noGap...)
		for _, b := range h.readAll() {
			require.Len(t, b.raw.records, 4, "one segment, one hand-out")
			h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("row 3 refused"), failed: []int{3}}
			synctest.Wait()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := h.cl.committed(tp0)
		require.Equal(t, kgo.EpochOffset{Epoch: 1, Offset: 4}, got[len(got)-1],
			"past the gap at 3, the epoch of the record at 4: Kafka validates it at 4")
		got = h.cl.committed(tp1)
		require.Equal(t, kgo.EpochOffset{Epoch: 0, Offset: 3}, got[len(got)-1],
			"the epoch of record 2, consumed last before 3")
	})
}

// Under ordering: key, max_pending_batches bounds the segments registered
// and not behind the watermark, as it bounds the batches under none. It
// bounded only the hand-outs out and the records waiting for their key:
// with a key failed for good at the watermark and no later record of it,
// nothing waited and nothing was out, so with stall_replay_after 0s the
// other keys went on forever and the segments delivered behind the failed
// one (memory, and what a crash replays when the ranges are cut) grew
// without limit, the partition never paused.
func TestKeyedMaxPendingBoundsTheSegmentsBehindAFailedKey(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "ordering: key\nbatch_max_records: 1\nmax_pending_batches: 3\ncommit_period: 1s\nstall_replay_after: 0s\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 0, leaderEpoch: 0}})
		h.fetch(tp0, 10, keyedRecords(tp0, 0, 10, func(o int64) (string, bool) { return fmt.Sprint("k", o), true })...)
		var out []int64
		for bs := h.readAll(); len(bs) > 0; bs = h.readAll() {
			for _, b := range bs {
				out = append(out, offsets(b)...)
				if b.raw.first == 0 {
					h.ack(b, errors.New("HTTP 400")) // fails for good: the watermark stays at 0
				} else {
					h.ack(b, nil)
				}
			}
		}
		require.Equal(t, []int64{0, 1, 2}, out, "three segments registered, then the partition waits")
		require.True(t, h.cl.isPaused(tp0), "paused at max_pending_batches")
		h.state(func(o *owner) {
			require.Equal(t, 3, o.parts[tp0].led.pending())
		})
	})
}
