package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	// Components every stream needs (the none buffer among them), which the
	// binary imports anyway.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// demoResult is what the demo observed, for the summary and for tests.
type demoResult struct {
	Topic, Group string
	Seed         uint64
	Produced     int
	RecordSize   int
	Expected     int64 // records between the group's start and the log end
	Distinct     int
	Duplicates   int
	Replays      int64           // replays in place, every partition's
	Parts        []partitionView // final, after the pipeline stopped
	Failures     []failedBatch
	Settled      bool
	StopReason   string
	Elapsed      time.Duration
	Began        time.Time // what the story's times are measured from
	MaxPending   int
	MaxInFlight  int
	MaxLatency   time.Duration
	FailFor      time.Duration
	ReplayAfter  time.Duration // the input's stall_replay_after; 0: never
	Story        *story        // what the demo saw on the way; Story.final is status after the stop

	// With --dead-letter-after: the input's max_attempts, its topic, and the
	// records read back from it after the stop (DeadLetterErr when that
	// read failed, in whole or in part).
	DeadLetterAfter int
	DeadLetterTopic string
	DeadLetters     []deadLetterSeen
	DeadLetterErr   error

	// The input's ordering, and with records of few keys (KeySpace > 0)
	// the sink's check of their order, every partition's.
	Ordering string
	KeySpace int
	KeyOrder keyOrderSeen
}

// runDemo runs the demo and prints its progress and summary to w, as a table
// redrawn in place when live (w is a terminal), else as periodic lines. It
// returns an error only when the demo could not run; a stall is its point.
func runDemo(ctx context.Context, o demoOptions, w io.Writer, live bool) (*demoResult, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	rng := rand.New(rand.NewPCG(o.Seed, 0x7761746572)) // a demo: reproducible, not secure

	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cluster, err := startCluster(setupCtx, o.Brokers)
	if err != nil {
		return nil, err
	}
	defer cluster.close()
	cluster.log = w
	head := fmt.Sprintf("topic %s, group %s, brokers %s", o.Topic, o.Group, strings.Join(cluster.brokers, ","))
	if !live {
		writeHeading(w, o, head)
	}

	ranges, err := prepareTopic(setupCtx, cluster, o, rng, w)
	if err != nil {
		return nil, err
	}
	var dlqFrom map[int32]int64
	if o.deadLetters() {
		if dlqFrom, err = cluster.prepareDeadLetterTopic(setupCtx, o.deadLetterTopic()); err != nil {
			return nil, err
		}
	}
	sink := newDemoSink(o.Topic, ranges, o.FailFor, rng)
	sink.poison, sink.keyOrdered = o.deadLetters(), o.keyOrdered()
	if o.keySpace() > 0 {
		sink.trackKeys()
	}
	sink.planFailures(o.FailBatches, o.BatchMaxRecords)
	gauges := memmetrics.New()
	st, err := buildPipeline(o, cluster.brokers, sink, gauges)
	if err != nil {
		return nil, err
	}
	runDone := make(chan error, 1)
	go func() { runDone <- st.Run(context.Background()) }()

	obs := observer{cluster: cluster, o: o, ranges: ranges, sink: sink, gauges: gauges}
	if live {
		// A line between two redraws of the table would leave it garbled:
		// the live view says nothing of its reads' retries.
		cluster.log = nil
	}
	seen, runErr := watch(ctx, obs, o, w, live, head, began, runDone)

	stopCtx, stopCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer stopCancel()
	if runErr == nil {
		if err := st.Stop(stopCtx); err != nil {
			return nil, fmt.Errorf("stopping the pipeline: %w", err)
		}
		runErr = <-runDone
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return nil, fmt.Errorf("the pipeline stopped: %w", runErr)
	}

	// The input commits its final watermarks on close: read them now, and
	// ask status what a probe would say of the stopped pipeline. The
	// input's gauges were zeroed on close, so its state is the last one
	// seen live.
	final, err := obs.observe(stopCtx)
	if err != nil {
		return nil, err
	}
	last := seen.Last
	for i := range final {
		if i < len(last) && last[i].Partition == final[i].Partition {
			final[i].Pending, final[i].Stalled, final[i].Paused = last[i].Pending, last[i].Stalled, last[i].Paused
			final[i].Held = last[i].Held
			final[i].DeadLettered = max(final[i].DeadLettered, last[i].DeadLettered)
		}
	}
	seen.Story.final = obs.askStatus(stopCtx, time.Since(began))
	r := &demoResult{
		Topic: o.Topic, Group: o.Group, Seed: o.Seed, Produced: o.Records, RecordSize: o.RecordSize,
		Parts: final, Settled: seen.Settled, StopReason: seen.Reason, Elapsed: time.Since(began), Began: began,
		MaxPending: o.MaxPending, MaxInFlight: o.MaxInFlight, MaxLatency: o.MaxLatency,
		FailFor: o.FailFor, ReplayAfter: max(o.StallReplayAfter, 0), Story: seen.Story,
		Ordering: o.Ordering, KeySpace: o.keySpace(),
	}
	if o.deadLetters() {
		r.DeadLetterAfter, r.DeadLetterTopic = o.DeadLetterAfter, o.deadLetterTopic()
		r.DeadLetters, r.DeadLetterErr = cluster.readDeadLetters(stopCtx, r.DeadLetterTopic, dlqFrom)
	}
	for _, v := range final {
		r.Expected += v.Sink.Expected
		r.Distinct += v.Sink.Distinct
		r.Duplicates += v.Sink.Dups
		r.Replays += v.Replays
		r.Failures = append(r.Failures, v.Sink.Failed...)
		r.KeyOrder = r.KeyOrder.add(v.Sink.KeyOrder)
	}
	writeSummary(w, r)
	return r, nil
}

