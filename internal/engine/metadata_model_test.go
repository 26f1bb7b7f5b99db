package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// Skipping is the one way commit metadata could lose data: a record skipped
// that was never delivered. This model drives one partition through many
// epochs of one owner after another, each started from what a broker holds
// (the last commit and its metadata, as kgo's OffsetFetch hands it over),
// with random batch sizes, metadata limits, verdicts (delivered, failed,
// never answered) and endings (a crash that loses everything in flight, or a
// revoke that commits), and checks:
//
//   - every commit the broker accepts: every offset below it, and every
//     offset of its delivered ranges, was delivered in some epoch;
//   - every record an epoch skipped had been delivered before;
//   - in the end, after a last epoch that delivers everything, every record
//     was delivered at least once.
func TestModelSkipsOnlyWhatWasDelivered(t *testing.T) {
	const (
		seeds  = 120
		end    = 120 // offsets 0..119
		epochs = 6
	)
	m := NewMetrics(nil)
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		roomy := rng.IntN(2) == 0 // metadata never cut: knowledge may never shrink
		var (
			committed      = int64(-1)
			committedEpoch = int32(-1)
			meta           string
			delivered      = map[int64]bool{}
			fail           = func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
			}
		)
		known := func(offset int64, md string) map[int64]bool {
			k := map[int64]bool{}
			for off := int64(0); off < offset; off++ {
				k[off] = true
			}
			if dm, err := commitmeta.Decode(md); err == nil && dm.Base == offset {
				for _, r := range dm.Delivered {
					for off := r.From; off < r.To; off++ {
						k[off] = true
					}
				}
			}
			return k
		}
		check := func(eo kgo.EpochOffset, md string) {
			if roomy && committed >= 0 {
				now := known(eo.Offset, md)
				for off := range known(committed, meta) {
					if !now[off] {
						fail("commit %d %q forgets offset %d, known delivered by the commit before (%d %q)", eo.Offset, md, off, committed, meta)
					}
				}
			}
			for off := int64(0); off < eo.Offset; off++ {
				if !delivered[off] {
					fail("commit %d passes offset %d, never delivered", eo.Offset, off)
				}
			}
			if dm, err := commitmeta.Decode(md); err == nil {
				for _, r := range dm.Delivered {
					for off := r.From; off < r.To; off++ {
						if !delivered[off] {
							fail("commit %d with %q: offset %d is in a range, never delivered", eo.Offset, md, off)
						}
					}
				}
			}
			committed, committedEpoch, meta = eo.Offset, eo.Epoch, md
		}
		for epoch := range epochs {
			last := epoch == epochs-1
			maxBytes := 64 + rng.IntN(120)
			if roomy {
				maxBytes = 4000
			}
			conf := testConfig(t, fmt.Sprintf("batch_max_records: %d\ncommit_period: 1s\ncommit_metadata_max_bytes: %d\nmax_pending_batches: 1000\n",
				1+rng.IntN(6), maxBytes))
			synctest.Test(t, func(t *testing.T) {
				h := startOwner(t, conf, m)
				h.cl.mu.Lock()
				h.cl.onCommit = func(_ topicPartition, eo kgo.EpochOffset, md string) { check(eo, md) }
				h.cl.mu.Unlock()
				h.assign(tp0)
				h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: committed, leaderEpoch: committedEpoch, meta: meta}})
				// The log arrives in fetches of random sizes, with commit
				// ticks between them: an epoch commits before it has
				// fetched all it inherited.
				from := max(committed, 0)
				handed := map[int64]bool{}
				var open []*Batch
				for at := from; at < end; {
					to := min(end, at+1+int64(rng.IntN(40)))
					h.fetch(tp0, end, records(tp0, at, to)...)
					at = to
					for _, b := range h.readAll() {
						for _, r := range b.raw.records {
							handed[r.Offset] = true
						}
						open = append(open, b)
					}
					if rng.IntN(2) == 0 {
						time.Sleep(time.Second)
						synctest.Wait()
					}
				}
				for off := from; off < end; off++ {
					if !handed[off] && !delivered[off] {
						fail("epoch %d skipped offset %d, never delivered", epoch, off)
					}
				}
				rng.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
				for _, b := range open {
					switch v := rng.IntN(10); {
					case last || v < 6:
						for _, r := range b.raw.records {
							delivered[r.Offset] = true
						}
						h.ack(b, nil)
					case v < 8:
						h.ack(b, errors.New("rejected"))
					default: // never answered
					}
					if rng.IntN(4) == 0 {
						time.Sleep(time.Second) // a commit tick
						synctest.Wait()
					}
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if last || rng.IntN(2) == 0 {
					// A revoke: the final commit is made by the callback.
					final := <-h.revoke(tp0)
					if !final.empty() {
						res := commitAndWait(t.Context(), h.cl, final, true)
						require.NoError(t, res.err)
					}
				}
				// Otherwise a crash: whatever was not committed is lost.
			})
		}
		for off := range int64(end) {
			if !delivered[off] {
				fail("offset %d never delivered", off)
			}
		}
		if committed != end {
			fail("the last epoch delivered everything but committed %d, want %d", committed, end)
		}
	}
}
