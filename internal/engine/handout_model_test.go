package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestHandOutModel holds the hand-out path to a model made of plain slices:
// a FIFO of parked reads and, per partition, a FIFO of the batches fetched
// and not handed out. cb8b996 made both queues keep their arrays (popParked
// shifts the parked reads down; an emptied ready queue starts again at the
// start of its array), so a mistake there would show as a read answered out
// of turn, a batch handed out twice, skipped or out of order, or a withdrawn
// read answered. Each seed runs a random mix, on two partitions, of fetches
// (whose records split into batches of batch_max_records), reads parked
// without waiting (several at once), withdrawals of parked reads, and acks
// in any order, with max_pending_batches small enough that partitions
// pause and parked reads wait. After every step, with the owner idle:
//
//   - the reads answered are the oldest parked ones, in order, and each
//     got the head of its partition's queue (so over the run every batch
//     goes out once, in offset order);
//   - a read is answered only when it is parked, and a withdrawn one never;
//   - the owner's parked reads are the model's, in order;
//   - each partition's ready queue holds the model's batches, and a slot
//     of the array it reuses (readyBuf) outside it holds no batch;
//   - a read stays parked only if no partition can hand out.
func TestHandOutModel(t *testing.T) {
	m, _ := testMetrics(t)
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 0x4a4d))
				const maxRecords, maxPending = 3, 5
				h := startOwner(t, testConfig(t, fmt.Sprintf("batch_max_records: %d\nmax_pending_batches: %d\n", maxRecords, maxPending)), m)
				tps := []topicPartition{tp0, tp1}
				h.assign(tps...)
				type span struct{ first, last int64 }
				var (
					parked  []*readReq                    // the model's parked reads, oldest first
					queued  = map[topicPartition][]span{} // fetched, not handed out
					next    = map[topicPartition]int64{}
					pending []*Batch // handed out, not acked
				)
				for step := range 300 {
					var op string
					switch x := rng.IntN(10); {
					case x < 3:
						tp := tps[rng.IntN(len(tps))]
						n := 1 + rng.IntN(10)
						from := next[tp]
						next[tp] += int64(n)
						op = fmt.Sprintf("fetch %v [%d,%d)", tp, from, next[tp])
						h.fetch(tp, next[tp], records(tp, from, next[tp])...)
						for f := from; f < next[tp]; f += maxRecords {
							queued[tp] = append(queued[tp], span{f, min(f+maxRecords, next[tp]) - 1})
						}
					case x < 6:
						op = "park a read"
						r := &readReq{reply: make(chan *Batch, 1)}
						h.o.inbox.readCh <- r
						parked = append(parked, r)
					case x < 7 && len(parked) > 0:
						i := rng.IntN(len(parked))
						op = fmt.Sprintf("withdraw parked read %d of %d", i, len(parked))
						r := parked[i]
						h.o.inbox.withdrawCh <- withdrawReq{req: r}
						parked = slices.Delete(parked, i, i+1)
						synctest.Wait()
						select {
						case b := <-r.reply:
							t.Fatalf("step %d, %s: a withdrawn read was answered with %v", step, op, b)
						default:
						}
					case len(pending) > 0:
						i := rng.IntN(len(pending))
						b := pending[i]
						op = fmt.Sprintf("ack %v seq %d", b.part.tp, b.seq)
						pending = slices.Delete(pending, i, i+1)
						h.ack(b, nil)
					default:
						continue
					}
					synctest.Wait()
					// Answered reads: the oldest parked, in order.
					answered := 0
					for i, r := range parked {
						var b *Batch
						select {
						case b = <-r.reply:
						default:
						}
						if b == nil {
							for _, later := range parked[i+1:] {
								select {
								case lb := <-later.reply:
									t.Fatalf("step %d, %s: a read parked later was answered (%v/%d) before parked read %d", step, op, lb.part.tp, lb.raw.first, i)
								default:
								}
							}
							break
						}
						answered++
						tp := b.part.tp
						q := queued[tp]
						require.NotEmptyf(t, q, "step %d, %s: %v handed out [%d,%d], nothing queued", step, op, tp, b.raw.first, b.raw.last)
						require.Equalf(t, q[0], span{b.raw.first, b.raw.last}, "step %d, %s: %v batch handed out", step, op, tp)
						queued[tp] = q[1:]
						pending = append(pending, b)
					}
					parked = parked[answered:]
					h.state(func(o *owner) {
						require.Truef(t, slices.Equal(parked, o.parked), "step %d, %s: parked reads = %v, want %v", step, op, o.parked, parked)
						for _, tp := range tps {
							p := o.parts[tp]
							var got []span
							for _, rb := range p.queue.ready {
								got = append(got, span{rb.first, rb.last})
							}
							require.Truef(t, slices.Equal(queued[tp], got), "step %d, %s: %v ready queue = %v, want %v", step, op, tp, got, queued[tp])
							full := p.queue.readyBuf[:cap(p.queue.readyBuf)]
							for i := range full {
								live := false
								for j := range p.queue.ready {
									live = live || &full[i] == &p.queue.ready[j]
								}
								if !live {
									require.Zerof(t, full[i], "step %d, %s: %v readyBuf[%d], outside the ready queue", step, op, tp, i)
								}
							}
							if len(o.parked) > 0 {
								require.Falsef(t, p.canHandOut(maxPending), "step %d, %s: a read waits while %v can hand out", step, op, tp)
							}
						}
					})
				}
			})
		})
	}
}

// TestRoundRobinOverALongRunQueue: popRun shifts a short run queue down and
// slices a long one's head off; either way the partitions take turns. 40
// partitions with three batches each go out one batch each per round, in
// the order they were queued, as the queue shrinks from long to short.
func TestRoundRobinOverALongRunQueue(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		const parts, batches = 40, 3
		h := startOwner(t, testConfig(t, "batch_max_records: 1\n"), m)
		tps := make([]topicPartition, parts)
		for i := range tps {
			tps[i] = topicPartition{"t", int32(i)}
		}
		h.assign(tps...)
		for _, tp := range tps {
			h.fetch(tp, batches, records(tp, 0, batches)...)
		}
		for round := range int64(batches) {
			for _, tp := range tps {
				b := h.read()
				require.Equalf(t, tp, b.part.tp, "round %d: partition", round)
				require.Equalf(t, round, b.raw.first, "round %d: %v's batch", round, tp)
			}
		}
		_, ok := h.tryRead()
		require.False(t, ok, "nothing left")
		h.state(func(o *owner) {
			require.Empty(t, o.runQ)
			for i, p := range o.runQ[:cap(o.runQ)] {
				require.Nilf(t, p, "runQ[%d], past the queue, holds a partition", i)
			}
		})
	})
}
