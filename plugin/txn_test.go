package plugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// exactlyOnceStream runs kafka_watermark (exactly_once) -> processors ->
// kafka_watermark output bound to the group, until the test ends.
func exactlyOnceStream(t *testing.T, addr, src, dst, group, inputExtra, outputExtra string, processors ...string) *stream {
	t.Helper()
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetLoggerYAML("level: ${TEST_LOG_LEVEL:warn}"))
	require.NoError(t, b.AddInputYAML(inputYAML(addr, src, group, "  exactly_once: true\n  batch_max_records: 10\n"+inputExtra)))
	for _, p := range processors {
		require.NoError(t, b.AddProcessorYAML(p))
	}
	// reject_errored nacks a message a processor failed: its input batch
	// fails, maybe after other messages of it were written.
	require.NoError(t, b.AddOutputYAML(fmt.Sprintf(`
reject_errored:
  kafka_watermark:
    seed_brokers: [ %q ]
    topic: %s
    key: '${! @kafka_key }'
    max_in_flight: 8
    metadata: { include_prefixes: [ kafka_ ] }
    exactly_once: { consumer_group: %s }
%s`, addr, dst, group, outputExtra)))
	st, err := b.Build()
	require.NoError(t, err)
	s := &stream{st: st, done: make(chan error, 1)}
	go func() { s.done <- st.Run(context.Background()) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// committedOf returns the group's committed offsets of topic.
func committedOf(t *testing.T, addr, group, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	os, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return nil
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

// waitTxnCommitted waits until the group committed every partition of
// topic through ends.
func waitTxnCommitted(t *testing.T, addr, group, topic string, ends map[int32]int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := committedOf(t, addr, group, topic)
		for p, end := range ends {
			if got[p] < end {
				return false
			}
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "the group commits every record of %s (ends %v)", topic, ends)
}

// readCommitted reads topic as a read_committed consumer until a poll of
// 1s brings nothing, and returns its records in the order fetched.
func readCommitted(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if len(fs.Records()) == 0 {
			return out
		}
		out = append(out, fs.Records()...)
	}
}

// recordHeaders returns r's headers by key.
func recordHeaders(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, hd := range r.Headers {
		h[hd.Key] = string(hd.Value)
	}
	return h
}

// readCommittedOrigins counts each record of topic a read_committed reader
// finds by its origin (kafka_partition/kafka_offset headers).
func readCommittedOrigins(t *testing.T, addr, topic string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, r := range readCommitted(t, addr, topic) {
		h := recordHeaders(r)
		seen[h["kafka_partition"]+"/"+h["kafka_offset"]]++
	}
	return seen
}

// Exactly once through an out-of-order pipeline that splits every input
// batch into output batches written in parallel, with a processor that
// fails a message now and then (its batch is nacked, by reject_errored,
// after other parts of it were written): the open transaction aborts,
// every partition goes back to its last commit, and a read_committed
// reader of the output finds every source record exactly once. A tenth
// of the records the processors drop: they have no output and are
// committed.
func TestExactlyOnceSplitAndNacks(t *testing.T) {
	const (
		src, dst   = "eos-src", "eos-dst"
		partitions = 4
		n          = 600
	)
	c := newCluster(t, partitions, src, dst)
	c.produce(t, src, partitions, n)
	exactlyOnceStream(t, c.addr, src, dst, "eos", "  commit_period: 100ms\n", "",
		`split: { size: 3 }`,
		`mapping: |
  meta = @
  root = if random_int(max: 40) == 0 { throw("flaky processor") } else if @kafka_offset.number() % 10 == 9 { deleted() } else { content() }`)
	waitTxnCommitted(t, c.addr, "eos", src, c.endOffsets(t, src, partitions))
	seen := readCommittedOrigins(t, c.addr, dst)
	require.Len(t, seen, n-n/10, "every source record has its output, but those the processor dropped, which are committed all the same")
	for origin, times := range seen {
		require.Equal(t, 1, times, "record %s written exactly once to read_committed readers", origin)
		require.NotRegexp(t, `/\d*9$`, origin, "a dropped record has no output")
	}
}

// A record that always fails is dead-lettered after dead_letter.max_attempts
// deliveries, its attempts counted across the aborts its failures cause,
// and the dead letter is written in the transaction that commits past it:
// a read_committed reader finds it once in the dead-letter topic and every
// other record once in the output.
func TestExactlyOnceDeadLetter(t *testing.T) {
	const (
		src, dst, dlq = "eosd-src", "eosd-dst", "eosd-dlq"
		partitions    = 2
		n             = 200
		poisonP       = 1
		poisonO       = 37
	)
	c := newCluster(t, partitions, src, dst, dlq)
	c.produce(t, src, partitions, n)
	exactlyOnceStream(t, c.addr, src, dst, "eosd", fmt.Sprintf("  commit_period: 100ms\n  dead_letter: { topic: %s, max_attempts: 3 }\n", dlq), "",
		fmt.Sprintf(`mapping: |
  meta = @
  root = if @kafka_partition == %d && @kafka_offset == %d { throw("poison") } else { content() }`, poisonP, poisonO))
	waitTxnCommitted(t, c.addr, "eosd", src, c.endOffsets(t, src, partitions))
	seen := readCommittedOrigins(t, c.addr, dst)
	poison := fmt.Sprintf("%d/%d", poisonP, poisonO)
	require.Len(t, seen, n-1, "every source record but the poison has its output")
	require.NotContains(t, seen, poison)
	for origin, times := range seen {
		require.Equal(t, 1, times, "record %s written exactly once", origin)
	}
	letters := readCommitted(t, c.addr, dlq)
	require.Len(t, letters, 1, "the poison record is dead-lettered once, to read_committed readers")
	h := recordHeaders(letters[0])
	require.Equal(t, "3", h["dead_letter_attempts"], "after max_attempts deliveries, counted across aborts (headers %v)", h)
}

// A member joining and leaving mid-stream revokes partitions from the
// exactly-once input and gives them back: the transactions open at each
// revoke abort, the partitions kept go back to their last commit, and a
// read_committed reader still finds every record once. The other member
// consumes without committing anything, so what it read is read again.
func TestExactlyOnceRebalance(t *testing.T) {
	const (
		src, dst   = "eosr-src", "eosr-dst"
		partitions = 4
		n          = 800
	)
	c := newCluster(t, partitions, src, dst)
	c.produce(t, src, partitions, n)
	exactlyOnceStream(t, c.addr, src, dst, "eosr", "  commit_period: 100ms\n", "",
		`sleep: { duration: 2ms }`)
	// Once something is committed, a second member joins, takes some
	// partitions for a while, and leaves.
	require.Eventually(t, func() bool {
		var sum int64
		for _, o := range committedOf(t, c.addr, "eosr", src) {
			sum += o
		}
		return sum > 0
	}, 30*time.Second, 10*time.Millisecond)
	other, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumerGroup("eosr"), kgo.ConsumeTopics(src),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second))
	require.NoError(t, err)
	got := false
	deadline := time.Now().Add(15 * time.Second)
	for !got && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		got = len(other.PollFetches(ctx).Records()) > 0
		cancel()
	}
	other.Close()
	require.True(t, got, "the second member was assigned partitions and read from them")
	waitTxnCommitted(t, c.addr, "eosr", src, c.endOffsets(t, src, partitions))
	seen := readCommittedOrigins(t, c.addr, dst)
	require.Len(t, seen, n)
	for origin, times := range seen {
		require.Equal(t, 1, times, "record %s written exactly once", origin)
	}
}

