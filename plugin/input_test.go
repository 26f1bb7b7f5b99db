package plugin

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitCommitted waits until every partition's last commit equals its log end.
func waitCommitted(t *testing.T, c *cluster, group, topic string, ends map[int32]int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		for p, end := range ends {
			if c.lastCommit(group, topic, p) != end {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "commits to reach the log end")
}

func TestOutOfOrderAcksCommitToEnd(t *testing.T) {
	const (
		topic      = "ooo"
		partitions = 8
		n          = 20000
	)
	for _, tc := range []struct {
		name  string
		delay func(r *rand.Rand, b []rec) time.Duration
	}{
		{"random", func(r *rand.Rand, _ []rec) time.Duration { return time.Duration(r.IntN(3000)) * time.Microsecond }},
		{"one-slow-batch", func(_ *rand.Rand, b []rec) time.Duration {
			if b[0].partition == 3 && b[0].offset == 0 {
				return 500 * time.Millisecond
			}
			return 0
		}},
		{"reverse-ish", func(_ *rand.Rand, b []rec) time.Duration {
			// Earlier offsets wait longer, so later batches ack first.
			return time.Duration(max(0, 3000-b[0].offset)) * time.Microsecond / 4
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := newAuditedCluster(t, partitions, topic, n)
			var mu sync.Mutex
			r := rand.New(rand.NewPCG(1, 2))
			s.decide = func(b []rec) (time.Duration, error) {
				mu.Lock()
				defer mu.Unlock()
				return tc.delay(r, b), nil
			}
			env := testEnv(t, s, 32)
			st := startStream(t, env, inputYAML(c.addr, topic, "g", "  batch_max_records: 50\n"), 4)
			ends := c.endOffsets(t, topic, partitions)
			waitCommitted(t, c, "g", topic, ends)
			st.stop(t)
			distinct, _ := s.counts()
			require.Equal(t, n, distinct, "every record delivered at least once")

			// A second run of the same group reads only what is new.
			_, dupsBefore := s.counts()
			st2 := startStream(t, env, inputYAML(c.addr, topic, "g", ""), 1)
			c.produce(t, topic, partitions, partitions) // one new record per partition
			require.Eventually(t, func() bool { d, _ := s.counts(); return d >= n+partitions }, 20*time.Second, 10*time.Millisecond, "the new records")
			st2.stop(t)
			d, dups := s.counts()
			require.Equal(t, dupsBefore, dups, "a restart delivers nothing twice")
			require.Equal(t, n+partitions, d, "a restart delivers the new records")
		})
	}
}

// Benthos's checkpoint-capture contract: ack A, B, D; nack C, E; restart;
// expect C, D, E again and nothing before C. With commit metadata the
// restart skips D too: the commit at C carried D's range.
func TestCheckpointCaptureScenario(t *testing.T) {
	for _, tc := range []struct {
		meta  bool
		again []int64
	}{{false, []int64{2, 3, 4}}, {true, []int64{2, 4}}} {
		t.Run(fmt.Sprintf("commit_metadata=%v", tc.meta), func(t *testing.T) {
			const topic = "cc"
			c := newCluster(t, 1, topic)
			c.produce(t, topic, 1, 5) // offsets 0..4: A..E
			s := newSink()
			c.sink = s
			var mu sync.Mutex
			seen := map[int64]bool{}
			s.decide = func(b []rec) (time.Duration, error) {
				mu.Lock()
				defer mu.Unlock()
				off := b[0].offset
				first := !seen[off]
				seen[off] = true
				if first && (off == 2 || off == 4) {
					return 0, errors.New("sink rejected")
				}
				return 0, nil
			}
			extra := fmt.Sprintf("  batch_max_records: 1\n  commit_metadata: %v\n", tc.meta)
			st := startStream(t, testEnv(t, s, 8), inputYAML(c.addr, topic, "cc", extra), 1)
			require.Eventually(t, func() bool { d, _ := s.counts(); return d == 5 }, 10*time.Second, 10*time.Millisecond, "five deliveries")
			require.Eventually(t, func() bool { return c.lastCommit("cc", topic, 0) == 2 }, 10*time.Second, 10*time.Millisecond, "commit at C")
			st.stop(t)
			require.Equal(t, int64(2), c.lastCommit("cc", topic, 0), "no commit past the nacked C")

			s.mu.Lock()
			before := maps.Clone(s.delivered)
			s.mu.Unlock()
			st2 := startStream(t, testEnv(t, s, 8), inputYAML(c.addr, topic, "cc", extra), 1)
			require.Eventually(t, func() bool { return c.lastCommit("cc", topic, 0) == 5 }, 10*time.Second, 10*time.Millisecond, "commit at the end")
			st2.stop(t)
			s.mu.Lock()
			defer s.mu.Unlock()
			var again []int64
			for off := range int64(5) {
				k := key3(topic, 0, off)
				require.LessOrEqual(t, s.delivered[k]-before[k], 1, k)
				if s.delivered[k] > before[k] {
					again = append(again, off)
				}
			}
			require.Equal(t, tc.again, again, "delivered again after the restart")
		})
	}
}
