package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// cluster is an in-process kfake cluster whose every OffsetCommit is audited
// against a sink's record of successful acknowledgements.
type cluster struct {
	*kfake.Cluster
	addr string

	mu      sync.Mutex
	commits map[string][]int64  // "group/topic/partition" -> offsets in arrival order
	metas   map[string]string   // "group/topic/partition" -> the last commit's metadata
	sink    *sink               // what the audit checks commits against
	errs    []string            // audit failures
	names   map[[16]byte]string // topic ID -> name: OffsetCommit v10+ names topics by ID
}

// newCluster starts a cluster with the given topics. Every commit the
// cluster receives is checked, at that moment, to carry delivered ranges
// that the sink acknowledged successfully, every offset of them, and to be
// (1) at most the first
// offset of the partition that the sink has not acknowledged successfully,
// and (2) not below the previous commit for the partition.
func newCluster(t *testing.T, partitions int32, topics ...string) *cluster {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	require.NoError(t, err)
	c := &cluster{Cluster: kc, addr: kc.ListenAddrs()[0], commits: map[string][]int64{}, metas: map[string]string{}, names: map[[16]byte]string{}}
	c.learnTopics(t)
	kc.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.audit(r.(*kmsg.OffsetCommitRequest))
		return nil, nil, false
	})
	t.Cleanup(func() {
		kc.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, e := range c.errs {
			t.Error(e)
		}
	})
	return c
}

func (c *cluster) audit(req *kmsg.OffsetCommitRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range req.Topics {
		topic := t.Topic
		if topic == "" {
			topic = c.names[t.TopicID]
		}
		for _, p := range t.Partitions {
			key := fmt.Sprintf("%s/%s/%d", req.Group, topic, p.Partition)
			if prev := c.commits[key]; len(prev) > 0 && p.Offset < prev[len(prev)-1] {
				c.errs = append(c.errs, fmt.Sprintf("commit %s = %d went backwards from %d", key, p.Offset, prev[len(prev)-1]))
			}
			var meta string
			if p.Metadata != nil {
				meta = *p.Metadata
			}
			if c.sink != nil {
				if first := c.sink.firstUnacked(topic, p.Partition); p.Offset > first {
					c.errs = append(c.errs, fmt.Sprintf("commit %s = %d passes offset %d, not acknowledged successfully", key, p.Offset, first))
				}
				if m, err := commitmeta.Decode(meta); err == nil {
					if off, ok := c.sink.firstUnackedIn(topic, p.Partition, m.Delivered); ok {
						c.errs = append(c.errs, fmt.Sprintf("commit %s = %d with metadata %q: offset %d is in a delivered range but was not acknowledged successfully", key, p.Offset, meta, off))
					}
				}
			}
			c.commits[key] = append(c.commits[key], p.Offset)
			c.metas[key] = meta
		}
	}
}

// newAuditedCluster starts a cluster with one topic holding n records and
// a sink whose acks the audit checks every commit against.
func newAuditedCluster(t *testing.T, partitions int32, topic string, n int) (*cluster, *sink) {
	t.Helper()
	c := newCluster(t, partitions, topic)
	c.produce(t, topic, partitions, n)
	s := newSink()
	c.sink = s
	return c, s
}

// learnTopics records the ID of every topic, for the audit. Call it again
// after creating a topic.
func (c *cluster) learnTopics(t *testing.T) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer cl.Close()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	require.NoError(t, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range resp.Topics {
		if tp.Topic != nil {
			c.names[tp.TopicID] = *tp.Topic
		}
	}
}

// lastMeta returns the metadata of the last commit of a partition.
func (c *cluster) lastMeta(group, topic string, p int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metas[fmt.Sprintf("%s/%s/%d", group, topic, p)]
}

// lastCommit returns the last offset committed for a partition, or -1.
func (c *cluster) lastCommit(group, topic string, p int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.commits[fmt.Sprintf("%s/%s/%d", group, topic, p)]
	if len(cs) == 0 {
		return -1
	}
	return cs[len(cs)-1]
}

