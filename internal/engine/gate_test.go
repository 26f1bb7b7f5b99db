package engine

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// The dead-letter gate holds a retry until a commit carries its attempt.
// These tests pin the ways that commit never comes (issue 28, defect 3): the
// attempt has no room in the metadata, so the plan equals what the broker
// holds and is not sent; only a landed commit released the gate, so the
// retry was held for good, and with it the head of the partition: no retry,
// no dead letter, no replay in place.

// retryToTheEnd nacks a, the batch at the watermark, until it is handed out
// max times, each retry within its backoff and a commit tick, and then
// checks that the last nack dead-letters it.
func retryToTheEnd(t *testing.T, h *ownerHarness, w *fakeWriter, a *Batch, nack func(*Batch), max int) {
	t.Helper()
	for attempt := a.DeliveryAttempt(); attempt < max; attempt++ {
		nack(a)
		time.Sleep(2 * time.Second) // the backoff, then a commit tick
		synctest.Wait()
		b, ok := h.tryRead()
		require.True(t, ok, "attempt %d goes out though no commit could carry it", attempt+1)
		require.Equal(t, attempt+1, b.DeliveryAttempt())
		a = b
	}
	require.Empty(t, w.written())
	nack(a)
	require.Len(t, w.written(), 1, "dead-lettered after %d attempts", max)
}

// With commit_metadata_max_bytes at its least, 64 bytes, no attempt fits
// beside the header.
func TestGateLetsOutWhatTheMetadataHasNoRoomFor(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1s\ncommit_metadata_max_bytes: 64\n"+
			"nack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 4 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := batchAt(t, h.readAll(), 0, 2)
		h.ack(b, nil)
		retryToTheEnd(t, h, w, a, func(b *Batch) { h.ack(b, errors.New("HTTP 400: bad request")) }, 4)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(4), h.lastCommit(tp0).Base)
	})
}

// A broker whose offset.metadata.max.bytes is small refuses the commit
// that carries the stall; the halved budget has room for the header only:
// the stall does not fit, and the attempts come after it.
func TestGateLetsOutWhatARefusalLeftNoRoomFor(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1s\n"+
			"nack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 4 }\n")
		h := startOwner(t, conf, m)
		h.cl.mu.Lock()
		h.cl.metaLimit = 30 // "wm1 o=0 e=0 a=0.2.1", the first commit, is 19 bytes; with a stall, more
		h.cl.mu.Unlock()
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		a, b := batchAt(t, h.readAll(), 0, 2)
		h.ack(b, nil)
		retryToTheEnd(t, h, w, a, func(b *Batch) { h.ack(b, errors.New("HTTP 400: bad request")) }, 4)
		var budget int
		h.state(func(o *owner) { budget = o.commits.metaMax })
		require.Less(t, budget, 64, "the refusal of a commit with a stall halved the budget")
		require.Empty(t, h.lastCommit(tp0).Attempts, "no room for the attempts")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(4), h.lastCommit(tp0).Base)
	})
}

// Under ordering: key a retry holds the records a batch error named, a run
// of offsets each when they are not adjacent. Two hand-outs of 2,000 records
// whose odd records fail make 2,000 runs: the default 4,000 bytes hold the
// first ones, nearest the base, and not the second hand-out's.
func TestGateLetsOutManyKeyedRuns(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, w := deadLetterConfig(t, "ordering: key\nbatch_max_records: 2000\ncommit_period: 1s\n"+
			"nack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 3 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 4000, keyedRecords(tp0, 0, 4000, func(o int64) (string, bool) { return fmt.Sprint(o), true })...)
		outs := h.readAll()
		require.Len(t, outs, 2)
		var odd []int
		for i := 1; i < 2000; i += 2 {
			odd = append(odd, i)
		}
		nack := func(b *Batch) {
			failed := odd
			if len(b.raw.records) < 2000 {
				failed = nil // a retry holds the odd records only
			}
			h.o.inbox.ackCh <- ackMsg{b: b, err: errors.New("rows refused"), failed: failed}
			synctest.Wait()
		}
		for attempt := 2; attempt <= 3; attempt++ {
			for _, b := range outs {
				nack(b)
			}
			time.Sleep(2 * time.Second) // the backoff, then a commit tick
			synctest.Wait()
			outs = h.readAll()
			require.Len(t, outs, 2, "both retries of attempt %d go out, though no commit could carry the second", attempt)
			for _, b := range outs {
				require.Equal(t, attempt, b.DeliveryAttempt())
				require.Len(t, b.raw.records, 1000)
			}
		}
		for _, b := range outs {
			nack(b)
		}
		require.Len(t, w.written(), 2, "both dead-lettered after 3 attempts")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int64(4000), h.lastCommit(tp0).Base)
	})
}

