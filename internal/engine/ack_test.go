package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// The ack functions of one batch share one guard, in the batch, that
// records the last hand-out acknowledged. Each hand-out used to have a
// once-flag of its own, which made two kinds of stray ack harmless; the
// shared guard must drop both: a second ack of a hand-out, and an ack of an
// earlier hand-out once a later one exists. Either, if applied, would
// resolve a batch the pipeline has not delivered (here: one waiting for its
// retry), and the watermark would pass it.
func TestAckOfAnEarlierHandOutIsIgnored(t *testing.T) {
	m, g := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		conf := testConfig(t, "batch_max_records: 2\nnack_retry: { max_retries: 3, initial_backoff: 1s, max_backoff: 1s }\n")
		h := startOwner(t, conf, m)
		in := inputOn(h, conf, m)
		ctx := context.Background()
		h.assign(tp0)
		h.fetch(tp0, 4, records(tp0, 0, 4)...)
		read := func() (int64, service.AckFunc) {
			t.Helper()
			msgs, ack, err := in.ReadBatch(ctx)
			require.NoError(t, err)
			off, _ := msgs[0].MetaGetMut(metaOffset)
			return int64(off.(int)), ack
		}
		dups := func() int64 { synctest.Wait(); return g.Get(MetricDuplicateAcks, tp0.topic, tp0.partition) }
		// The watermark stays at 0, the first batch unresolved, whatever
		// the stray acks say.
		held := func(what string) {
			t.Helper()
			h.state(func(o *owner) {
				p := o.parts[tp0]
				wm, _ := p.led.watermark()
				require.Zerof(t, wm, "%s: watermark", what)
				require.Equalf(t, 1, unresolved(p), "%s: unresolved batches", what)
			})
		}

		first, ack0 := read()
		require.Zero(t, first)
		_, ackB := read()
		require.NoError(t, ackB(ctx, nil))
		require.NoError(t, ack0(ctx, errors.New("sink down"))) // attempt 0 nacked: a retry in 1s
		held("nacked")

		require.NoError(t, ack0(ctx, nil), "a repeat returns nil")
		require.Equal(t, int64(1), dups(), "a second ack of hand-out 0 is counted")
		held("hand-out 0 acked again while the batch waits for its retry")

		time.Sleep(time.Second)
		again, ack1 := read()
		require.Zero(t, again, "the retry")
		require.NoError(t, ack0(ctx, nil))
		require.Equal(t, int64(2), dups())
		held("hand-out 0 acked again while hand-out 1 is in the pipeline")

		require.NoError(t, ack1(ctx, errors.New("still down"))) // attempt 1 nacked
		require.NoError(t, ack0(ctx, nil))
		require.Equal(t, int64(3), dups(), "an ack of hand-out 0 after hand-out 1 was acknowledged is counted")
		held("hand-out 0 acked after hand-out 1 was")

		time.Sleep(time.Second)
		_, ack2 := read()
		require.NoError(t, ack2(ctx, nil))
		require.NoError(t, ack2(ctx, errors.New("a repeat must not fail the batch")))
		require.NoError(t, ack1(ctx, errors.New("nor an earlier hand-out")))
		require.Equal(t, int64(5), dups())
		h.state(func(o *owner) {
			p := o.parts[tp0]
			wm, _ := p.led.watermark()
			require.Equal(t, int64(4), wm, "delivered by hand-out 2, the watermark passes both batches")
			require.Zero(t, unresolved(p))
			require.False(t, p.led.headFailed(), "no stray nack failed the batch")
		})
	})
}

// TestTakeAckRaces: many goroutines ack the hand-outs of one batch at once,
// each hand-out from several of them; a guard that is not one
// compare-and-swap would let two through, or let an earlier hand-out in
// after a later one.
func TestTakeAckRaces(t *testing.T) {
	for range 200 {
		var b Batch
		const handOuts, callers = 4, 8
		var won [handOuts]atomic.Int32
		var wg sync.WaitGroup
		for a := range handOuts {
			for range callers {
				wg.Go(func() {
					if b.TakeAck(a) {
						won[a].Add(1)
					}
				})
			}
		}
		wg.Wait()
		total := int32(0)
		for a := range handOuts {
			n := won[a].Load()
			require.LessOrEqualf(t, n, int32(1), "hand-out %d let through %d times", a, n)
			total += n
		}
		require.Positive(t, total)
		require.Equal(t, int64(handOuts), b.acked.Load(), "the last hand-out is always let through or passed")
		for a := range handOuts {
			require.Falsef(t, b.TakeAck(a), "hand-out %d after all were taken", a)
		}
	}
}
