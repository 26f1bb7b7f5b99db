package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// sharePipeline is a kafka_share process of the share tests: the input,
// a mapping that renders each record with its delivery attempt and fails
// the poison record (if any) on every delivery, and reject_errored around
// the http_client of the test's sink, so a failed record is nacked alone
// (a *service.BatchError) and its batch's other records go to the sink.
type sharePipeline struct {
	brokers  string
	topic    string
	group    string
	sinkURL  string
	instance string // client_id suffix and X-Instance header
	metrics  string // Benthos's HTTP server address, for /metrics
	input    string // extra kafka_share fields, as YAML at column 0
	poison   int64  // the offset the mapping fails every time; -1: none
}

func (c sharePipeline) yaml() string {
	var seeds []string
	for _, b := range strings.Split(c.brokers, ",") {
		seeds = append(seeds, fmt.Sprintf("%q", b))
	}
	return fmt.Sprintf(`http:
  enabled: true
  address: %s
metrics:
  prometheus: {}
logger:
  level: INFO
  format: logfmt
  add_timestamp: true
shutdown_timeout: 30s
input:
  kafka_share:
    seed_brokers: [ %s ]
    topics: [ %q ]
    share_group: %q
    client_id: %q
    start_offset: earliest
%s
pipeline:
  threads: 2
  processors:
    - mapping: |
        root = {"t": @kafka_topic, "p": @kafka_partition, "o": @kafka_offset, "v": content().string(), "a": @kafka_delivery_attempt.or(1)}
        root = if @kafka_offset == %d { throw("poison record") } else { root }
output:
  reject_errored:
    http_client:
      url: %q
      verb: POST
      headers:
        Content-Type: application/json
        X-Instance: %q
      retries: 0
      timeout: 20s
      max_in_flight: 8
    processors:
      - archive:
          format: json_array
`, c.metrics, strings.Join(seeds, ", "), c.topic, c.group, "wm-share-"+c.instance, indent(c.input, 4), c.poison, c.sinkURL, c.instance)
}

// setGroupConfig sets configs of a group (IncrementalAlterConfigs on the
// GROUP resource), e.g. a share group's share.record.lock.duration.ms.
func (k *kafka) setGroupConfig(group string, kv ...string) {
	k.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testCtx(k.t, 30*time.Second), k.cl)
	if err == nil && len(resp.Resources) == 1 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		if err != nil && resp.Resources[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Resources[0].ErrorMessage)
		}
	}
	if err != nil {
		k.t.Fatalf("set configs %v of group %s: %v", kv, group, err)
	}
}

// shareStart is the share-partition start offset of partition p of topic
// in group: every record below it is accepted or archived. ok is false
// while the group has not started the partition.
func (k *kafka) shareStart(ctx context.Context, group, topic string, p int32) (start int64, ok bool, err error) {
	ds, err := k.adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return 0, false, err
	}
	o, ok := ds[group].Offsets.Lookup(topic, p)
	return o.StartOffset, ok, nil
}

// waitSettled waits until every offset of [0, records) but skip reached
// the sink, and every process at addrs holds nothing
// (kafka_share_in_flight_records 0): what the pipelines will ever do.
func waitSettled(t *testing.T, s *shareSink, records, skip int64, addrs ...string) {
	t.Helper()
	var missing atomic.Int64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for o := range records {
			if o != skip && len(s.of(o)) == 0 {
				missing.Store(o)
				assert.Fail(c, "offset not delivered", "offset %d", o)
				return
			}
		}
		for _, a := range addrs {
			m, err := scrapeMetrics(testCtx(t, 5*time.Second), a)
			if assert.NoError(c, err) {
				v, n := m.Sum("kafka_share_in_flight_records")
				assert.True(c, n == 1 && v == 0, "%s holds %v records", a, v)
			}
		}
	}, 60*time.Second, 100*time.Millisecond, "every record delivered and none held (last missing: %d)", missing.Load())
}

