package plugin

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// End to end on kfake: the sink is down for one partition longer than the
// retries. The partition stalls, its commits say why, and when the sink
// comes back the partition replays in place and commits to the log end with
// no restart; the only duplicates are the batches the sink never took.
func TestStalledPartitionReplaysInPlaceAfterAnOutage(t *testing.T) {
	const topic, partitions, n = "heal", 4, 400
	c, s := newAuditedCluster(t, partitions, topic, n)
	var mu sync.Mutex
	down := true
	refused := map[int64]int{}
	s.decide = func(b []rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		if down && b[0].partition == 0 && b[0].offset >= 30 && b[0].offset < 50 {
			refused[b[0].offset]++
			return 0, errors.New("HTTP 503 Service Unavailable")
		}
		return 0, nil
	}
	g := memmetrics.New()
	st := startStream(t, testEnvWith(t, s, 4, nil, g), inputYAML(c.addr, topic, "heal", `
  batch_max_records: 10
  stall_replay_after: 300ms
  nack_retry:
    max_retries: 1
    initial_backoff: 10ms
    max_backoff: 10ms
`), 1)
	ends := c.endOffsets(t, topic, partitions)
	require.Eventually(t, func() bool {
		m, fields, err := commitmeta.DecodeFields(c.lastMeta("heal", topic, 0))
		if err != nil || m.Base != 30 {
			return false
		}
		stall, ok, err := commitmeta.StallFromFields(fields)
		return err == nil && ok && stall.First == 30 && stall.Last == 39 && strings.Contains(stall.Reason, "503")
	}, 20*time.Second, 10*time.Millisecond, "partition 0 commits offset 30 with the stall of batch 30-39")
	require.Eventually(t, func() bool { return g.Get(engine.MetricStallReplays, topic, 0) >= 2 }, 20*time.Second, 10*time.Millisecond,
		"replays in place while the sink is down")
	for p := int32(1); p < partitions; p++ {
		require.Equal(t, ends[p], c.lastCommit("heal", topic, p), "partition %d is not held back", p)
	}
	_, before := s.counts()
	mu.Lock()
	down = false
	healedAt := time.Now()
	mu.Unlock()
	waitCommitted(t, c, "heal", topic, ends)
	t.Logf("from the sink's recovery to the commit at the log end: %v", time.Since(healedAt))
	st.stop(t)
	m, fields, err := commitmeta.DecodeFields(c.lastMeta("heal", topic, 0))
	require.NoError(t, err)
	_, stalled, _ := commitmeta.StallFromFields(fields)
	require.False(t, stalled, "healed: no provenance")
	require.Equal(t, ends[0], m.Base)
	distinct, dups := s.counts()
	require.Equal(t, n, distinct)
	mu.Lock()
	defer mu.Unlock()
	// Every delivery above the first refused one went to the refused
	// batches: the replays delivered nothing else again.
	require.Equal(t, 2, len(refused), "batches 30-39 and 40-49 were refused")
	require.LessOrEqual(t, dups-before, 20, "after the recovery, only the two refused batches come again")
	t.Logf("duplicates: %d in all, %d after the recovery", dups, dups-before)
}
