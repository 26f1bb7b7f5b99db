package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
)

// testReader reads from an engine as the plugin's ReadBatch does: the
// records of the hand-out as messages, and an ack function with the
// once-guard.
type testReader struct{ e *Engine }

// inputOn returns a reader of h's owner, as Connect would make it.
func inputOn(h *ownerHarness, _ *Config, _ *Metrics) *testReader {
	return &testReader{e: &Engine{o: h.o}}
}

// metaOffset is the metadata key of a record's offset.
const metaOffset = "kafka_offset"

func (r *testReader) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	b, err := r.e.Read(ctx)
	if err != nil {
		return nil, nil, err
	}
	records, _ := b.Records()
	attempt := b.Attempt()
	return kafkamsg.RecordsToBatch(records, b.LogEnd()), func(_ context.Context, err error) error {
		if !b.TakeAck(attempt) {
			r.e.DuplicateAck(b)
			return nil
		}
		r.e.Ack(b, err, nil)
		return nil
	}, nil
}

// Read reuses one read request (Engine.read). It may do so only once the
// owner holds the request no more and its reply is empty: a request reused
// too soon would be parked twice, or its next ReadBatch would read the
// answer meant for the one before. Each round ends a read's context in one
// of the ways it can end, then reads again; every batch must go out once,
// in order (the one given back first), and the request must be free, its
// reply empty and no read parked after each round. The ways:
//
//   - parked: the context ends while the read waits, with nothing to hand
//     out (the withdrawal finds the read parked);
//   - answered: the owner answers, and the context has ended by the time
//     ReadBatch has the answer (it gives the batch back);
//   - withdrawn: the context ends as ReadBatch waits for an answer the
//     owner is giving (the withdrawal finds the answer in the reply, or
//     ReadBatch finds it first and gives it back);
//   - racing: a batch arrives for a parked read as its context is
//     cancelled (it is returned, or given back).
func TestReadRequestReuseAfterWithdrawal(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf := testConfig(t, "batch_max_records: 1\n")
		h := startOwner(t, conf, m)
		in := inputOn(h, conf, m)
		h.assign(tp0)
		var next, fetched int64 // the next offset to read, to fetch
		fetch := func() {
			h.fetch(tp0, fetched+1, records(tp0, fetched, fetched+1)...)
			fetched++
		}
		type result struct {
			msgs service.MessageBatch
			ack  service.AckFunc
			err  error
		}
		// took checks a read that returned a batch: the next one.
		took := func(r result, what string) {
			t.Helper()
			off, _ := r.msgs[0].MetaGetMut(metaOffset)
			require.Equalf(t, next, int64(off.(int)), "%s: the batch read", what)
			require.NoError(t, r.ack(context.Background(), nil))
			next++
		}
		// readInBackground starts a ReadBatch and returns once it waits.
		readInBackground := func() (chan result, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan result, 1)
			go func() {
				msgs, ack, err := in.ReadBatch(ctx)
				done <- result{msgs, ack, err}
			}()
			synctest.Wait()
			return done, cancel
		}
		returned := 0
		for round := range 60 {
			var r result
			what := fmt.Sprintf("round %d", round)
			switch round % 4 {
			case 0: // parked
				done, cancel := readInBackground()
				cancel()
				r = <-done
			case 1: // answered
				fetch()
				r.msgs, r.ack, r.err = in.ReadBatch(&stagedCtx{doneFrom: 0})
			case 2: // withdrawn
				fetch()
				r.msgs, r.ack, r.err = in.ReadBatch(&stagedCtx{doneFrom: 2})
			case 3: // racing
				done, cancel := readInBackground()
				fetch()
				cancel()
				r = <-done
			}
			if r.err == nil {
				require.Equalf(t, 3, round%4, "%s: only a racing read may return a batch", what)
				took(r, what)
				returned++
			} else {
				require.ErrorIsf(t, r.err, context.Canceled, "%s", what)
			}
			synctest.Wait()
			require.Falsef(t, in.e.reading.Load(), "%s: the read request is free", what)
			require.Zerof(t, len(in.e.read.reply), "%s: nothing left in its reply", what)
			h.state(func(o *owner) { require.Emptyf(t, o.parked, "%s: parked reads", what) })

			fetch()
			for next < fetched {
				msgs, ack, err := in.ReadBatch(context.Background())
				require.NoError(t, err)
				took(result{msgs: msgs, ack: ack}, what)
			}
			require.False(t, in.e.reading.Load())
		}
		h.state(func(o *owner) {
			p := o.parts[tp0]
			wm, _ := p.led.watermark()
			require.Equal(t, fetched, wm, "every batch delivered once")
			require.Zero(t, unresolved(p))
			require.Zero(t, retrying(p))
		})
		t.Logf("%d of 15 racing reads returned their batch", returned)
	})
}

// stagedCtx is a context that ReadBatch sees end at a chosen point: Done
// is nil (never ready) on its first doneFrom-1 calls and closed from call
// doneFrom on (0: never), and Err says Canceled from the start. With
// doneFrom 0, ReadBatch receives the answer and then finds its context
// ended; with 2, its wait for the answer sees the context end.
type stagedCtx struct {
	doneFrom int32
	calls    atomic.Int32
}

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *stagedCtx) Done() <-chan struct{} {
	if n := c.calls.Add(1); c.doneFrom > 0 && n >= c.doneFrom {
		return closedDone
	}
	return nil
}

func (c *stagedCtx) Err() error                              { return context.Canceled }
func (c *stagedCtx) Value(any) any                           { return nil }
func (c *stagedCtx) Deadline() (deadline time.Time, ok bool) { return time.Time{}, false }

// TestOverlappingReadBatches: Benthos never calls ReadBatch from two
// goroutines at once, but Input is exported. Overlapping calls must not
// share the reused request: each gets a batch of its own.
func TestOverlappingReadBatches(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf := testConfig(t, "batch_max_records: 1\n")
		h := startOwner(t, conf, m)
		in := inputOn(h, conf, m)
		h.assign(tp0)
		const readers = 4
		offs := make(chan int, readers)
		for range readers {
			go func() {
				msgs, ack, err := in.ReadBatch(context.Background())
				if err != nil {
					offs <- -1
					return
				}
				off, _ := msgs[0].MetaGetMut(metaOffset)
				_ = ack(context.Background(), nil)
				offs <- off.(int)
			}()
		}
		synctest.Wait()
		h.state(func(o *owner) {
			require.Len(t, o.parked, readers, "every read parked")
			distinct := map[*readReq]bool{}
			for _, r := range o.parked {
				distinct[r] = true
			}
			require.Len(t, distinct, readers, "each read with a request of its own")
		})
		h.fetch(tp0, readers, records(tp0, 0, readers)...)
		seen := map[int]bool{}
		for range readers {
			off := <-offs
			require.False(t, seen[off], "offset %d read twice", off)
			require.GreaterOrEqual(t, off, 0)
			seen[off] = true
		}
		synctest.Wait()
		require.False(t, in.e.reading.Load(), "the reused request is free again")
		h.state(func(o *owner) {
			wm, _ := o.parts[tp0].led.watermark()
			require.Equal(t, int64(readers), wm)
		})
	})
}
