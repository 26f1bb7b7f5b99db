package tests

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafka is the test's own PLAINTEXT client to the broker: admin and producer.
type kafka struct {
	t   *testing.T
	env *brokerEnv
	cl  *kgo.Client
	adm *kadm.Client
}

func newKafka(t *testing.T, env *brokerEnv) *kafka {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(env.Brokers, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(50000),
		kgo.RetryTimeout(30*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &kafka{t: t, env: env, cl: cl, adm: kadm.NewClient(cl)}
}

// createTopic creates a topic (replication factor 1, the only one a single
// broker has) and waits until its partitions have leaders.
func (k *kafka) createTopic(name string, partitions int32) {
	k.t.Helper()
	ctx := testCtx(k.t, 30*time.Second)
	resp, err := k.adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		k.t.Fatalf("create topic %s: %v", name, err)
	}
	require.EventuallyWithT(k.t, func(c *assert.CollectT) {
		ends, err := k.adm.ListEndOffsets(ctx, name)
		if err == nil {
			err = ends.Error()
		}
		if assert.NoError(c, err, "list end offsets") {
			assert.Len(c, ends[name], int(partitions), "partitions listed")
		}
	}, 30*time.Second, 50*time.Millisecond, "topic %s to have leaders", name)
}

// value is the payload of the record at offset i of partition p: the sink
// checks each delivered record against it. Offsets equal production indexes
// because every test topic is fresh and produced to without transactions.
func value(p int32, i int64) string { return fmt.Sprintf("p%d-o%d", p, i) }

// produce appends n records to each partition, continuing from the
// partition's current end (from, per partition).
func (k *kafka) produce(topic string, partitions int32, n int, from map[int32]int64) {
	k.t.Helper()
	ctx := testCtx(k.t, 2*time.Minute)
	start := time.Now()
	const chunk = 20000
	recs := make([]*kgo.Record, 0, chunk)
	flush := func() {
		if err := k.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			k.t.Fatalf("produce to %s: %v", topic, err)
		}
		recs = recs[:0]
	}
	for i := 0; i < n; i++ {
		for p := int32(0); p < partitions; p++ {
			off := from[p] + int64(i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprint(i)), Value: []byte(value(p, off))})
			if len(recs) == chunk {
				flush()
			}
		}
	}
	if len(recs) > 0 {
		flush()
	}
	k.t.Logf("produced %d records (%d per partition) to %s in %v", n*int(partitions), n, topic, time.Since(start).Round(time.Millisecond))
}

// endOffsets returns each partition's log end offset.
func (k *kafka) endOffsets(topic string) map[int32]int64 {
	k.t.Helper()
	ctx := testCtx(k.t, 30*time.Second)
	ends, err := k.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		k.t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// committed returns the group's committed offset of each partition of
// topic; a partition with no commit is absent.
func (k *kafka) committed(ctx context.Context, group, topic string) (map[int32]int64, error) {
	resp, err := k.adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err != nil {
			return nil, o.Err
		}
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

func (k *kafka) mustCommitted(group, topic string) map[int32]int64 {
	k.t.Helper()
	c, err := k.committed(testCtx(k.t, 30*time.Second), group, topic)
	if err != nil {
		k.t.Fatalf("fetch offsets of group %s: %v", group, err)
	}
	return c
}

// waitCommitted waits until the group's commits equal want on every
// partition.
func (k *kafka) waitCommitted(group, topic string, want map[int32]int64, timeout time.Duration) {
	k.t.Helper()
	var last map[int32]int64 // the last commits fetched, for the failure message
	require.EventuallyWithT(k.t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := k.committed(ctx, group, topic)
		if !assert.NoErrorf(c, err, "fetch offsets (last commits seen %s)", fmtOffsets(last)) {
			return
		}
		last = got
		assert.Truef(c, equalOffsets(got, want), "commits %s", fmtOffsets(got))
	}, timeout, 100*time.Millisecond, "group %s: commits to reach %s within %v", group, fmtOffsets(want), timeout)
}

// groupType returns the group's type as ListGroups reports it ("classic" or
// "consumer"), or "" while the group does not exist.
func (k *kafka) groupType(group string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	groups, err := k.adm.ListGroups(ctx)
	if err != nil {
		return "", err
	}
	return groups[group].GroupType, nil
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if w, ok := b[p]; !ok || w != o {
			return false
		}
	}
	return true
}

