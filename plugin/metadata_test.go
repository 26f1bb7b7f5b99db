package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// failHead returns a decide function that fails every batch holding one of
// the given offsets of partition 0 and acknowledges everything else.
func failHead(offsets ...int64) func([]rec) (time.Duration, error) {
	return func(b []rec) (time.Duration, error) {
		for _, r := range b {
			for _, off := range offsets {
				if r.partition == 0 && r.offset == off {
					return 0, errors.New("rejected")
				}
			}
		}
		return 0, nil
	}
}

// runUntilRanges runs a member whose sink fails the batch at offset 0 of
// partition 0 until the last commit of partition 0 carries delivered ranges
// up to the log end, then stops it.
func runUntilRanges(t *testing.T, c *cluster, s *sink, topic, group, extra string, end int64) {
	t.Helper()
	st := startStream(t, testEnvWith(t, s, 4, failHead(0), memmetrics.New()), inputYAML(c.addr, topic, group, extra), 1)
	require.Eventually(t, func() bool {
		m, err := commitmeta.Decode(c.lastMeta(group, topic, 0))
		return err == nil && m.Base == 0 && len(m.Delivered) == 1 && m.Delivered[0].To == end
	}, 20*time.Second, 10*time.Millisecond, "a commit of offset 0 whose ranges reach the log end")
	st.stop(t)
}

// The head batch fails, everything after it is delivered: the commit stays at
// offset 0 but its ranges cover the rest, so the next member (here after a
// restart) delivers only the failed batch again. With commit_metadata off
// it delivers everything again.
func TestDeliveredRangesSurviveRestart(t *testing.T) {
	for _, withMeta := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit_metadata=%v", withMeta), func(t *testing.T) {
			const topic, n = "ranges", 200
			c, s := newAuditedCluster(t, 1, topic, n)
			extra := fmt.Sprintf("  batch_max_records: 10\n  commit_metadata: %v\n", withMeta)
			if withMeta {
				runUntilRanges(t, c, s, topic, "ranges", extra, n)
			} else {
				st := startStream(t, testEnvWith(t, s, 4, failHead(0), memmetrics.New()), inputYAML(c.addr, topic, "ranges", extra), 1)
				require.Eventually(t, func() bool {
					distinct, _ := s.counts()
					return distinct == n
				}, 20*time.Second, 10*time.Millisecond, "every record delivered once")
				st.stop(t)
				require.Equal(t, int64(-1), c.lastCommit("ranges", topic, 0), "the watermark never moved: nothing to commit")
			}
			_, before := s.counts()

			g := memmetrics.New()
			st := startStream(t, testEnvWith(t, s, 4, nil, g), inputYAML(c.addr, topic, "ranges", extra), 1)
			waitCommitted(t, c, "ranges", topic, map[int32]int64{0: n})
			st.stop(t)
			distinct, dups := s.counts()
			require.Equal(t, n, distinct)
			if withMeta {
				require.Equal(t, 10, dups-before, "only the failed batch is delivered again")
				require.Equal(t, int64(n-10), g.Get(engine.MetricSkipped, topic, 0))
			} else {
				require.Equal(t, n, dups-before, "everything above the commit is delivered again")
				require.Zero(t, g.Get(engine.MetricSkipped, topic, 0))
			}
		})
	}
}

// The ranges go with the partition to another member on a revoke, and come
// back with it.
func TestDeliveredRangesFollowTheAssignment(t *testing.T) {
	const topic, n = "follow", 400
	c, s := newAuditedCluster(t, 2, topic, n)
	extra := "  batch_max_records: 10\n  drain_timeout: 1s\n"
	stA := startStream(t, testEnvWith(t, s, 4, failHead(0), memmetrics.New()), inputYAML(c.addr, topic, "follow", extra), 1)
	require.Eventually(t, func() bool {
		m, err := commitmeta.Decode(c.lastMeta("follow", topic, 0))
		return err == nil && len(m.Delivered) == 1 && m.Delivered[0].To == n/2 && c.lastCommit("follow", topic, 1) == n/2
	}, 20*time.Second, 10*time.Millisecond, "partition 0 stalled at 0 with ranges to the end, partition 1 at the end")
	_, before := s.counts()
	// B joins and takes one partition, then A leaves and B has both.
	gB := memmetrics.New()
	stB := startStream(t, testEnvWith(t, s, 4, nil, gB), inputYAML(c.addr, topic, "follow", extra), 1)
	stA.stop(t)
	waitCommitted(t, c, "follow", topic, map[int32]int64{0: n / 2, 1: n / 2})
	stB.stop(t)
	distinct, dups := s.counts()
	require.Equal(t, n, distinct)
	require.Equal(t, 10, dups-before, "only partition 0's failed batch is delivered again")
}