// Stopping the stream and starting it again (a deploy) loses nothing and
// writes nothing twice: the last transaction commits the final plan at
// shutdown, or aborts and the next run reads it again.
func TestExactlyOnceRestart(t *testing.T) {
	const (
		src, dst   = "eoss-src", "eoss-dst"
		partitions = 3
		n          = 600
	)
	c := newCluster(t, partitions, src, dst)
	c.produce(t, src, partitions, n)
	for run := range 3 {
		st := exactlyOnceStream(t, c.addr, src, dst, "eoss", "  commit_period: 100ms\n", "", `sleep: { duration: 1ms }`)
		if run < 2 {
			before := committedOf(t, c.addr, "eoss", src)
			require.Eventually(t, func() bool {
				var a, b int64
				for p, o := range committedOf(t, c.addr, "eoss", src) {
					a += o
					b += before[p]
				}
				return a > b
			}, 30*time.Second, 10*time.Millisecond, "run %d commits something", run)
		}
		if run == 2 {
			waitTxnCommitted(t, c.addr, "eoss", src, c.endOffsets(t, src, partitions))
		}
		st.stop(t)
	}
	seen := readCommittedOrigins(t, c.addr, dst)
	require.Len(t, seen, n)
	for origin, times := range seen {
		require.Equal(t, 1, times, "record %s written exactly once", origin)
	}
}