func fmtOffsets(m map[int32]int64) string {
	ps := make([]int, 0, len(m))
	for p := range m {
		ps = append(ps, int(p))
	}
	sort.Ints(ps)
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", p, m[int32(p)])
	}
	b.WriteByte('}')
	return b.String()
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// ---------------------------------------------------------------------------
// Commit watcher.

// commitWatch polls the group's committed offsets while a test runs and
// checks, at every sample, the two properties a user relies on:
//
//   - a partition's commit never moves backwards;
//   - a commit never passes a record the sink has not acknowledged: at the
//     moment the commit is seen, every offset below it has been delivered
//     successfully at least once (the sink records a record before it
//     answers 200, so this check, made after the fetch, is sound).
type commitWatch struct {
	k      *kafka
	group  string
	topic  string
	sink   *sink
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	last       map[int32]int64
	history    map[int32][]int64 // distinct values in the order seen
	samples    int
	errs       int
	lastErr    error
	violations []string
	onSample   func(map[int32]int64)
	checked    bool
	// deadLettered, when set, returns the offsets of topic whose records
	// are in the dead-letter topic, read to its end after each sample's
	// fetch of the commits: they count as delivered.
	deadLettered func(ctx context.Context) (map[int32]map[int64]bool, error)
}

func (k *kafka) watchCommits(group, topic string, s *sink, every time.Duration) *commitWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &commitWatch{k: k, group: group, topic: topic, sink: s, cancel: cancel, done: make(chan struct{}),
		last: map[int32]int64{}, history: map[int32][]int64{}}
	go w.run(ctx, every)
	k.t.Cleanup(func() {
		w.stop()
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.checked {
			// The test ended before check (a t.Fatal): still say what was seen.
			w.report(k.t)
		}
	})
	return w
}

func (w *commitWatch) run(ctx context.Context, every time.Duration) {
	defer close(w.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		w.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w *commitWatch) sample(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	c, err := w.k.committed(fctx, w.group, w.topic)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		// Expected while the broker restarts, or before the group exists.
		if ctx.Err() == nil && !errors.Is(err, kerr.GroupIDNotFound) {
			w.errs++
			w.lastErr = err
		}
		return
	}
	var dead map[int32]map[int64]bool
	if w.deadLettered != nil {
		// Read after the commits: a commit seen here was made after every
		// dead-letter write it passes was acknowledged, so it is read.
		if dead, err = w.deadLettered(ctx); err != nil {
			if ctx.Err() == nil {
				w.errs++
				w.lastErr = err
			}
			return
		}
	}
	w.samples++
	for p, off := range c {
		if prev, ok := w.last[p]; ok && off < prev {
			w.violations = append(w.violations, fmt.Sprintf("partition %d: commit went backwards from %d to %d", p, prev, off))
		}
		if w.sink != nil {
			prefix := w.sink.prefix(p)
			for dead[p][prefix] || (dead[p] != nil && w.sink.count(p, prefix) > 0) {
				prefix++
			}
			if off > prefix {
				w.violations = append(w.violations, fmt.Sprintf("partition %d: commit %d passes offset %d, which reached neither the sink nor the dead-letter topic", p, off, prefix))
			}
		}
		if h := w.history[p]; len(h) == 0 || h[len(h)-1] != off {
			w.history[p] = append(h, off)
		}
		w.last[p] = off
	}
	if w.onSample != nil {
		w.onSample(c)
	}
}

// stop ends the polling; it is idempotent.
func (w *commitWatch) stop() {
	w.cancel()
	<-w.done
}

// check stops the watcher, takes one last sample and reports violations.
func (w *commitWatch) check(t *testing.T) {
	t.Helper()
	w.stop()
	w.sample(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = true
	if w.samples < 3 {
		t.Errorf("commit watch of %s took only %d samples: the check proves nothing", w.group, w.samples)
	}
	w.report(t)
}

// report logs the watch's figures and fails t on violations; w.mu is held.
func (w *commitWatch) report(t *testing.T) {
	t.Helper()
	changes := 0
	for _, h := range w.history {
		changes += len(h)
	}
	t.Logf("commit watch of %s: %d samples, %d distinct commits seen, %d fetch errors (last: %v)", w.group, w.samples, changes, w.errs, w.lastErr)
	for i, v := range w.violations {
		if i == 20 {
			t.Errorf("... and %d more violations", len(w.violations)-20)
			break
		}
		t.Errorf("group %s: %s", w.group, v)
	}
}
