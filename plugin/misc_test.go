package plugin

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// directInput builds an Input from the test config (inputYAML's fields,
// without the kafka_watermark key), without a stream, for tests that drive
// ReadBatch and acks by hand.
func directInput(t *testing.T, addr, topic, group, extra string) *Input {
	t.Helper()
	pc, err := ConfigSpec().ParseYAML(inputYAML(addr, topic, group, extra)[len("\nkafka_watermark:\n"):], nil)
	require.NoError(t, err)
	conf, err := parseConfig(pc)
	require.NoError(t, err)
	return newInput(conf, service.MockResources())
}

// connectedInput is directInput, connected, with a context for the test.
func connectedInput(t *testing.T, addr, topic, group, extra string) (*Input, context.Context) {
	t.Helper()
	in := directInput(t, addr, topic, group, extra)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	require.NoError(t, in.Connect(ctx))
	return in, ctx
}

func TestDuplicateAckIsIgnored(t *testing.T) {
	const topic = "dup"
	c := newCluster(t, 1, topic)
	c.produce(t, topic, 1, 30)
	in, ctx := connectedInput(t, c.addr, topic, "dup", "  batch_max_records: 10\n")
	var acks []service.AckFunc
	var got int
	for got < 30 {
		b, ack, err := in.ReadBatch(ctx)
		require.NoError(t, err)
		got += len(b)
		acks = append(acks, ack)
	}
	// Ack in reverse; every ack is then repeated, the repeat with an error
	// that would stall the partition if it were applied.
	for i := len(acks) - 1; i >= 0; i-- {
		require.NoError(t, acks[i](ctx, nil))
		require.NoError(t, acks[i](ctx, errors.New("repeat must be ignored")))
	}
	require.Eventually(t, func() bool { return c.lastCommit("dup", topic, 0) == 30 }, 10*time.Second, 10*time.Millisecond, "commit to the end")
	require.NoError(t, in.Close(ctx))
}

func TestTopicCreatedAfterStart(t *testing.T) {
	const topic = "late-topic"
	c := newCluster(t, 1, "other")
	s := newSink()
	c.sink = s
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "late", "  metadata_max_age: 200ms\n"), 1)
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer adm.Close()
	_, err = kadm.NewClient(adm).CreateTopic(context.Background(), 2, 1, nil, topic)
	require.NoError(t, err)
	c.learnTopics(t)
	c.produce(t, topic, 2, 100)
	ends := c.endOffsets(t, topic, 2)
	waitCommitted(t, c, "late", topic, ends)
	st.stop(t)
	distinct, _ := s.counts()
	require.Equal(t, 100, distinct)
}

func TestUnreachableBrokersAtStart(t *testing.T) {
	// A port that is certainly closed: bind, note it, release it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	in := directInput(t, addr, "t", "g", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = in.Connect(ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot reach seed brokers "+addr)
	_, _, err = in.ReadBatch(ctx)
	require.ErrorIs(t, err, service.ErrNotConnected, "Benthos reconnects on ErrNotConnected")

	// Benthos retries Connect: once a broker listens there, records flow.
	s := newSink()
	st := startStream(t, testEnv(t, s, 4), inputYAML(addr, "t", "g", ""), 1)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer kc.Close()
	c := &cluster{Cluster: kc, addr: addr}
	c.produce(t, "t", 1, 10)
	require.Eventually(t, func() bool { d, _ := s.counts(); return d == 10 }, 30*time.Second, 10*time.Millisecond, "records after the broker came up")
	st.stop(t)
}

// Stopping a stream while sinks are still acknowledging, again and again:
// no race, no panic, no commit past an unacknowledged batch, nothing lost.
func TestShutdownRacingAcks(t *testing.T) {
	const (
		topic      = "race"
		partitions = 4
		n          = 4000
	)
	c, s := newAuditedCluster(t, partitions, topic, n)
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(7, 7))
	s.decide = func([]rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		if r.IntN(20) == 0 {
			return 0, errors.New("random nack")
		}
		return time.Duration(r.IntN(2000)) * time.Microsecond, nil
	}
	env := testEnv(t, s, 16)
	for range 3 {
		s.mu.Lock()
		before := s.batches
		s.mu.Unlock()
		st := startStream(t, env, inputYAML(c.addr, topic, "race", "  batch_max_records: 20\n"), 4)
		require.Eventually(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.batches > before+10 }, 10*time.Second, 10*time.Millisecond, "some progress")
		st.stop(t)
	}
	s.decide = nil
	st := startStream(t, env, inputYAML(c.addr, topic, "race", ""), 2)
	waitCommitted(t, c, "race", topic, c.endOffsets(t, topic, partitions))
	st.stop(t)
	distinct, _ := s.counts()
	require.Equal(t, n, distinct)
}

