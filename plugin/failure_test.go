package plugin

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/engine"
)

func TestFailedBatchStallsOnlyItsPartition(t *testing.T) {
	const (
		topic      = "stall"
		partitions = 4
		n          = 4000 // 1000 per partition
		maxPending = 5
		batchMax   = 10
	)
	c, s := newAuditedCluster(t, partitions, topic, n)
	var mu sync.Mutex
	failedFirst := int64(-1)
	s.decide = func(b []rec) (time.Duration, error) {
		if b[0].partition == 1 && b[0].offset <= 100 && b[len(b)-1].offset >= 100 {
			mu.Lock()
			failedFirst = b[0].offset
			mu.Unlock()
			return 0, errors.New("sink refused the batch holding offset 100")
		}
		return 0, nil
	}
	st := startStream(t, testEnv(t, s, 8), inputYAML(c.addr, topic, "stall", `
  max_pending_batches: 5
  batch_max_records: 10
`), 2)

	ends := c.endOffsets(t, topic, partitions)
	require.Eventually(t, func() bool {
		return c.lastCommit("stall", topic, 0) == ends[0] && c.lastCommit("stall", topic, 2) == ends[2] && c.lastCommit("stall", topic, 3) == ends[3]
	}, 30*time.Second, 10*time.Millisecond, "healthy partitions to commit to the end")
	mu.Lock()
	first := failedFirst
	mu.Unlock()
	require.GreaterOrEqual(t, first, int64(0), "the batch with offset 100 was delivered")

	g := s.gauges
	require.Eventually(t, func() bool {
		return g.Get(engine.MetricStalled, topic, 1) == 1 && g.Get(engine.MetricPaused, topic, 1) == 1 && g.Get(engine.MetricAge, topic, 1) >= 1
	}, 10*time.Second, 10*time.Millisecond, "the stalled partition to report stalled, paused and an aging watermark")
	require.Equal(t, int64(maxPending), g.Get(engine.MetricPending, topic, 1), "pending stops at the limit")
	require.Equal(t, int64(0), g.Get(engine.MetricStalled, topic, 0))
	require.LessOrEqual(t, c.lastCommit("stall", topic, 1), first, "never past the failed batch")
	require.Eventually(t, func() bool { return c.lastCommit("stall", topic, 1) == first }, 5*time.Second, 10*time.Millisecond, "the commit up to the failed batch")

	// Paused at the limit: nothing beyond max_pending_batches batches after
	// the failed one is delivered.
	s.mu.Lock()
	var beyond int
	for off := first + maxPending*batchMax; off < ends[1]; off++ {
		beyond += s.delivered[key3(topic, 1, off)]
	}
	s.mu.Unlock()
	require.Zero(t, beyond, "records delivered beyond the pending limit")

	// Producers keep writing to the paused partition: its lag must follow,
	// although no fetch response reports its log end any more.
	c.produce(t, topic, partitions, 40) // 10 more records per partition
	newEnd := c.endOffsets(t, topic, partitions)[1]
	require.Eventually(t, func() bool {
		return g.Get(engine.MetricLag, topic, 1) == newEnd-first
	}, 10*time.Second, 10*time.Millisecond, "the paused partition's lag to follow its log end")
	st.stop(t)
	require.Equal(t, first, c.lastCommit("stall", topic, 1), "shutdown commits nothing past the failure")
}

func TestNackRetryRecoversInProcess(t *testing.T) {
	const topic = "retry"
	c, s := newAuditedCluster(t, 2, topic, 200)
	var mu sync.Mutex
	attempts := 0
	s.decide = func(b []rec) (time.Duration, error) {
		if b[0].partition == 0 && b[0].offset == 0 {
			mu.Lock()
			defer mu.Unlock()
			attempts++
			if attempts <= 2 {
				return 0, errors.New("transient")
			}
		}
		return 0, nil
	}
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "retry", `
  batch_max_records: 10
  nack_retry:
    max_retries: 3
    initial_backoff: 10ms
    max_backoff: 20ms
`), 1)
	ends := c.endOffsets(t, topic, 2)
	waitCommitted(t, c, "retry", topic, ends)
	st.stop(t)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 3, attempts, "two failures, then success on the third attempt")
	require.Zero(t, s.gauges.Get(engine.MetricStalled, topic, 0))
}