// A gated retry waits for its commit without having been handed out; when
// its epoch ends first (a revoke, a replay, a close), that hand-out never
// happens, and must not count (issue 28, defect 8). The bug: the final
// commit carried it, and the next owner, taking the batch as tried
// max_attempts times, dead-lettered it after one real delivery of two.
func TestGatedHandOutNotCountedWhenTheEpochEndsFirst(t *testing.T) {
	m, _ := testMetrics(t)
	conf := "batch_max_records: 2\ncommit_period: 1h\nnack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 2 }\n"
	var final fetchedCommit
	synctest.Test(t, func(t *testing.T) {
		c, _ := deadLetterConfig(t, conf)
		h := startOwner(t, c, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 2, records(tp0, 0, 2)...)
		a := h.read()
		require.Equal(t, 1, a.DeliveryAttempt())
		block := make(chan struct{})
		h.cl.mu.Lock()
		h.cl.block, h.cl.blockAsync = block, true // the gate's commit never lands
		h.cl.mu.Unlock()
		h.ack(a, errors.New("HTTP 503"))
		time.Sleep(time.Second) // the backoff: the retry waits for the gate
		synctest.Wait()
		_, ok := h.tryRead()
		require.False(t, ok, "the retry waits for its commit")
		set := <-h.revoke(tp0)
		meta, ok := set.meta[tp0]
		require.True(t, ok, "a final commit")
		d, err := commitmeta.DecodeCommit(meta)
		require.NoError(t, err)
		require.Equal(t, []commitmeta.Attempts{{From: 0, To: 2, N: 1}}, d.Attempts,
			"the final commit counts the one hand-out made, not the gated one")
		final = fetchedCommit{offset: set.offsets[tp0.topic][tp0.partition].Offset, leaderEpoch: 0, meta: meta}
		close(block)
	})
	synctest.Test(t, func(t *testing.T) {
		c, w := deadLetterConfig(t, conf)
		h := startOwner(t, c, m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: final})
		h.fetch(tp0, 2, records(tp0, 0, 2)...)
		b, ok := h.tryRead()
		require.True(t, ok, "handed out again, not dead-lettered")
		require.Equal(t, 2, b.DeliveryAttempt())
		require.Empty(t, w.written())
	})
}

// A landed commit that had no room for some attempts lets out only the
// batches gated when it was planned: a batch gated while it was in flight
// waits for the next plan, which may have room for it. Here the budget holds
// two runs of attempts: A's retry is gated first and its commit, in flight,
// has no room for it; B's retry is gated meanwhile, and the next commit
// carries it. B goes out only after that commit landed.
func TestGateHoldsWhatALaterPlanCarries(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf, _ := deadLetterConfig(t, "batch_max_records: 2\ncommit_period: 1h\ncommit_metadata_max_bytes: 28\n"+
			"nack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 1s }\ndead_letter: { max_attempts: 5 }\n")
		h := startOwner(t, conf, m)
		h.assignFrom(tp0, 0)
		h.fetch(tp0, 6, records(tp0, 0, 6)...)
		bs := h.readAll()
		_, b := batchAt(t, bs[:2], 0, 2)
		a := bs[2]
		require.Equal(t, int64(4), a.raw.first)
		block := make(chan struct{})
		h.cl.mu.Lock()
		h.cl.block = block
		h.cl.mu.Unlock()
		h.ack(a, errors.New("HTTP 503"))
		time.Sleep(500 * time.Millisecond)
		h.ack(b, errors.New("HTTP 503"))
		time.Sleep(500 * time.Millisecond)
		_, ok := h.tryRead()
		require.False(t, ok, "A's retry is gated, its commit held")
		time.Sleep(500 * time.Millisecond)
		_, ok = h.tryRead()
		require.False(t, ok, "B's retry is gated while A's commit is in flight")
		next := make(chan struct{})
		h.cl.mu.Lock()
		h.cl.block = next // holds the next commit, B's
		h.cl.mu.Unlock()
		close(block)
		synctest.Wait()
		got := h.readAll()
		require.Len(t, got, 1, "A goes out: no commit has room for it")
		require.Equal(t, a, got[0])
		require.Equal(t, []commitmeta.Attempts{{From: 0, To: 2, N: 1}, {From: 2, To: 4, N: 1}}, h.lastCommit(tp0).Attempts)
		close(next)
		synctest.Wait()
		got = h.readAll()
		require.Len(t, got, 1, "B goes out once the commit carrying it landed")
		require.Equal(t, b, got[0])
		require.Equal(t, 2, b.DeliveryAttempt())
		require.Equal(t, []commitmeta.Attempts{{From: 0, To: 2, N: 1}, {From: 2, To: 4, N: 2}}, h.lastCommit(tp0).Attempts)
	})
}