// Under ordering: key, exactly once keeps each key's order: a
// read_committed reader of the output finds every key's records in the
// order of their source offsets, across the aborts a flaky processor
// causes (each goes back to the last commit, from where a key's records
// are handed out again in order).
func TestExactlyOnceKeyOrder(t *testing.T) {
	const (
		src, dst   = "eosk-src", "eosk-dst"
		partitions = 2
		n          = 600
		keys       = 7
	)
	c := newCluster(t, partitions, src, dst)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: src, Partition: int32(i % partitions), Key: fmt.Appendf(nil, "k%d", i%keys), Value: fmt.Append(nil, i)}
	}
	require.NoError(t, cl.ProduceSync(context.Background(), rs...).FirstErr())
	cl.Close()
	exactlyOnceStream(t, c.addr, src, dst, "eosk", "  commit_period: 100ms\n  ordering: key\n", "",
		`sleep: { duration: '${! random_int(max: 2) }ms' }`,
		`mapping: |
  meta = @
  root = if random_int(max: 60) == 0 { throw("flaky processor") } else { content() }`)
	waitTxnCommitted(t, c.addr, "eosk", src, c.endOffsets(t, src, partitions))

	last := map[string]int64{} // source partition and key -> last source offset seen
	recs := readCommitted(t, c.addr, dst)
	for _, r := range recs {
		h := recordHeaders(r)
		var off int64
		_, err := fmt.Sscan(h["kafka_offset"], &off)
		require.NoError(t, err)
		k := h["kafka_partition"] + "/" + string(r.Key)
		if prev, ok := last[k]; ok {
			require.Greater(t, off, prev, "key %s: source offset %d after %d in the output", k, off, prev)
		}
		last[k] = off
	}
	require.Len(t, recs, n, "every record once")
}

// Another producer with the same transactional id fences this member's
// (InitProducerId bumps the epoch): its next transaction fails for good.
// The input says so at ERROR, makes a new producer, which fences the other
// in turn, and goes on from the last commit: nothing is lost or written
// twice.
func TestExactlyOnceFencedProducerReconnects(t *testing.T) {
	const (
		src, dst   = "eosf-src", "eosf-dst"
		partitions = 2
		n          = 400
	)
	c := newCluster(t, partitions, src, dst)
	c.produce(t, src, partitions, n)
	exactlyOnceStream(t, c.addr, src, dst, "eosf", "  commit_period: 100ms\n  transactional_id: eosf-member\n", "",
		`sleep: { duration: 5ms }`)
	require.Eventually(t, func() bool {
		var sum int64
		for _, o := range committedOf(t, c.addr, "eosf", src) {
			sum += o
		}
		return sum > 0
	}, 30*time.Second, 10*time.Millisecond, "something committed")
	zombie, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.TransactionalID("eosf-member"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	_, _, err = zombie.ProducerID(ctx) // InitProducerId: the member's producer is fenced
	cancel()
	require.NoError(t, err)
	zombie.Close()
	waitTxnCommitted(t, c.addr, "eosf", src, c.endOffsets(t, src, partitions))
	seen := readCommittedOrigins(t, c.addr, dst)
	require.Len(t, seen, n)
	for origin, times := range seen {
		require.Equal(t, 1, times, "record %s written exactly once", origin)
	}
}