// produce writes n records round robin over the topic's partitions, with
// values "<partition>-<i>", and waits for them.
func (c *cluster) produce(t *testing.T, topic string, partitions int32, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		p := int32(i) % partitions
		rs[i] = &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%d-%d", p, i))}
	}
	require.NoError(t, cl.ProduceSync(context.Background(), rs...).FirstErr())
}

// endOffsets returns each partition's log end offset.
func (c *cluster) endOffsets(t *testing.T, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = rp.Offset
		}
	}
	return out
}

// sink is a test output: it records every delivery, decides per batch
// whether to fail, and records successful acks before returning, so the
// audit always sees an ack before the commit it allows.
type sink struct {
	mu        sync.Mutex
	delivered map[string]int            // "topic/partition/offset" -> deliveries
	acked     map[string]map[int64]bool // "topic/partition" -> offsets acked ok
	contig    map[string]int64          // "topic/partition" -> first offset not acked ok
	batches   int                       // batches written
	decide    func(b []rec) (time.Duration, error)
	onWrite   func(b []rec)
	gauges    *memmetrics.Store // metrics of the stream(s) writing here
}

type rec struct {
	topic     string
	partition int32
	offset    int64
	value     string
	attempt   int  // kafka_delivery_attempt, 1 when absent
	attemptOK bool // kafka_delivery_attempt was set
}

func newSink() *sink {
	return &sink{delivered: map[string]int{}, acked: map[string]map[int64]bool{}, contig: map[string]int64{}, gauges: memmetrics.New()}
}

func (s *sink) firstUnacked(topic string, p int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.contig[fmt.Sprintf("%s/%d", topic, p)]
}

// preAck records offsets below upTo as acknowledged: delivered before the
// test's sink existed.
func (s *sink) preAck(topic string, p int32, upTo int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("%s/%d", topic, p)
	if s.acked[key] == nil {
		s.acked[key] = map[int64]bool{}
	}
	for off := range upTo {
		s.acked[key][off] = true
	}
	s.contig[key] = upTo
}

// firstUnackedIn returns the first offset in ranges that the sink has not
// acknowledged successfully, if any.
func (s *sink) firstUnackedIn(topic string, p int32, ranges []commitmeta.Range) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	acked := s.acked[fmt.Sprintf("%s/%d", topic, p)]
	for _, r := range ranges {
		for off := r.From; off < r.To; off++ {
			if !acked[off] {
				return off, true
			}
		}
	}
	return 0, false
}

func (s *sink) write(ctx context.Context, b service.MessageBatch, decide func([]rec) (time.Duration, error)) error {
	recs := make([]rec, len(b))
	for i, m := range b {
		tv, _ := m.MetaGetMut("kafka_topic")
		pv, _ := m.MetaGetMut("kafka_partition")
		ov, _ := m.MetaGetMut("kafka_offset")
		v, _ := m.AsBytes()
		attempt := 1 // absent: the first delivery
		av, set := m.MetaGetMut("kafka_delivery_attempt")
		if set {
			attempt = av.(int)
		}
		recs[i] = rec{topic: tv.(string), partition: int32(pv.(int)), offset: int64(ov.(int)), value: string(v), attempt: attempt, attemptOK: set}
	}
	s.mu.Lock()
	s.batches++
	for _, r := range recs {
		s.delivered[fmt.Sprintf("%s/%d/%d", r.topic, r.partition, r.offset)]++
	}
	onWrite := s.onWrite
	if decide == nil {
		decide = s.decide
	}
	s.mu.Unlock()
	if onWrite != nil {
		onWrite(recs)
	}
	var delay time.Duration
	var err error
	if decide != nil {
		delay, err = decide(recs)
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var partial partialFailure
	if errors.As(err, &partial) {
		// Some messages failed: the others count as acknowledged, and the
		// output returns a batch error that names the failed ones.
		berr := service.NewBatchError(b, err)
		failed := map[int]bool{}
		for _, i := range partial {
			berr = berr.Failed(i, err)
			failed[i] = true
		}
		var ok []rec
		for i, r := range recs {
			if !failed[i] {
				ok = append(ok, r)
			}
		}
		s.ack(ok)
		return berr
	}
	if err != nil {
		return err
	}
	s.ack(recs)
	return nil
}

// partialFailure, returned by a decide function, fails only the messages at
// these indices of the batch.
type partialFailure []int

func (p partialFailure) Error() string { return fmt.Sprintf("messages %v failed", []int(p)) }

// ack records successful acknowledgements.
func (s *sink) ack(recs []rec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		key := fmt.Sprintf("%s/%d", r.topic, r.partition)
		if s.acked[key] == nil {
			s.acked[key] = map[int64]bool{}
		}
		s.acked[key][r.offset] = true
		for s.acked[key][s.contig[key]] {
			s.contig[key]++
		}
	}
}

