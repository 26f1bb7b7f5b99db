package engine

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
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