// prepareTopic creates the topic if needed, produces the records and
// returns, per partition, the offsets this run's group will consume:
// from the group's committed offset if it has one, else from the log end
// before producing, committed for the group so it starts there. On the
// in-process broker that is simply [0, records per partition).
func prepareTopic(ctx context.Context, c *demoCluster, o demoOptions, rng *rand.Rand, w io.Writer) (map[int32][2]int64, error) {
	n, created, err := c.ensureTopic(ctx, o.Topic, int32(o.Partitions))
	if err != nil {
		return nil, err
	}
	if !created && c.fake == nil {
		fmt.Fprintf(w, "using the existing topic %s with %d partitions\n", o.Topic, n)
	}
	before, err := c.endOffsets(ctx, o.Topic)
	if err != nil {
		return nil, err
	}
	committed, err := c.committed(ctx, o.Group, o.Topic)
	if err != nil {
		return nil, err
	}
	if len(committed) == 0 && slices.ContainsFunc(mapValues(before), func(v int64) bool { return v > 0 }) {
		if err := c.commit(ctx, o.Group, o.Topic, before); err != nil {
			return nil, err
		}
	}
	if err := c.produce(ctx, o.Topic, n, o.Records, o.RecordSize, o.keySpace(), rng); err != nil {
		return nil, fmt.Errorf("producing %d records: %w", o.Records, err)
	}
	after, err := c.endOffsets(ctx, o.Topic)
	if err != nil {
		return nil, err
	}
	ranges := map[int32][2]int64{}
	for p, end := range after {
		start, ok := committed[p]
		if !ok {
			start = before[p]
		}
		ranges[p] = [2]int64{min(start, end), end}
	}
	return ranges, nil
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// demoMetricsName is the metrics exporter the demo's stream is built with.
const demoMetricsName = "demo_gauges"

// buildPipeline builds the demo's stream from YAML in a fresh environment
// that has kafka_watermark, the demo's sink and the in-memory metrics
// exporter gauges besides every component registered globally.
func buildPipeline(o demoOptions, brokers []string, sink *demoSink, gauges *memmetrics.Store) (*service.Stream, error) {
	env := service.NewEnvironment()
	if err := plugin.Register(env); err != nil {
		return nil, err
	}
	if err := sink.register(env); err != nil {
		return nil, err
	}
	if err := gauges.Register(env, demoMetricsName); err != nil {
		return nil, err
	}
	b := env.NewStreamBuilder()
	if err := b.SetYAML(pipelineYAML(o, brokers)); err != nil {
		return nil, fmt.Errorf("the demo pipeline config: %w", err)
	}
	level, _ := parseLogLevel(o.LogLevel)
	b.SetLogger(slog.New(slog.NewTextHandler(o.LogWriter, &slog.HandlerOptions{Level: level})))
	return b.Build()
}

// pipelineYAML is the demo's pipeline: what a user would write, with a
// short commit period, a small max_pending_batches and a short
// stall_replay_after so that a stall, and its replay in place, are visible
// within seconds.
func pipelineYAML(o demoOptions, brokers []string) string {
	seeds, _ := json.Marshal(brokers)
	return fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: %s
    topics: [ %q ]
    consumer_group: %q
    start_offset: earliest
    commit_period: %s
    batch_max_records: %d
    max_pending_batches: %d
    fetch_max_wait: 250ms
    # Stopping mid-run (Ctrl-C, --duration) need not wait the default 10s
    # for a batch the pipeline will never acknowledge; it is replayed.
    drain_timeout: 1s
    # A failed batch (nack_retry's default: no retries in the process) is
    # replayed in place this long after its partition stalled; 0s never.
    stall_replay_after: %s%s%s
output:
  %s:
    max_in_flight: %d
    max_latency: %s
metrics:
  %s: {}
`, seeds, o.Topic, o.Group, o.CommitPeriod, o.BatchMaxRecords, o.MaxPending, o.replayAfterYAML(), o.orderingYAML(), deadLetterYAML(o),
		demoSinkName, o.MaxInFlight, o.MaxLatency, demoMetricsName)
}

// deadLetterYAML is the input's dead_letter block, empty without
// --dead-letter-after.
func deadLetterYAML(o demoOptions) string {
	if !o.deadLetters() {
		return ""
	}
	return fmt.Sprintf(`
    # A batch delivered max_attempts times without success (each replay in
    # place is one more delivery) is written to this topic, and its
    # partition commits past it once the broker acknowledged the write.
    dead_letter:
      topic: %q
      max_attempts: %d`, o.deadLetterTopic(), o.DeadLetterAfter)
}