// counts returns how many distinct records were delivered and how many
// deliveries were repeats.
func (s *sink) counts() (distinct, dups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.delivered {
		distinct++
		dups += n - 1
	}
	return distinct, dups
}

// sinkOutput writes to a sink, with its own decide function when several
// members share one sink (one ledger of acks for the audit).
type sinkOutput struct {
	s      *sink
	decide func([]rec) (time.Duration, error)
}

func (o sinkOutput) Connect(context.Context) error { return nil }
func (o sinkOutput) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	return o.s.write(ctx, b, o.decide)
}
func (o sinkOutput) Close(context.Context) error { return nil }

// testEnv returns an environment with the input and a test_sink output that
// writes to s with up to maxInFlight batches in flight.
func testEnv(t *testing.T, s *sink, maxInFlight int) *service.Environment {
	return testEnvWith(t, s, maxInFlight, nil, s.gauges)
}

// testEnvWith is testEnv with a member-specific decide function and gauge
// store.
func testEnvWith(t *testing.T, s *sink, maxInFlight int, decide func([]rec) (time.Duration, error), g *memmetrics.Store) *service.Environment {
	t.Helper()
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	require.NoError(t, env.RegisterBatchOutput("test_sink", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return sinkOutput{s: s, decide: decide}, service.BatchPolicy{}, maxInFlight, nil
		}))
	require.NoError(t, g.Register(env, "test_metrics"))
	return env
}

// stream runs one pipeline from kafka_watermark into test_sink until stop is
// called; stop returns once the stream has shut down.
type stream struct {
	st   *service.Stream
	done chan error
}

func startStream(t *testing.T, env *service.Environment, inputYAML string, threads int, processors ...string) *stream {
	t.Helper()
	b := env.NewStreamBuilder()
	require.NoError(t, b.SetLoggerYAML("level: ${TEST_LOG_LEVEL:warn}"))
	require.NoError(t, b.AddInputYAML(inputYAML))
	for _, p := range processors {
		require.NoError(t, b.AddProcessorYAML(p))
	}
	b.SetThreads(threads)
	require.NoError(t, b.AddOutputYAML("test_sink: {}"))
	require.NoError(t, b.SetMetricsYAML("test_metrics: {}"))
	st, err := b.Build()
	require.NoError(t, err)
	s := &stream{st: st, done: make(chan error, 1)}
	go func() { s.done <- st.Run(context.Background()) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *stream) stop(t *testing.T) {
	if s.st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.st.Stop(ctx))
	<-s.done
	s.st = nil
}

// inputYAML is a kafka_watermark config for tests, with fast commits.
func inputYAML(addr, topic, group string, extra string) string {
	return fmt.Sprintf(`
kafka_watermark:
  seed_brokers: [ %q ]
  topics: [ %q ]
  consumer_group: %q
  commit_period: 50ms
  fetch_max_wait: 100ms
  session_timeout: 6s
  heartbeat_interval: 200ms
  rebalance_timeout: 5s
  drain_timeout: 2s
%s`, addr, topic, group, extra)
}

func key3(topic string, p int32, off int64) string { return fmt.Sprintf("%s/%d/%d", topic, p, off) }

// gate holds sink writes until it opens. It opens at most once, and at the
// test's cleanup at the latest, so a failed test never leaves a stream
// blocked in its sink.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
func (g *gate) wait() { <-g.ch }
