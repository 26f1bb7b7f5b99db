package plugin

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

// The redpanda input's fields that change how records flow, each run
// against kfake through a stream.

func TestTCPBlockConsumes(t *testing.T) {
	const topic = "tcp"
	c, s := newAuditedCluster(t, 2, topic, 200)
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "tcp", "  tcp: { connect_timeout: 5s, keep_alive: { idle: 10s } }\n"), 1)
	waitCommitted(t, c, "tcp", topic, c.endOffsets(t, topic, 2))
	st.stop(t)
	distinct, _ := s.counts()
	require.Equal(t, 200, distinct)
}

func TestRegexpTopicsIncludeExclude(t *testing.T) {
	c := newCluster(t, 2, "rx-a", "rx-b", "rx-skip", "other")
	for _, topic := range []string{"rx-a", "rx-b", "rx-skip", "other"} {
		c.produce(t, topic, 2, 20)
	}
	s := newSink()
	c.sink = s
	// As the redpanda input takes them: patterns in regexp_topics_include
	// (comma-separated in one entry), no topics.
	yaml := strings.Replace(inputYAML(c.addr, "unused", "rxi", "  regexp_topics_include: [ \"^rx-a$, ^rx-b$\", \"^rx-skip$\" ]\n  regexp_topics_exclude: [ skip ]\n"),
		"  topics: [ \"unused\" ]\n", "", 1)
	st := startStream(t, testEnv(t, s, 4), yaml, 1)
	for _, topic := range []string{"rx-a", "rx-b"} {
		waitCommitted(t, c, "rxi", topic, c.endOffsets(t, topic, 2))
	}
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.delivered, 40, "both included topics (20 records each), nothing else")
	for k := range s.delivered {
		require.True(t, strings.HasPrefix(k, "rx-a/") || strings.HasPrefix(k, "rx-b/"), "delivered %s", k)
	}
	require.Equal(t, int64(-1), c.lastCommit("rxi", "rx-skip", 0), "the excluded topic is not consumed")
}

// extract_tracing_map: a batch's messages carry the trace its first
// record's headers name, as Benthos's own wrapper extracts it.
func TestExtractTracingMap(t *testing.T) {
	const (
		topic   = "traced"
		traceID = "0af7651916cd43dd8448eb211c80319c"
	)
	c := newCluster(t, 1, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	var rs []*kgo.Record
	for range 20 {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte("v"), Headers: []kgo.RecordHeader{
			{Key: "traceparent", Value: []byte("00-" + traceID + "-b7ad6b7169203331-01")},
		}})
	}
	require.NoError(t, cl.ProduceSync(context.Background(), rs...).FirstErr())
	cl.Close()

	s := newSink()
	c.sink = s
	var mu sync.Mutex
	var ids []string
	s.onWrite = func(b []rec) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range b {
			ids = append(ids, r.value)
		}
	}
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "traced", "  extract_tracing_map: root = @\n"), 1,
		"mapping: root = tracing_id()")
	waitCommitted(t, c, "traced", topic, c.endOffsets(t, topic, 1))
	st.stop(t)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ids, 20)
	for _, id := range ids {
		require.Equal(t, traceID, id, "the message's trace is the one its headers carry")
	}
}

// timely_nacks_maximum_wait: a batch the sink never answers is nacked after
// the wait, as in the redpanda input; here that nack is retried (with
// auto_replay_nacks: true, that is nack_retry.max_retries: -1) or, without
// retries, stalls the partition. Nothing is committed past it either way
// (the cluster's audit checks every commit).
func TestTimelyNacks(t *testing.T) {
	// hang returns a decide function that never answers the first delivery
	// of the batch at offset 0 (until the gate opens), and counts its
	// deliveries.
	hang := func(g *gate, deliveries *int, mu *sync.Mutex) func([]rec) (time.Duration, error) {
		return func(b []rec) (time.Duration, error) {
			if b[0].offset != 0 {
				return 0, nil
			}
			mu.Lock()
			*deliveries++
			first := *deliveries == 1
			mu.Unlock()
			if first {
				g.wait()
			}
			return 0, nil
		}
	}

	t.Run("retried", func(t *testing.T) {
		const topic = "timely-retry"
		c, s := newAuditedCluster(t, 1, topic, 30)
		g := newGate(t)
		var mu sync.Mutex
		var deliveries int
		s.decide = hang(g, &deliveries, &mu)
		st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "timely-retry", `
  batch_max_records: 10
  timely_nacks_maximum_wait: 300ms
  auto_replay_nacks: true
  nack_retry: { initial_backoff: 10ms }
`), 1)
		waitCommitted(t, c, "timely-retry", topic, c.endOffsets(t, topic, 1))
		mu.Lock()
		require.Equal(t, 2, deliveries, "the unanswered batch was nacked and delivered again")
		mu.Unlock()
		g.open()
		st.stop(t)
	})

	t.Run("stalls", func(t *testing.T) {
		const topic = "timely-stall"
		c, s := newAuditedCluster(t, 1, topic, 30)
		g := newGate(t)
		var mu sync.Mutex
		var deliveries int
		s.decide = hang(g, &deliveries, &mu)
		st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "timely-stall", `
  batch_max_records: 10
  timely_nacks_maximum_wait: 300ms
  stall_replay_after: 0s
`), 1)
		require.Eventually(t, func() bool { return s.gauges.Get(engine.MetricStalled, topic, 0) == 1 }, 10*time.Second, 10*time.Millisecond,
			"the forced nack stalls the partition")
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.contig[topic+"/0"] == 0 && len(s.acked[topic+"/0"]) == 20
		}, 10*time.Second, 10*time.Millisecond, "the batches after the unanswered one are acknowledged")
		require.Never(t, func() bool { return c.lastCommit("timely-stall", topic, 0) > 0 }, time.Second, 10*time.Millisecond,
			"a commit past the batch nacked for its wait")
		g.open() // its late acknowledgement is ignored
		st.stop(t)
		require.LessOrEqual(t, c.lastCommit("timely-stall", topic, 0), int64(0), "shutdown commits nothing past it")
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, 1, deliveries, "no retry without nack_retry")
	})
}
