package memmetrics

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
)

func TestGaugeKeepsTheLastValue(t *testing.T) {
	t.Parallel()
	s := New()
	g := s.NewGaugeCtor("pending", "topic", "partition")
	g("orders", "3").Set(7)
	g("orders", "3").Set(2)
	g("orders", "4").Set(9)
	assert.Equal(t, int64(2), s.Get("pending", "orders", 3))
	assert.Equal(t, int64(9), s.Get("pending", "orders", 4))
	assert.Zero(t, s.Get("pending", "orders", 5), "never set")
	assert.Zero(t, s.Get("pending", "payments", 3), "another topic")
	assert.Zero(t, s.Get("other", "orders", 3), "another name")
	assert.Equal(t, []int32{3, 4}, s.Partitions("pending", "orders"))
	assert.Empty(t, s.Partitions("pending", "payments"))
}

func TestCounterSums(t *testing.T) {
	t.Parallel()
	s := New()
	c := s.NewCounterCtor("commit_errors", "partition", "topic") // label order does not matter
	c("1", "orders").Incr(1)
	c("1", "orders").Incr(4)
	assert.Equal(t, int64(5), s.Get("commit_errors", "orders", 1))
}

// Labels other than topic and partition are not part of the key: series
// that differ only in them share one entry.
func TestOtherLabelsAreIgnored(t *testing.T) {
	t.Parallel()
	s := New()
	c := s.NewCounterCtor("sent", "label", "topic", "path", "partition", "stream")
	c("a", "orders", "root.input", "0", "s1").Incr(2)
	c("b", "orders", "root.output", "0", "s2").Incr(3)
	assert.Equal(t, int64(5), s.Get("sent", "orders", 0))

	g := s.NewGaugeCtor("lag", "topic", "partition", "path")
	g("orders", "0", "x").Set(10)
	g("orders", "0", "y").Set(11)
	assert.Equal(t, int64(11), s.Get("lag", "orders", 0), "the gauge set last wins")
}

func TestMetricsWithoutTopicOrPartition(t *testing.T) {
	t.Parallel()
	s := New()
	s.NewCounterCtor("output_sent", "label", "path")("", "root.output").Incr(3)
	s.NewGaugeCtor("up")().Set(1)
	s.NewGaugeCtor("by_topic", "topic")("orders").Set(4)
	s.NewGaugeCtor("bad_partition", "topic", "partition")("orders", "x").Set(5)
	assert.Equal(t, int64(3), s.Get("output_sent", "", NoPartition))
	assert.Equal(t, int64(1), s.Get("up", "", NoPartition))
	assert.Equal(t, int64(4), s.Get("by_topic", "orders", NoPartition))
	assert.Equal(t, int64(5), s.Get("bad_partition", "orders", NoPartition))
	// A constructor called with fewer values than keys does not panic.
	s.NewGaugeCtor("short", "topic", "partition")("orders").Set(6)
	assert.Equal(t, int64(6), s.Get("short", "orders", NoPartition))
}

func TestTimerCountsAndSums(t *testing.T) {
	t.Parallel()
	s := New()
	tm := s.NewTimerCtor("latency_ns", "topic", "partition")
	tm("orders", "2").Timing(100)
	tm("orders", "2").Timing(50)
	assert.Equal(t, Timing{Count: 2, Sum: 150}, s.Timer("latency_ns", "orders", 2))
	assert.Zero(t, s.Timer("latency_ns", "orders", 3))
	assert.Zero(t, s.Get("latency_ns", "orders", 2), "timers are read with Timer")
	assert.Equal(t, []int32{2}, s.Partitions("latency_ns", "orders"))
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := New()
	c := s.NewCounterCtor("n", "topic", "partition", "path")
	g := s.NewGaugeCtor("g", "topic", "partition")
	tm := s.NewTimerCtor("t", "topic", "partition")
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				p := fmt.Sprint(i % 4)
				c("orders", p, fmt.Sprint(w)).Incr(1)
				g("orders", p).Set(int64(i))
				tm("orders", p).Timing(1)
				_ = s.Get("n", "orders", int32(i%4))
				_ = s.Partitions("g", "orders")
				_ = s.Timer("t", "orders", 0)
			}
		})
	}
	wg.Wait()
	var total int64
	for p := range int32(4) {
		total += s.Get("n", "orders", p)
	}
	assert.Equal(t, int64(workers*each), total)
	assert.Equal(t, Timing{Count: workers * each / 4, Sum: workers * each / 4}, s.Timer("t", "orders", 0))
	assert.Equal(t, []int32{0, 1, 2, 3}, s.Partitions("g", "orders"))
}

// A stream built with `metrics: { <name>: {} }` reports to the store it was
// registered as: Benthos's own counters (labelled label and path, which are
// ignored) and a gauge and counter labelled topic and partition.
func TestRegisterOnAStream(t *testing.T) {
	t.Parallel()
	s := New()
	env := service.NewEnvironment()
	require.NoError(t, s.Register(env, "test_memory"))
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetYAML(`
input:
  generate:
    count: 6
    interval: ""
    mapping: |
      let n = counter()
      root = $n
      meta p = ($n % 2).string()
pipeline:
  threads: 1
  processors:
    - metric:
        type: gauge
        name: last_value
        labels: { topic: orders, partition: '${! @p }', region: eu }
        value: '${! content() }'
    - metric:
        type: counter_by
        name: value_total
        labels: { topic: orders, partition: '${! @p }', region: eu }
        value: '${! content() }'
output:
  drop: {}
metrics:
  test_memory: {}
logger:
  level: none
`))
	st, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, st.Run(ctx))

	assert.Equal(t, int64(6), s.Get("output_sent", "", NoPartition), "Benthos's own counter, its label and path ignored")
	assert.Equal(t, int64(5), s.Get("last_value", "orders", 1), "1, 3, 5: the last")
	assert.Equal(t, int64(6), s.Get("last_value", "orders", 0), "2, 4, 6: the last")
	assert.Equal(t, int64(9), s.Get("value_total", "orders", 1), "1+3+5")
	assert.Equal(t, int64(12), s.Get("value_total", "orders", 0), "2+4+6")
	assert.Equal(t, []int32{0, 1}, s.Partitions("last_value", "orders"))
}
