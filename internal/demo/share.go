package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/plugin"
)

// `demo --share` shows the kafka_share input (a share group, KIP-932):
// shareMembers pipelines, each a share group member, read one partition;
// the sink (shareSink) fails a few records on their first delivery and one
// record, the poison, on every delivery. A failed record is released: the
// broker delivers it again, to whichever member fetches first, its
// kafka_delivery_attempt one higher. The poison record's third failure
// (dead_letter.max_attempts) sends it to the dead-letter topic instead. The
// summary (shareshow.go) says who got what, and reads the dead-letter topic
// back from the broker.

// shareMembers is how many pipelines (each a share group member) the demo
// runs, and shareMaxAttempts their dead_letter.max_attempts.
const (
	shareMembers     = 3
	shareMaxAttempts = 3
)

// shareOptions are the knobs of demo --share; zero means the default.
type shareOptions struct {
	Records         int
	BatchMaxRecords int
	MaxLatency      time.Duration
	Duration        time.Duration
	Brokers         []string
	Topic           string
	Group           string
	Seed            uint64
	LogLevel        string
	LogWriter       io.Writer
}

func (o shareOptions) withDefaults() shareOptions {
	if o.Records == 0 {
		o.Records = 60
	}
	if o.BatchMaxRecords == 0 {
		o.BatchMaxRecords = 5
	}
	if o.MaxLatency == 0 {
		o.MaxLatency = 150 * time.Millisecond
	}
	if o.Duration == 0 {
		o.Duration = 30 * time.Second
	}
	// A real cluster keeps topics and groups: a fresh name per run starts
	// clean (the demo needs an empty topic).
	name := "watermark-demo-share"
	if len(o.Brokers) > 0 {
		name = fmt.Sprintf("watermark-demo-share-%d", time.Now().Unix())
	}
	if o.Topic == "" {
		o.Topic = name
	}
	if o.Group == "" {
		o.Group = name
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	if o.LogLevel == "" {
		o.LogLevel = "none"
	}
	if o.LogWriter == nil {
		o.LogWriter = os.Stderr
	}
	return o
}

// validate checks the options after withDefaults; each message names the
// flag, the value and the limit.
func (o shareOptions) validate() error {
	var errs []error
	if o.Records < 2 || o.Records > 10000 {
		errs = append(errs, fmt.Errorf("--records with --share must be between 2 and 10000 (the summary lists them), got %d", o.Records))
	}
	if o.BatchMaxRecords < 1 {
		errs = append(errs, fmt.Errorf("--batch-max-records must be at least 1, got %d", o.BatchMaxRecords))
	}
	if o.MaxLatency < 0 {
		errs = append(errs, fmt.Errorf("--max-latency must be at least 0, got %v", o.MaxLatency))
	}
	if _, err := parseLogLevel(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o shareOptions) deadLetterTopic() string { return o.Topic + "-dlq" }

// memberName is member i's name: its client_id and the sink's label.
func memberName(i int) string { return fmt.Sprintf("member-%d", i+1) }

// shareDelivery is one delivery of one record the sink saw.
type shareDelivery struct {
	At      time.Duration // since the demo began
	Member  string
	Offset  int64
	Attempt int
	Failed  bool // the sink failed it: released, or dead-lettered at shareMaxAttempts
}

// shareSink is the demo's sink for every member: it answers each batch
// after a random latency, failing the poison record always and the records
// of failOnce on their first attempt, each alone (a *service.BatchError),
// and keeps every delivery. Safe for concurrent use.
type shareSink struct {
	began      time.Time
	maxLatency time.Duration
	poison     int64
	failOnce   map[int64]bool // immutable

	mu         sync.Mutex
	rng        *rand.Rand // guarded by mu
	deliveries []shareDelivery
	accepted   map[int64]int
	live       io.Writer // each batch's line as it is answered; nil: none
}

// shareSinkName is the output every member's stream writes to.
const shareSinkName = "demo_share_sink"

func (s *shareSink) register(env *service.Environment) error {
	spec := service.NewConfigSpec().Summary("The share demo's sink.").Field(service.NewStringField("member"))
	return env.RegisterBatchOutput(shareSinkName, spec,
		func(pc *service.ParsedConfig, _ *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			m, err := pc.FieldString("member")
			return &shareMemberSink{s: s, member: m}, service.BatchPolicy{}, 4, err
		})
}

// shareMemberSink is the sink as one member's output sees it.
type shareMemberSink struct {
	s      *shareSink
	member string
}

func (m *shareMemberSink) Connect(context.Context) error { return nil }
func (m *shareMemberSink) Close(context.Context) error   { return nil }

func (m *shareMemberSink) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	s := m.s
	s.mu.Lock()
	wait := time.Duration(0)
	if s.maxLatency > 0 {
		wait = time.Duration(s.rng.Int64N(int64(s.maxLatency)))
	}
	// A failure takes the sink longer (a timeout, say): by the time the
	// records are released, the other members are waiting for records, and
	// one of them gets them.
	for _, msg := range b {
		_, off := recordPosition(msg)
		if off == s.poison || s.failOnce[off] {
			wait += s.maxLatency
			break
		}
	}
	s.mu.Unlock()
	t := time.NewTimer(wait) // the sink's latency: the behaviour shown
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	var berr *service.BatchError
	var ok, failed []string
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Since(s.began)
	for i, msg := range b {
		_, off := recordPosition(msg)
		attempt := 1 // kafka_delivery_attempt is set from the second delivery on
		if a, ok := msg.MetaGetMut("kafka_delivery_attempt"); ok {
			attempt = int(toInt64(a))
		}
		fail := off == s.poison || (s.failOnce[off] && attempt == 1)
		s.deliveries = append(s.deliveries, shareDelivery{At: at, Member: m.member, Offset: off, Attempt: attempt, Failed: fail})
		if !fail {
			s.accepted[off]++
			ok = append(ok, fmt.Sprint(off))
			continue
		}
		err := fmt.Errorf("the sink refused offset %d", off)
		if berr == nil {
			berr = service.NewBatchError(b, err)
		}
		berr = berr.Failed(i, err)
		what := "released"
		if attempt >= shareMaxAttempts {
			what = "to the dead-letter topic"
		}
		failed = append(failed, fmt.Sprintf("%d (attempt %d: %s)", off, attempt, what))
	}
	if s.live != nil {
		line := fmt.Sprintf("%6.2fs  %s  accepted [%s]", at.Seconds(), m.member, strings.Join(ok, " "))
		if len(failed) > 0 {
			line += "  failed " + strings.Join(failed, ", ")
		}
		fmt.Fprintln(s.live, line)
	}
	if berr != nil {
		return berr
	}
	return nil
}

// done reports whether every record but the poison was accepted.
func (s *shareSink) done(records int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for o := range int64(records) {
		if o != s.poison && s.accepted[o] == 0 {
			return false
		}
	}
	return true
}

// shareResult is what demo --share saw, for the summary and for tests.
type shareResult struct {
	Topic, Group, DeadLetterTopic string
	Seed                          uint64
	Records                       int
	Poison                        int64
	FailOnce                      []int64 // sorted
	Deliveries                    []shareDelivery
	Accepted                      map[int64]int
	Letters                       []deadLetterSeen
	LettersErr                    error
	Settled                       bool // every record accepted or dead-lettered before --duration
	Elapsed                       time.Duration
}

// runShareDemo runs demo --share and prints its progress and summary to w.
func runShareDemo(ctx context.Context, o shareOptions, w io.Writer) (*shareResult, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	rng := rand.New(rand.NewPCG(o.Seed, 0x7368617265)) // a demo: reproducible, not secure
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cluster, err := startCluster(setupCtx, o.Brokers)
	if err != nil {
		return nil, err
	}
	defer cluster.close()
	cluster.log = w
	n, _, err := cluster.ensureTopic(setupCtx, o.Topic, 1)
	if err != nil {
		return nil, err
	}
	if n != 1 {
		return nil, fmt.Errorf("--topic %s has %d partitions; demo --share needs a topic of 1 (or a new name)", o.Topic, n)
	}
	from, err := cluster.endOffsets(setupCtx, o.Topic)
	if err != nil {
		return nil, err
	}
	if from[0] != 0 {
		return nil, fmt.Errorf("--topic %s already holds %d records; demo --share needs an empty topic (or a new name)", o.Topic, from[0])
	}
	dlqFrom, err := cluster.prepareDeadLetterTopic(setupCtx, o.deadLetterTopic())
	if err != nil {
		return nil, err
	}
	if err := cluster.produce(setupCtx, o.Topic, 1, o.Records, 40, 0, rng); err != nil {
		return nil, fmt.Errorf("producing %d records: %w", o.Records, err)
	}

	// The poison record, and four records (fewer for a small topic) that
	// fail once.
	perm := rng.Perm(o.Records)
	r := &shareResult{Topic: o.Topic, Group: o.Group, DeadLetterTopic: o.deadLetterTopic(), Seed: o.Seed, Records: o.Records, Poison: int64(perm[0])}
	sink := &shareSink{began: began, maxLatency: o.MaxLatency, poison: r.Poison, failOnce: map[int64]bool{}, rng: rng,
		accepted: map[int64]int{}, live: w}
	for _, p := range perm[1:min(5, o.Records)] {
		sink.failOnce[int64(p)] = true
		r.FailOnce = append(r.FailOnce, int64(p))
	}
	slices.Sort(r.FailOnce)
	fmt.Fprintf(w, "watermark-connect demo --share: topic %s (1 partition, %d records), share group %s, brokers %s; %d members, batch_max_records %d, dead_letter.max_attempts %d, seed %d\n",
		o.Topic, o.Records, o.Group, strings.Join(cluster.brokers, ","), shareMembers, o.BatchMaxRecords, shareMaxAttempts, o.Seed)
	fmt.Fprintf(w, "the sink fails offsets %s on their first delivery, and offset %d on every delivery\n", joinOffsets(r.FailOnce), r.Poison)

	streams, err := buildShareStreams(o, cluster.brokers, sink)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, st := range streams {
		wg.Go(func() { errs[i] = st.Run(context.Background()) })
	}
	deadline := time.NewTimer(o.Duration)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-deadline.C:
			break wait
		case <-tick.C:
			ends, err := cluster.endOffsets(ctx, r.DeadLetterTopic)
			if err == nil && ends[0] > dlqFrom[0] && sink.done(o.Records) {
				r.Settled = true
				break wait
			}
		}
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer stopCancel()
	for _, st := range streams {
		wg.Go(func() { _ = st.Stop(stopCtx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("a member's pipeline stopped: %w", err)
		}
	}
	sink.mu.Lock()
	r.Deliveries = slices.Clone(sink.deliveries)
	r.Accepted = sink.accepted
	sink.live = nil
	sink.mu.Unlock()
	r.Letters, r.LettersErr = cluster.readDeadLetters(stopCtx, r.DeadLetterTopic, dlqFrom)
	r.Elapsed = time.Since(began)
	writeShareSummary(w, r)
	return r, nil
}

// buildShareStreams builds one stream per member in a fresh environment
// with the plugin and the sink.
func buildShareStreams(o shareOptions, brokers []string, sink *shareSink) ([]*service.Stream, error) {
	env := service.NewEnvironment()
	if err := plugin.Register(env); err != nil {
		return nil, err
	}
	if err := sink.register(env); err != nil {
		return nil, err
	}
	level, _ := parseLogLevel(o.LogLevel)
	seeds, _ := json.Marshal(brokers)
	var out []*service.Stream
	for i := range shareMembers {
		b := env.NewStreamBuilder()
		yaml := fmt.Sprintf(`
input:
  kafka_share:
    seed_brokers: %s
    topics: [ %q ]
    share_group: %q
    client_id: %q
    start_offset: earliest
    # One member per pipeline here: the demo runs three pipelines, as
    # three processes would.
    members: 1
    batch_max_records: %d
    dead_letter:
      topic: %q
      max_attempts: %d
output:
  %s:
    member: %q
`, seeds, o.Topic, o.Group, memberName(i), o.BatchMaxRecords, o.deadLetterTopic(), shareMaxAttempts, shareSinkName, memberName(i))
		if err := b.SetYAML(yaml); err != nil {
			return nil, fmt.Errorf("the share demo's pipeline config: %w", err)
		}
		b.SetLogger(slog.New(slog.NewTextHandler(o.LogWriter, &slog.HandlerOptions{Level: level})))
		st, err := b.Build()
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func joinOffsets(offs []int64) string {
	s := make([]string, len(offs))
	for i, o := range offs {
		s[i] = fmt.Sprint(o)
	}
	return strings.Join(s, ", ")
}

// shareFlags are the demo's flags that mean something with --share.
var shareFlags = []string{"share", "records", "batch-max-records", "max-latency", "duration", "brokers", "topic", "group", "seed", "log-level"}

// shareAction is the demo command with --share: a flag of the other demo
// is refused rather than ignored.
func shareAction(c *cli.Context) error {
	var errs []error
	for _, f := range c.FlagNames() {
		if c.IsSet(f) && !slices.Contains(shareFlags, f) {
			errs = append(errs, fmt.Errorf("--%s does not apply to demo --share (it takes --%s)", f, strings.Join(shareFlags[1:], ", --")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	o := shareOptions{Duration: c.Duration("duration"), MaxLatency: c.Duration("max-latency"), Topic: c.String("topic"),
		Group: c.String("group"), Seed: c.Uint64("seed"), LogLevel: c.String("log-level")}
	if c.IsSet("records") {
		o.Records = c.Int("records")
	}
	if c.IsSet("batch-max-records") {
		o.BatchMaxRecords = c.Int("batch-max-records")
	}
	if !c.IsSet("topic") {
		o.Topic = ""
	}
	if !c.IsSet("max-latency") {
		o.MaxLatency = 0
	}
	for _, b := range strings.Split(c.String("brokers"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.Brokers = append(o.Brokers, b)
		}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := runShareDemo(ctx, o, c.App.Writer)
	return err
}
