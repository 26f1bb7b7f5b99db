package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/txn"
)

// fakeTxn is a Transactor that counts aborts. The harness's commits go
// through fakeClient.Commit, as txnClient's would. Safe for concurrent use.
type fakeTxn struct {
	mu     sync.Mutex
	aborts int
}

func (f *fakeTxn) Commit(context.Context, txn.Offsets, bool) (txn.Result, error) {
	return txn.Result{}, errors.New("fakeTxn: commits go through the fake client")
}

func (f *fakeTxn) Abort(context.Context, bool) (txn.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aborts++
	return txn.Result{}, nil
}

func (f *fakeTxn) aborted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.aborts
}

// startTxnOwner starts an owner under exactly once: batches of 10 records,
// a commit period of 1s.
func startTxnOwner(t *testing.T, m *Metrics) (*ownerHarness, *fakeTxn) {
	conf := testConfig(t, "batch_max_records: 10\ncommit_period: 1s\n")
	ft := &fakeTxn{}
	conf.Txn = ft
	return startOwner(t, conf, m), ft
}

// A transaction ends only when every batch handed out has settled, and
// nothing is handed out from the moment it must end until it has: so no
// batch's outputs can straddle two transactions.
func TestTxnEndsOnlyWithThePipelineEmpty(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h, _ := startTxnOwner(t, m)
		h.assign(tp0)
		h.fetch(tp0, 100, records(tp0, 0, 100)...)
		b1, b2, b3 := h.read(), h.read(), h.read()
		h.ack(b1, nil)
		h.ack(b2, nil)
		time.Sleep(time.Second) // the commit period: the transaction must end
		synctest.Wait()
		_, ok := h.tryRead()
		require.False(t, ok, "nothing is handed out while the transaction waits for the pipeline")
		require.Empty(t, h.cl.committed(tp0), "no commit while a batch is in the pipeline")
		h.ack(b3, nil)
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 30}}, h.cl.committed(tp0), "the transaction commits every batch settled")
		b4 := h.read()
		require.Equal(t, int64(30), b4.raw.first, "hand-outs go on once it has ended")
	})
}

// A nack dooms the open transaction: it aborts once the pipeline is empty,
// and the partition goes back to its last commit, where it is read again in
// the next poll window; what was acknowledged since is delivered again.
func TestTxnNackAbortsAndGoesBackToTheLastCommit(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h, ft := startTxnOwner(t, m)
		h.assign(tp0)
		h.fetch(tp0, 100, records(tp0, 0, 100)...)
		h.ack(h.read(), nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 10}}, h.cl.committed(tp0))

		b2, b3 := h.read(), h.read()
		h.ack(b3, nil)
		h.ack(b2, errors.New("sink refused"))
		require.Equal(t, 1, ft.aborted(), "the nack aborts the transaction at once, the pipeline being empty")
		_, ok := h.tryRead()
		require.False(t, ok, "the rewound partition takes nothing before its rewind")
		h.fetch(tp0, 100, records(tp0, 40, 50)...) // a poll window: the rewind is made
		h.cl.mu.Lock()
		rewinds := h.cl.rewinds
		h.cl.mu.Unlock()
		require.NotEmpty(t, rewinds)
		require.Equal(t, int64(10), rewinds[len(rewinds)-1][tp0.topic][tp0.partition].Offset, "back to the last commit")
		h.fetch(tp0, 100, records(tp0, 10, 100)...)
		again := h.read()
		require.Equal(t, int64(10), again.raw.first, "the batches since the commit are delivered again, b3's included")
		require.Equal(t, []kgo.EpochOffset{{Epoch: 0, Offset: 10}}, h.cl.committed(tp0), "nothing was committed past the last commit")
	})
}

// A revoke of a partition with anything uncommitted dooms the open
// transaction (its outputs may be in it); one of a partition with nothing
// since its last commit does not. The callback never waits for an end.
func TestTxnRevoke(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h, ft := startTxnOwner(t, m)
		h.assign(tp0, tp1)
		h.fetch(tp0, 100, records(tp0, 0, 100)...)
		h.fetch(tp1, 100, records(tp1, 0, 100)...)
		for _, b := range h.readAll()[:2] {
			h.ack(b, nil)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		// The readAll hand-outs beyond the first two are in the pipeline.
		h.state(func(o *owner) { require.Positive(t, o.txn.out) })

		final := <-h.revoke(tp1)
		require.True(t, final.empty(), "no commit of its own: only transactions commit")
		h.state(func(o *owner) {
			require.NotEmpty(t, o.txn.abort, "the revoked partition had batches in the pipeline: doomed")
			require.Nil(t, o.parts[tp1], "its epoch ended at once")
		})
		require.Zero(t, ft.aborted(), "the abort waits for the pipeline")
	})
}

// At shutdown the last transaction commits the final plan only when the
// pipeline is empty and no end is under way; otherwise it aborts.
func TestTxnCloseWithBatchesOutAborts(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h, _ := startTxnOwner(t, m)
		h.assign(tp0)
		h.fetch(tp0, 100, records(tp0, 0, 100)...)
		h.ack(h.read(), nil)
		h.read() // left in the pipeline
		r := closeReq{reply: make(chan closeReply, 1)}
		h.o.inbox.closeCh <- r
		last := <-r.reply
		require.Contains(t, last.abortTxn, "closing with 1 batch(es) still in the pipeline")
		require.True(t, last.final.empty(), "nothing committed with it")
	})
}
