package engine

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// Issue 29: after a broker refused metadata as too large, the budget halved
// below what the stall provenance needs, and a stalled partition's commits
// became the header alone, which `status` reads as not stalled while the
// pipeline logged the stall. The budget now stops at
// commitmeta.MinCommitBudget, so the commits keep at least the stall's mark.
func TestOwnerRefusedMetadataKeepsTheStallMark(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 1\ncommit_period: 1s\ncommit_metadata_max_bytes: 100\n"+
			"nack_retry: { max_retries: -1, initial_backoff: 1h, max_backoff: 1h }\n"), m)
		h.cl.metaLimit = 64 // the broker's offset.metadata.max.bytes
		// Offsets of 19 digits: the header and the mark take 53 bytes.
		const base = 1_000_000_000_000_000_000
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: base}})
		h.fetch(tp0, base+100, records(tp0, base, base+100)...)
		bs := h.readAll()
		for i, b := range bs {
			if i%2 == 1 { // every other batch delivered: ranges up to the budget
				h.ack(b, nil)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		// Refused (about 100 bytes), committed again without metadata;
		// halving would leave 50 bytes, below the 53 of the mark.
		h.ack(bs[0], errors.New("HTTP 503 Service Unavailable")) // the head fails: stalled
		for range 4 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		h.cl.mu.Lock()
		defer h.cl.mu.Unlock()
		var metas []string
		for _, c := range h.cl.commits {
			metas = append(metas, c.meta[tp0])
		}
		last := metas[len(metas)-1]
		require.LessOrEqual(t, len(last), h.cl.metaLimit, "the last commit was accepted: %q", metas)
		d, err := commitmeta.DecodeCommit(last)
		require.NoError(t, err, "the last commit carries metadata: %q", metas)
		require.NotNil(t, d.Stall, "the last commit says the partition is stalled: %q", metas)
		require.Equal(t, commitmeta.Stall{Report: commitmeta.Report{First: base}, MarkOnly: true}, *d.Stall, "%q", metas)
	})
}

// A partition that starts from a commit carrying only a stall's mark shows
// the mark until its batch fails here again, and the whole provenance from
// then on: the mark says no more than it knows, and is not kept once more
// is known.
func TestOwnerInheritedStallMarkGivesWayToTheProvenance(t *testing.T) {
	m, _ := testMetrics(t)
	synctest.Test(t, func(t *testing.T) {
		h := startOwner(t, testConfig(t, "batch_max_records: 2\ncommit_period: 1s\n"+
			"nack_retry: { max_retries: -1, initial_backoff: 1h, max_backoff: 1h }\n"), m)
		h.assign(tp0)
		h.fetched(map[topicPartition]fetchedCommit{tp0: {offset: 10, leaderEpoch: -1, meta: "wm1 o=10 e=0 sf=10"}})
		h.fetch(tp0, 14, records(tp0, 10, 14)...)
		a, b := h.read(), h.read()
		h.ack(b, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		_, s, ok := h.lastStall(tp0)
		require.True(t, ok, "the inherited mark is carried")
		require.Equal(t, commitmeta.Stall{Report: commitmeta.Report{First: 10}, MarkOnly: true}, s)

		h.ack(a, errors.New("HTTP 503 Service Unavailable"))
		time.Sleep(time.Second)
		synctest.Wait()
		_, s, ok = h.lastStall(tp0)
		require.True(t, ok)
		require.False(t, s.MarkOnly, "failed here: the whole provenance")
		require.Equal(t, int64(11), s.Last)
		require.Contains(t, s.Reason, "503")
	})
}