// checkDrained proves, once the group's members are gone, that the broker
// holds no record of topic below its end for group: no record acquirable,
// none acquired. It produces a sentinel record and reads the group with a
// share consumer of its own until the sentinel comes: the broker hands out
// a share-partition's available records from its lowest offset, so a
// record released and not yet accepted or archived would come with it or
// before it. The share-partition start offset cannot tell: Kafka 4.3.1
// reports it (DescribeShareGroupOffsets) below records already accepted.
func (k *kafka) checkDrained(group, topic string) {
	k.t.Helper()
	end := k.endOffsets(topic)[0]
	ctx := testCtx(k.t, 60*time.Second)
	require.NoError(k.t, k.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("sentinel")}).FirstErr())
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(k.env.Brokers, ",")...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	require.NoError(k.t, err)
	defer cl.Close()
	var others []int64
	for {
		fs := cl.PollFetches(ctx)
		require.NoError(k.t, ctx.Err(), "the sentinel at offset %d never came", end)
		found := false
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckAccept)
			if r.Offset == end {
				found = true
			} else {
				others = append(others, r.Offset)
			}
		})
		if found {
			break
		}
	}
	require.NoError(k.t, cl.FlushAcks(ctx))
	require.Empty(k.t, others, "records of %s still acquirable by group %s after its members left", topic, group)
}

// delivery is one record a share sink accepted.
type delivery struct {
	attempt  int
	instance string
	at       time.Time
}

// shareSink is the HTTP sink of the share tests: a testkit.Sink that
// records, besides its ledger, every accepted delivery of each offset of
// partition 0 with its attempt and process; fails requests failOnce picks;
// and holds the requests a gate picks (each gate opens once), so that one
// test can hold a slow batch and a killed process's requests apart.
type shareSink struct {
	*testkit.Sink

	mu sync.Mutex
	// deliveries holds each offset's accepted deliveries, in order.
	deliveries map[int64][]delivery
	// failed holds the offsets of requests answered 500 on purpose.
	failed map[int64]bool
	// failOnce decides, under the sink's lock, whether to fail a request.
	failOnce func(recs []rec) bool
	// pick returns the gate to hold a request at, or nil.
	pick func(b testkit.Batch) *testkit.Gate
}

func newShareSink(t *testing.T, topic string, minDelay, maxDelay time.Duration) *shareSink {
	s := &shareSink{deliveries: map[int64][]delivery{}, failed: map[int64]bool{}}
	ts, err := testkit.NewSink(testkit.SinkOptions{Topic: topic, Partitions: 1, Want: value,
		MinDelay: minDelay, MaxDelay: maxDelay, Hold: s.hold, Judge: s.judge})
	require.NoError(t, err)
	s.Sink = ts
	t.Cleanup(func() {
		s.Close()
		for i, b := range s.Snapshot().Bad {
			if i == 10 {
				t.Errorf("sink: ... and more bad records")
				break
			}
			t.Errorf("sink: %s", b)
		}
	})
	return s
}

func (s *shareSink) hold(ctx context.Context, b testkit.Batch) testkit.Answer {
	s.mu.Lock()
	pick := s.pick
	s.mu.Unlock()
	var g *testkit.Gate
	if pick != nil {
		g = pick(b)
	}
	if g == nil || g.Wait(ctx, len(b.Records)) {
		return testkit.Accept
	}
	return testkit.Unavailable
}

func (s *shareSink) judge(b testkit.Batch) testkit.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failOnce != nil && s.failOnce(b.Records) {
		for _, r := range b.Records {
			s.failed[r.O] = true
		}
		return testkit.Fail
	}
	now := time.Now()
	for _, r := range b.Records {
		s.deliveries[r.O] = append(s.deliveries[r.O], delivery{attempt: r.A, instance: b.Instance, at: now})
	}
	return testkit.Accept
}

// setPick and setFailOnce set the hooks (nil: none).
func (s *shareSink) setPick(f func(b testkit.Batch) *testkit.Gate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pick = f
}

func (s *shareSink) setFailOnce(f func(recs []rec) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failOnce = f
}

// of returns offset o's accepted deliveries.
func (s *shareSink) of(o int64) []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.deliveries[o]...)
}

// wasFailed tells whether the sink failed a request holding offset o.
func (s *shareSink) wasFailed(o int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed[o]
}

// failedOffsets is the offsets in requests failed on purpose.
func (s *shareSink) failedOffsets() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int64, 0, len(s.failed))
	for o := range s.failed {
		out = append(out, o)
	}
	return out
}