func TestStartOffsetCommittedSkipsUncommittedPartitions(t *testing.T) {
	const topic = "sc"
	c := newCluster(t, 2, topic)
	c.produce(t, topic, 2, 40) // 20 per partition
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer adm.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	_, err = kadm.NewClient(adm).CommitOffsets(context.Background(), "sc", offs)
	require.NoError(t, err)

	s := newSink()
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "sc", "  start_offset: committed\n"), 1)
	require.Eventually(t, func() bool { return c.lastCommit("sc", topic, 0) == 20 }, 20*time.Second, 10*time.Millisecond, "partition 0 from its commit")
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.delivered, 15, "offsets 5..19 of partition 0 only")
	for off := range int64(20) {
		require.Zero(t, s.delivered[key3(topic, 1, off)], "uncommitted partition 1 is not consumed")
	}
}

// Benthos cancels ReadBatch's context at shutdown and drops whatever it
// returns. A batch the owner answered with just as the context ended goes
// back to the owner: it is handed out again first, and Close does not wait
// for it as if it were in the pipeline.
func TestWithdrawnReadGivesTheBatchBack(t *testing.T) {
	const topic = "withdraw"
	c := newCluster(t, 1, topic)
	c.produce(t, topic, 1, 10)
	in, ctx := connectedInput(t, c.addr, topic, "wd", "  batch_max_records: 5\n  drain_timeout: 60s\n  rebalance_timeout: 90s\n")

	// A read whose context has ended by the time the engine answers it, as
	// a cancelled ReadBatch at shutdown: the batch goes back.
	_, _, err := in.ReadBatch(answeredThenCancelled{})
	require.ErrorIs(t, err, context.Canceled)

	b, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	off, _ := b[0].MetaGetMut("kafka_offset")
	require.Equal(t, 0, off, "the given-back batch goes out first")
	require.NoError(t, ack(ctx, nil))
	require.Eventually(t, func() bool { return c.lastCommit("wd", topic, 0) == 5 }, 10*time.Second, 10*time.Millisecond, "commit through the first batch")

	// Give the second batch back too, then close: nothing is in the
	// pipeline, so Close must not sit out the 60s drain_timeout.
	_, _, err = in.ReadBatch(answeredThenCancelled{})
	require.ErrorIs(t, err, context.Canceled)
	start := time.Now()
	require.NoError(t, in.Close(context.Background()))
	require.Less(t, time.Since(start), 30*time.Second, "Close waited for a batch that was never handed out")
	require.Equal(t, int64(5), c.lastCommit("wd", topic, 0), "nothing past the given-back batch is committed")
}

// Benthos closes an input with a context that has no deadline. With a
// coordinator that never answers, the final commit cannot succeed: Close
// must still return (bounded by drain_timeout), say why, and a second Close
// is a no-op.
func TestCloseIsBoundedWhenTheBrokerIsGone(t *testing.T) {
	const topic = "gone"
	c := newCluster(t, 1, topic)
	c.produce(t, topic, 1, 10)
	in, ctx := connectedInput(t, c.addr, topic, "gone", "  commit_period: 1h\n  drain_timeout: 1s\n")
	_, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	require.NoError(t, ack(ctx, nil))
	// The coordinator stops answering commits: the connection stays up,
	// the request never completes.
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true
	})

	done := make(chan error, 1)
	go func() { done <- in.Close(context.Background()) }()
	select {
	case err := <-done:
		require.Error(t, err, "the final commit could not reach the broker")
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung on a commit the broker never answers")
	}
	require.NoError(t, in.Close(context.Background()), "a second Close is a no-op")
	_, _, err = in.ReadBatch(ctx)
	require.ErrorIs(t, err, service.ErrEndOfInput)
}

func TestRegexpTopics(t *testing.T) {
	c := newCluster(t, 2, "rx-a", "rx-b", "other")
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		c.produce(t, topic, 2, 20)
	}
	s := newSink()
	c.sink = s
	st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, "^rx-", "rx", "  regexp_topics: true\n"), 1)
	for _, topic := range []string{"rx-a", "rx-b"} {
		waitCommitted(t, c, "rx", topic, c.endOffsets(t, topic, 2))
	}
	st.stop(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.delivered, 40, "both matching topics, nothing else")
	for k := range s.delivered {
		require.True(t, strings.HasPrefix(k, "rx-"), "delivered %s", k)
	}
}

// answeredThenCancelled is a context that never signals Done but says it
// was cancelled: a ReadBatch with it waits for the engine's answer, then
// finds its context ended, as one whose context ends while the answer is on
// its way.
type answeredThenCancelled struct{ context.Context }

func (answeredThenCancelled) Done() <-chan struct{}                   { return nil }
func (answeredThenCancelled) Err() error                              { return context.Canceled }
func (answeredThenCancelled) Value(any) any                           { return nil }
func (answeredThenCancelled) Deadline() (deadline time.Time, ok bool) { return time.Time{}, false }