// Metadata this input did not write, or wrote for another offset, is
// ignored: nothing is skipped, nothing fails.
func TestForeignMetadataIsIgnored(t *testing.T) {
	const topic, n = "foreign", 120
	c := newCluster(t, 4, topic)
	c.produce(t, topic, 4, n)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	metas := []string{
		"garbage, not ours",  // another client's
		"wm1 o=3 e=0 d=1.10", // written for offset 3, committed 5
		"watermark-connect-0d5c1a2e-6c1f-4e0b-9a7e-1f2d3c4b5a69", // kgo's member ID
		"wm1 o=5 e=0 d=1.99999",                                  // reaches past the log end (30)
	}
	var offs kadm.Offsets
	for p, m := range metas {
		offs.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: 5, LeaderEpoch: -1, Metadata: m})
	}
	resp, err := adm.CommitOffsets(context.Background(), "foreign", offs)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	// Audit from here on: offsets below 5 count as delivered by whoever
	// committed them.
	s := newSink()
	for p := range int32(4) {
		s.preAck(topic, p, 5)
	}
	c.mu.Lock()
	c.sink = s
	c.mu.Unlock()

	g := memmetrics.New()
	st := startStream(t, testEnvWith(t, s, 4, nil, g), inputYAML(c.addr, topic, "foreign", "  batch_max_records: 10\n"), 1)
	waitCommitted(t, c, "foreign", topic, map[int32]int64{0: 30, 1: 30, 2: 30, 3: 30})
	st.stop(t)
	distinct, dups := s.counts()
	require.Equal(t, 4*25, distinct, "everything above the committed offset 5, in every partition")
	require.Zero(t, dups)
	for p := range int32(4) {
		require.Zero(t, g.Get(engine.MetricSkipped, topic, p), "partition %d skips nothing", p)
		require.True(t, strings.HasPrefix(c.lastMeta("foreign", topic, p), commitmeta.Prefix), "our own metadata replaces it")
	}
}

// The gauge of replay exposure counts what a crash now would deliver again:
// handed out above the last commit and not covered by its ranges.
func TestReplayExposureGauge(t *testing.T) {
	const topic, n = "exposure", 100
	c, s := newAuditedCluster(t, 1, topic, n)
	release := newGate(t)
	var mu sync.Mutex
	s.decide = func(b []rec) (time.Duration, error) {
		if b[0].offset == 0 {
			release.wait() // the head batch is held
		}
		return 0, nil
	}
	g := memmetrics.New()
	st := startStream(t, testEnvWith(t, s, 4, nil, g), inputYAML(c.addr, topic, "exposure", "  batch_max_records: 10\n"), 1)
	require.Eventually(t, func() bool {
		m, err := commitmeta.Decode(c.lastMeta("exposure", topic, 0))
		return err == nil && len(m.Delivered) == 1 && m.Delivered[0].To == n
	}, 20*time.Second, 10*time.Millisecond, "ranges up to the log end")
	require.Eventually(t, func() bool { return g.Get(engine.MetricExposure, topic, 0) == 10 }, 5*time.Second, 10*time.Millisecond,
		"only the held batch is exposed")
	mu.Lock()
	release.open()
	mu.Unlock()
	waitCommitted(t, c, "exposure", topic, map[int32]int64{0: n})
	require.Eventually(t, func() bool { return g.Get(engine.MetricExposure, topic, 0) == 0 }, 5*time.Second, 10*time.Millisecond,
		"nothing is exposed at the log end")
	st.stop(t)
}