// instanceRecords is how many records the sink accepted from a process.
func (s *shareSink) instanceRecords(name string) (n int64) {
	s.View(func(l *testkit.Ledger) { n = l.ByInstance[name] })
	return n
}

// failedCount is how many offsets were in requests failed on purpose.
func (s *shareSink) failedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failed)
}

// shareWatch samples a share group's start offset of partition 0 while a
// test runs and checks that it never passes a record that reached neither
// the sink nor (letters) the dead-letter topic, and never goes backwards:
// the outside view of "a record is accepted only once the sink took it".
type shareWatch struct {
	k       *kafka
	group   string
	topic   string
	sink    *shareSink
	letters func(ctx context.Context) (map[int64]bool, error) // offsets dead-lettered; nil: none
	cancel  context.CancelFunc
	done    chan struct{}

	mu         sync.Mutex
	last       int64
	samples    int
	moves      int
	violations []string
}

func (k *kafka) watchShare(group, topic string, s *shareSink, letters func(ctx context.Context) (map[int64]bool, error)) *shareWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &shareWatch{k: k, group: group, topic: topic, sink: s, letters: letters, cancel: cancel, done: make(chan struct{}), last: -1}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			w.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	k.t.Cleanup(w.stop)
	return w
}

func (w *shareWatch) sample(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start, ok, err := w.k.shareStart(sctx, w.group, w.topic, 0)
	if err != nil || !ok {
		return
	}
	var dead map[int64]bool
	if w.letters != nil {
		// Read after the start offset: a record it passes was dead-lettered
		// before, so it is read here.
		if dead, err = w.letters(sctx); err != nil {
			return
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if start < w.last {
		w.violations = append(w.violations, fmt.Sprintf("start offset went backwards from %d to %d", w.last, start))
	}
	if start > w.last {
		w.moves++
		for o := max(w.last, 0); o < start; o++ {
			if !dead[o] && w.sink.count(o) == 0 {
				w.violations = append(w.violations, fmt.Sprintf("start offset %d passes offset %d, which reached neither the sink nor the dead-letter topic", start, o))
				break
			}
		}
		w.last = start
	}
}

func (s *shareSink) count(o int64) (n int) {
	s.View(func(l *testkit.Ledger) { n = l.Count(0, o) })
	return n
}

func (w *shareWatch) stop() {
	w.cancel()
	<-w.done
}

// check stops the watch, takes a last sample and fails t on violations.
func (w *shareWatch) check(t *testing.T) {
	t.Helper()
	w.stop()
	w.sample(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("share watch of %s: %d samples, the start offset moved %d times, to %d", w.group, w.samples, w.moves, w.last)
	if w.samples < 3 {
		t.Errorf("share watch of %s took only %d samples: the check proves nothing", w.group, w.samples)
	}
	for _, v := range w.violations {
		t.Errorf("group %s: %s", w.group, v)
	}
}

// shareCounts is one process's kafka_share metrics.
type shareCounts struct {
	accepted, released, rejected, deadLettered int64
	renewals, lockExpired, ackErrors           int64
}

func scrapeShare(t *testing.T, addr string) shareCounts {
	t.Helper()
	m := mustScrape(t, addr)
	var c shareCounts
	for _, s := range m.Find("kafka_share_records_total") {
		n := int64(s.Value)
		switch s.Labels["verdict"] {
		case "accepted":
			c.accepted += n
		case "released":
			c.released += n
		case "rejected":
			c.rejected += n
		case "dead_lettered":
			c.deadLettered += n
		}
	}
	sum := func(name string) int64 { v, _ := m.Sum(name); return int64(v) }
	c.renewals = sum("kafka_share_lock_renewals_total")
	c.lockExpired = sum("kafka_share_lock_expired_total")
	c.ackErrors = sum("kafka_share_ack_errors_total")
	return c
}

func (c shareCounts) add(o shareCounts) shareCounts {
	return shareCounts{c.accepted + o.accepted, c.released + o.released, c.rejected + o.rejected, c.deadLettered + o.deadLettered,
		c.renewals + o.renewals, c.lockExpired + o.lockExpired, c.ackErrors + o.ackErrors}
}