// Regression: a retry handed out the very messages of the attempt before, so
// a processor that changes messages in place processed its own output again
// ("v!" became "v!!"). Every re-delivery gets fresh messages.
func TestRetryHandsOutFreshMessages(t *testing.T) {
	const topic = "fresh"
	c, s := newAuditedCluster(t, 1, topic, 20)
	var mu sync.Mutex
	failed := false
	s.decide = func(b []rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		if b[0].offset == 0 && !failed {
			failed = true
			return 0, errors.New("first attempt fails")
		}
		return 0, nil
	}
	var values []string
	s.onWrite = func(b []rec) {
		mu.Lock()
		defer mu.Unlock()
		if b[0].offset == 0 {
			values = append(values, b[0].value)
		}
	}
	st := startStream(t, testEnv(t, s, 1), inputYAML(c.addr, topic, "fresh", `
  batch_max_records: 10
  nack_retry:
    max_retries: 1
    initial_backoff: 10ms
    max_backoff: 10ms
`), 1, `mutation: 'root = content().string() + "!"'`)
	waitCommitted(t, c, "fresh", topic, c.endOffsets(t, topic, 1))
	st.stop(t)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"0-0!", "0-0!"}, values, "the retry processes the record, not the first attempt's output")
}

// A batch error that names the failed messages: the retry re-delivers those
// only, through a processor that reorders and drops messages on the way, and
// the batch is committed once they are delivered.
func TestBatchErrorRetriesOnlyTheFailedMessages(t *testing.T) {
	const topic = "partial"
	c, s := newAuditedCluster(t, 1, topic, 10)
	s.ack([]rec{{topic: topic, partition: 0, offset: 5}}) // the processor drops it: for the audit, delivered
	var mu sync.Mutex
	attempt := 0
	s.decide = func(b []rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		attempt++
		if attempt == 1 {
			// Fail the messages of offsets 3 and 7, wherever the
			// processors put them.
			var idx partialFailure
			for i, r := range b {
				if r.offset == 3 || r.offset == 7 {
					idx = append(idx, i)
				}
			}
			return 0, idx
		}
		return 0, nil
	}
	st := startStream(t, testEnv(t, s, 1), inputYAML(c.addr, topic, "partial", `
  batch_max_records: 10
  nack_retry:
    max_retries: 2
    initial_backoff: 10ms
    max_backoff: 10ms
`), 1, `mapping: 'root = if meta("kafka_offset") == "5" { deleted() } else { this }'`, `split: { size: 100 }`)
	waitCommitted(t, c, "partial", topic, map[int32]int64{0: 10})
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	for off := range int64(10) {
		want := 1
		switch off {
		case 3, 7:
			want = 2
		case 5:
			want = 0 // the processor drops it: acknowledged with the batch
		}
		require.Equal(t, want, s.delivered[key3(topic, 0, off)], "deliveries of offset %d", off)
	}
}

// A plain error on a retry that a batch error narrowed fails what that retry
// held: the next retry holds the named message only. The bug: the plain
// error widened the retry to the whole batch again, and the sink received
// twice the messages it had accepted.
func TestPlainErrorAfterABatchErrorRetriesOnlyTheNamed(t *testing.T) {
	const topic = "narrowed"
	c, s := newAuditedCluster(t, 1, topic, 4)
	var mu sync.Mutex
	attempt := 0
	s.decide = func(b []rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		switch attempt++; attempt {
		case 1:
			for i, r := range b {
				if r.offset == 1 {
					return 0, partialFailure{i}
				}
			}
		case 2:
			return 0, errors.New("HTTP 503")
		}
		return 0, nil
	}
	st := startStream(t, testEnv(t, s, 1), inputYAML(c.addr, topic, "narrowed", `
  batch_max_records: 4
  nack_retry:
    max_retries: 3
    initial_backoff: 10ms
    max_backoff: 10ms
`), 1)
	waitCommitted(t, c, "narrowed", topic, map[int32]int64{0: 4})
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	for off := range int64(4) {
		want := 1
		if off == 1 {
			want = 3
		}
		require.Equal(t, want, s.delivered[key3(topic, 0, off)], "deliveries of offset %d", off)
	}
}
