package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// collector is an HTTP sink for the examples, whose outputs post one
// message per request: a testkit.Sink that takes each body as one record,
// records every body it accepts, and rejects (500) the bodies reject says
// so.
type collector struct {
	mu       sync.Mutex // guards accepted and rejected
	accepted map[string]int
	rejected map[string]int
	reject   func(body string) bool
}

func newCollector(t *testing.T, reject func(string) bool) (*collector, string) {
	c := &collector{accepted: map[string]int{}, rejected: map[string]int{}, reject: reject}
	s, err := testkit.NewSink(testkit.SinkOptions{
		Decode: func(body []byte) ([]testkit.Record, error) {
			return []testkit.Record{{P: testkit.NoPartition, V: string(body)}}, nil
		},
		Judge: c.judge,
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return c, "http://" + s.Addr()
}

// judge is the sink's Judge: it counts the body as accepted or rejected.
func (c *collector) judge(b testkit.Batch) testkit.Answer {
	body := b.Records[0].V
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reject != nil && c.reject(body) {
		c.rejected[body]++
		return testkit.Fail
	}
	c.accepted[body]++
	return testkit.Accept
}

func (c *collector) counts() (accepted, rejected int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.accepted), len(c.rejected)
}

func exampleConfig(name string) string { return filepath.Join("..", "..", "config", name) }

// config/dead-letter-file.yaml as shipped: records the HTTP sink rejects go
// to the dead-letter file with the error, count as delivered, and the group
// commits to the log end.
func TestDeadLetterFileExample(t *testing.T) {
	t.Parallel()
	const (
		partitions = 2
		n          = 200
	)
	k := newTestKafka(t, partitions, "orders")
	k.produce(t, "orders", partitions, n)
	poison := func(body string) bool {
		var i int
		if _, err := fmt.Sscanf(body, "orders-%d", &i); err != nil {
			return false
		}
		return i%40 == 7
	}
	c, url := newCollector(t, poison)
	dlqDir := t.TempDir()
	p := startBinary(t, []string{"KAFKA_BROKERS=" + k.addr, "ORDERS_URL=" + url, "DLQ_PATH=" + dlqDir},
		"run", "-s", "http.enabled=false", "-s", "logger.level=error",
		"-s", "output.fallback.0.http_client.retry_period=10ms", // the shipped 1s makes the test slow, not different
		exampleConfig("dead-letter-file.yaml"))

	dlq := filepath.Join(dlqDir, "dlq-orders.jsonl")
	wantRejected := n / 40
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		a, r := c.counts()
		assert.Equal(ct, n-wantRejected, a, "records accepted (%d rejected)", r)
		assert.Equal(ct, wantRejected, distinct(readLines(ct, dlq)), "records in the DLQ")
	}, 30*time.Second, poll)
	for _, l := range readLines(t, dlq) {
		assert.True(t, poison(l.Value), "only rejected records are dead-lettered: %+v", l)
		assert.Equal(t, "orders", l.Topic)
	}
	raw, err := os.ReadFile(dlq)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"error":`, "each dead letter carries the fallback_error")
	assert.Contains(t, string(raw), "500", "the error names the HTTP status")

	// Dead-lettered records count as delivered: the watermark passes them.
	ends := k.endOffsets(t, "orders")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, ends, k.committed(ct, "orders-to-http-with-dlq", "orders"), "commits reach the log end")
	}, 20*time.Second, poll)
	require.Equal(t, 0, p.interrupt(t))
}

// config/dead-letter.yaml as shipped: the input retries the records the
// HTTP sink rejects (nack_retry), and after max_attempts (3) deliveries
// writes them to the dead-letter topic with their provenance; only they
// are dead-lettered (the split makes the error name them), everything
// else reaches the sink, and the group commits to the log end. Without the
// split, as the config's comment says, the http_client output's error names
// no record and the input dead-letters the whole batch holding a rejected
// record; every record is still delivered or dead-lettered.
func TestDeadLetterExample(t *testing.T) {
	t.Parallel()
	for _, split := range []bool{true, false} {
		t.Run(fmt.Sprintf("split %v", split), func(t *testing.T) {
			t.Parallel()
			testDeadLetterExample(t, split)
		})
	}
}

func testDeadLetterExample(t *testing.T, split bool) {
	const (
		partitions  = 2
		n           = 200
		maxAttempts = 3
		httpTries   = 4 // the output's first request and its 3 retries, per delivery
		group       = "orders-to-http-dead-letter"
	)
	config := exampleConfig("dead-letter.yaml")
	if !split {
		raw, err := os.ReadFile(config)
		require.NoError(t, err)
		const splitYAML = "    - split:\n        size: 1\n"
		require.Contains(t, string(raw), splitYAML)
		config = filepath.Join(t.TempDir(), "dead-letter-no-split.yaml")
		require.NoError(t, os.WriteFile(config, []byte(strings.Replace(string(raw), splitYAML, "    - noop: {}\n", 1)), 0o600))
	}
	k := newTestKafka(t, partitions, "orders", "orders-dlq")
	k.produce(t, "orders", partitions, n)
	index := func(body string) int {
		var i int
		if _, err := fmt.Sscanf(body, "orders-%d", &i); err != nil {
			return -1
		}
		return i
	}
	poison := func(body string) bool { return index(body)%40 == 7 }
	c, url := newCollector(t, poison)
	p := startBinary(t, []string{"KAFKA_BROKERS=" + k.addr, "ORDERS_URL=" + url},
		"run", "-s", "http.enabled=false", "-s", "logger.level=error",
		// The shipped 1s waits make the test slow, not different.
		"-s", "output.http_client.retry_period=10ms",
		"-s", "input.kafka_watermark.nack_retry.initial_backoff=10ms",
		config)

	wantRejected := n / 40
	ends := k.endOffsets(t, "orders")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if split {
			a, r := c.counts()
			assert.Equal(ct, n-wantRejected, a, "records accepted (%d rejected)", r)
		}
		assert.Equal(ct, ends, k.committed(ct, group, "orders"), "commits reach the log end, past the dead letters")
	}, 30*time.Second, poll)
	require.Equal(t, 0, p.interrupt(t))

	letters := k.readDeadLetters(t, "orders-dlq")
	lettered := map[string]bool{}
	for _, l := range letters {
		require.NoError(t, l.err, "dead letter %s", l.value)
		v := l.prov
		i := index(l.value)
		lettered[l.value] = true
		assert.Equal(t, "orders", v.Topic)
		assert.Equal(t, int32(i%partitions), v.Partition, "%s", l.value)
		assert.Equal(t, int64(i/partitions), v.Offset, "%s", l.value)
		assert.Equal(t, maxAttempts, v.Attempts, "%s", l.value)
		assert.Contains(t, v.Error, "500", "the error names the HTTP status")
		assert.False(t, v.FirstFailed.IsZero())
		assert.Contains(t, v.Member, "@")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range n {
		body := fmt.Sprintf("orders-%d", i)
		assert.True(t, c.accepted[body] > 0 || lettered[body], "%s is neither delivered nor dead-lettered", body)
		if poison(body) {
			assert.True(t, lettered[body], "rejected %s is dead-lettered", body)
		}
	}
	if !split {
		assert.Greater(t, len(letters), wantRejected, "without the split whole batches are dead-lettered, not only the rejected records")
		return
	}
	require.Len(t, letters, wantRejected, "one dead letter per rejected record, and no other")
	for body, tries := range c.rejected {
		assert.Equal(t, maxAttempts*httpTries, tries, "requests of %s: %d deliveries of %d requests each", body, maxAttempts, httpTries)
	}
	for body := range c.accepted {
		assert.False(t, poison(body), "the sink accepted %s", body)
	}
}

// The README's streams command on the shipped examples:
// watermark-connect -c config/streams-main.yaml streams config/streams/*.yaml
func TestStreamsExample(t *testing.T) {
	t.Parallel()
	const partitions = 2
	k := newTestKafka(t, partitions, "orders", "payments")
	k.produce(t, "orders", partitions, 100)
	k.produce(t, "payments", partitions, 60)
	c, url := newCollector(t, nil)
	payments := filepath.Join(t.TempDir(), "payments.jsonl")
	addr := freeAddr(t)
	streamFiles, err := filepath.Glob(filepath.Join("..", "..", "config", "streams", "*.yaml"))
	require.NoError(t, err)
	args := append([]string{"-c", exampleConfig("streams-main.yaml"), "-s", "http.address=" + addr, "-s", "logger.level=error", "streams"}, streamFiles...)
	p := startBinary(t, []string{"KAFKA_BROKERS=" + k.addr, "ORDERS_URL=" + url, "PAYMENTS_FILE=" + payments}, args...)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		a, _ := c.counts()
		assert.Equal(ct, 100, a, "orders posted")
		assert.Equal(ct, 60, distinct(readLines(ct, payments)), "payments written")
	}, 30*time.Second, poll)
	c.mu.Lock()
	for body := range c.accepted {
		assert.True(t, strings.HasPrefix(body, "orders-"), "the orders stream posted %q", body)
	}
	c.mu.Unlock()
	for _, l := range readLines(t, payments) {
		assert.True(t, strings.HasPrefix(l.Value, "payments-"), "the payments stream wrote %+v", l)
	}

	want := map[string]map[int32]int64{"orders": k.endOffsets(t, "orders"), "payments": k.endOffsets(t, "payments")}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		series, err := committedSeries(addr)
		if !assert.NoError(ct, err) {
			return
		}
		for _, s := range series {
			assert.Equal(ct, s.Labels["topic"], s.Labels["stream"], "each example stream consumes the topic it is named after: %v", s)
		}
		assert.Equal(ct, want, byTopic(ct, series), "committed series at the log end")
	}, 20*time.Second, poll)
	assert.Equal(t, want["orders"], k.committed(t, "orders-stream", "orders"))
	assert.Equal(t, want["payments"], k.committed(t, "payments-stream", "payments"))
	require.Equal(t, 0, p.interrupt(t))
}
