package plugin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Under ordering: key, with a sink that answers batches in a random order
// and refuses one key's first record for a while, every key's records
// arrive in log order (their first deliveries), the other keys keep
// flowing while that key waits, and every partition commits to its end.
func TestKeyOrderEndToEnd(t *testing.T) {
	const (
		topic      = "ko"
		partitions = 4
		n          = 4000
		keys       = 50
	)
	c := newCluster(t, partitions, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	rs := make([]*kgo.Record, n)
	for i := range rs {
		k := i % keys
		rs[i] = &kgo.Record{Topic: topic, Partition: int32(k % partitions), Key: []byte(fmt.Sprint("k", k)), Value: []byte(fmt.Sprint(i))}
	}
	require.NoError(t, cl.ProduceSync(context.Background(), rs...).FirstErr())
	cl.Close()
	s := newSink()
	c.sink = s

	var mu sync.Mutex
	first := map[string]int64{} // partition/key -> the last offset first delivered
	seen := map[string]bool{}   // partition/offset delivered before
	var violations []string
	failUntil := time.Now().Add(2 * time.Second)
	var refused int
	rng := rand.New(rand.NewPCG(1, 2))
	s.decide = func(b []rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range b {
			if r.partition == 1 && r.value == "1" && time.Now().Before(failUntil) {
				refused++
				return time.Duration(rng.IntN(5)) * time.Millisecond, errors.New("HTTP 503 for k1")
			}
		}
		for _, r := range b {
			id := fmt.Sprintf("%d/%d", r.partition, r.offset)
			if seen[id] {
				continue // a re-delivery, not a first one
			}
			seen[id] = true
			key := fmt.Sprintf("%d/%s", r.partition, keyOf(r.value, keys))
			if last, ok := first[key]; ok && last > r.offset {
				violations = append(violations, fmt.Sprintf("key %s: offset %d first delivered after %d", key, r.offset, last))
			}
			first[key] = max(first[key], r.offset)
		}
		return time.Duration(rng.IntN(8)) * time.Millisecond, nil
	}
	startStream(t, testEnv(t, s, 16), inputYAML(c.addr, topic, "ko", `
  ordering: key
  batch_max_records: 8
  nack_retry: { max_retries: -1, initial_backoff: 20ms, max_backoff: 100ms }
`), 2)
	waitCommitted(t, c, "ko", topic, c.endOffsets(t, topic, partitions))
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, violations, "first deliveries of each key in log order")
	require.Positive(t, refused, "k1's first record was refused for a while")
}

// keyOf is the key of the record whose value is the production index v.
func keyOf(v string, keys int) string {
	i, err := strconv.Atoi(v)
	if err != nil {
		return "unparsable value " + v
	}
	return fmt.Sprint("k", i%keys)
}
