// Package demo is `watermark-connect demo` (Command): it shows the
// kafka_watermark guarantee end to end with nothing installed but Go: an
// in-process Kafka (kfake) on a random loopback port, a topic of several
// partitions, and a real Benthos pipeline built from YAML whose sink
// (sink.go) acknowledges batches out of order and fails a few. It shows each
// partition's committed offset as the broker reports it (cluster.go: the
// broker is the truth a restart resumes from), its log end, and the input's
// own pending / stalled / paused state and its replay count read from an
// in-memory metrics exporter (internal/memmetrics), live (watch.go,
// view.go), and what `watermark-connect status` reads from the broker at the
// same time (probe.go), then a summary that tells the failed batch's story
// step by step (summary.go).
//
// The sink rejects a failed batch for --fail-for (3s) after it first
// rejected it, then accepts it: the partition stalls at the batch, status
// says why (exit 1), the input replays the partition in place after
// --stall-replay-after (2s; its stall_replay_after), the batch is delivered
// again until the sink takes it, and the partition reaches its log end with
// no restart (status exits 0). With --stall-replay-after 0 nothing delivers
// the batch again in the process: the partition stays stalled at the
// batch's first offset until a restart.
//
// With --ordering key the input runs with ordering: key on records of a few
// keys per partition: the sink checks that no batch goes out with a key of
// another unanswered batch and that every key lands in log order, and the
// story shows the failed batch's keys waiting, their later records held by
// the input, while the partition's other keys go past them.
//
// Files: demo.go (command and options), run.go (the run), watch.go
// (progress, events and the end condition), probe.go (status against the
// demo's broker), view.go (the live table and progress lines), summary.go
// (the summary), deadletter.go (--dead-letter-after: the topic read back
// and its summary), keys.go (--ordering and --keys: options and the
// records' keys), keycheck.go (the sink's check of key order), keystory.go
// (what the events and the summary tell of keys), sink.go, cluster.go;
// share.go (--share: the kafka_share input, three members on one
// partition, its sink and run) and shareshow.go (its summary).
package demo

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// demoOptions are the demo's knobs. A zero field means its default (see
// withDefaults), except FailBatches, where zero means no failures.
type demoOptions struct {
	Partitions  int
	Records     int
	RecordSize  int
	FailBatches int
	FailFor     time.Duration // how long the sink rejects a failed batch after its first rejection
	Duration    time.Duration

	// StallReplayAfter is the input's stall_replay_after; neverReplay is
	// its 0s, the flag's 0: no replay in place.
	StallReplayAfter time.Duration
	// DeadLetterAfter is the input's dead_letter.max_attempts, with a
	// dead-letter topic (deadLetterTopic) on the demo's cluster; 0: no
	// dead-letter topic. With it the sink rejects a failed batch on every
	// delivery (FailFor does not apply): only the dead-letter topic ends
	// the stall.
	DeadLetterAfter int
	// Ordering is the input's ordering, orderingNone ("" too) or
	// orderingKey. Keys is how many keys the records carry; 0: every
	// record its own key under none, keysPerPartition per partition under
	// key (keySpace).
	Ordering string
	Keys     int
	Brokers  []string
	Topic    string
	Group    string
	Seed     uint64

	BatchMaxRecords int
	MaxPending      int
	MaxInFlight     int
	MaxLatency      time.Duration
	CommitPeriod    time.Duration

	LogLevel  string    // Benthos log level, "none" to silence it
	LogWriter io.Writer // where Benthos logs go; os.Stderr by default
}

// The defaults of the failure's story: the first replay, 2s after the
// stall, meets the sink still failing; the second, 4s later (the backoff of
// replays at one offset), is accepted. About 7s in all.
const (
	defaultFailFor          = 3 * time.Second
	defaultStallReplayAfter = 2 * time.Second
)

// neverReplay is StallReplayAfter's value for stall_replay_after: 0s. No one
// types a duration this negative.
const neverReplay = time.Duration(math.MinInt64)

// replays reports whether the input replays a stalled partition in place.
func (o demoOptions) replays() bool { return o.StallReplayAfter > 0 }

// pendingLimit is max_pending_batches, for the text beside a partition's
// batches pending.
func (o demoOptions) pendingLimit() pendingLimit {
	return pendingLimit{max: int64(o.MaxPending), keyed: o.keyOrdered()}
}

// deadLetters reports whether the input has a dead-letter topic.
func (o demoOptions) deadLetters() bool { return o.DeadLetterAfter > 0 }

// deadLetterTopic is the demo's dead-letter topic, next to its topic.
func (o demoOptions) deadLetterTopic() string { return o.Topic + "-dlq" }

// heals reports whether a partition with a failed batch reaches its log
// end in this process: a replay in place delivers the batch again, or the
// dead-letter topic takes it.
func (o demoOptions) heals() bool { return o.replays() || o.deadLetters() }

// replayAfterYAML is the input's stall_replay_after.
func (o demoOptions) replayAfterYAML() string {
	if !o.replays() {
		return "0s"
	}
	return o.StallReplayAfter.String()
}

func (o demoOptions) withDefaults() demoOptions {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Partitions, 8)
	def(&o.Records, 20000)
	def(&o.RecordSize, 100)
	def(&o.BatchMaxRecords, 100)
	def(&o.MaxPending, 16)
	def(&o.MaxInFlight, 8)
	if o.Duration == 0 {
		o.Duration = 30 * time.Second
	}
	if o.FailFor == 0 {
		o.FailFor = defaultFailFor
	}
	if o.StallReplayAfter == 0 {
		o.StallReplayAfter = defaultStallReplayAfter
	}
	if o.MaxLatency == 0 {
		o.MaxLatency = 200 * time.Millisecond
	}
	if o.CommitPeriod == 0 {
		o.CommitPeriod = 200 * time.Millisecond
	}
	if o.Topic == "" {
		o.Topic = "watermark-demo"
	}
	if o.Group == "" {
		o.Group = "watermark-demo"
		if len(o.Brokers) > 0 {
			// A real cluster keeps groups: a fresh one per run starts clean.
			o.Group = fmt.Sprintf("watermark-demo-%d", time.Now().Unix())
		}
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	if o.Ordering == "" {
		o.Ordering = orderingNone
	}
	if o.LogLevel == "" {
		o.LogLevel = "none"
	}
	if o.LogWriter == nil {
		o.LogWriter = os.Stderr
	}
	return o
}

func (o demoOptions) validate() error {
	var errs []error
	for _, c := range []struct {
		name string
		v    int
	}{{"partitions", o.Partitions}, {"records", o.Records}, {"record-size", o.RecordSize},
		{"batch-max-records", o.BatchMaxRecords}, {"max-pending", o.MaxPending}, {"max-in-flight", o.MaxInFlight}} {
		if c.v < 1 {
			errs = append(errs, fmt.Errorf("--%s must be at least 1, got %d", c.name, c.v))
		}
	}
	if o.FailBatches < 0 {
		errs = append(errs, fmt.Errorf("--fail-batches must be at least 0, got %d", o.FailBatches))
	}
	if o.FailFor <= 0 {
		errs = append(errs, fmt.Errorf("--fail-for must be greater than 0, got %v", o.FailFor))
	}
	if o.StallReplayAfter < 0 && o.StallReplayAfter != neverReplay {
		errs = append(errs, fmt.Errorf("--stall-replay-after must be at least 0 (0: never replay), got %v", o.StallReplayAfter))
	}
	if o.DeadLetterAfter < 0 {
		errs = append(errs, fmt.Errorf("--dead-letter-after must be at least 0 (0: no dead-letter topic), got %d", o.DeadLetterAfter))
	}
	// Without replays in place nothing delivers a failed batch again in the
	// process, so the input dead-letters it after its first attempt
	// whatever max_attempts says: a count above 1 would be a promise the
	// demo cannot show.
	if o.DeadLetterAfter > 1 && !o.replays() {
		errs = append(errs, fmt.Errorf("--dead-letter-after %d needs replays in place to deliver the failed batch again (--stall-replay-after above 0); "+
			"with --stall-replay-after 0 only --dead-letter-after 1 can be kept", o.DeadLetterAfter))
	}
	errs = append(errs, o.validateKeys()...)
	if _, err := parseLogLevel(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Command is `watermark-connect demo`: the whole guarantee on one screen,
// with no broker to install. Add it to the binary with
// service.CLIOptAddCommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "Run a real kafka_watermark pipeline on an in-process Kafka and watch the commits (no broker needed)",
		Description: `
Starts an in-process Kafka on 127.0.0.1 (or uses --brokers), produces records
to a multi-partition topic and consumes them with a kafka_watermark pipeline
whose sink acknowledges batches out of order and fails a batch for a few
seconds. It shows, per partition, the committed offset (asked of the broker),
the log end, the batches pending, whether the partition is stalled or paused
and its replays in place, with what "watermark-connect status" reads from the
broker meanwhile; then a summary of each step: the stall, what status said,
the replays, and the partition reaching its log end without a restart.

--stall-replay-after 0 turns replays off (stall_replay_after: 0s): the
partition then stays stalled at the failed batch until a restart.

--dead-letter-after N gives the input a dead-letter topic (<topic>-dlq) with
dead_letter.max_attempts: N, and makes the sink reject the failed batch on
every delivery (--fail-for no longer applies): each replay in place is one
more attempt, and after the Nth the input writes the batch's records to the
dead-letter topic and, once the broker acknowledged them, commits past them
without a restart. The summary lists the dead letters read back from the
broker with their headers. Each attempt after the first waits for a replay,
twice as long as the one before: N=3 takes about 6s with the defaults.

--ordering key runs the input with ordering: key, on records with a few keys
per partition (--keys): a batch never goes out holding a key of another
unanswered batch, and when the sink rejects a batch only its keys wait, held
by the input, while the partition's other keys flow past it; the commit still
stops at the failed record. The summary checks every key's order as the sink
received it. --keys N with --ordering none shows what none does to them.

--share shows the kafka_share input instead: three pipelines, each a member
of one share group, read a topic of one partition (--records, 30 by default;
--batch-max-records 5). The sink fails four records on their first delivery:
each is released and delivered again, maybe to another member, with
kafka_delivery_attempt one higher; it fails one record on every delivery:
after dead_letter.max_attempts 3 it goes to the dead-letter topic. The
summary says who got what.`[1:],
		OnUsageError: status.OnUsageError,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "partitions", Value: 8, Usage: "partitions of the topic when the demo creates it"},
			&cli.IntFlag{Name: "records", Value: 20000, Usage: "records to produce"},
			&cli.IntFlag{Name: "record-size", Value: 100, Usage: "bytes per record value"},
			&cli.IntFlag{Name: "fail-batches", Value: 1, Usage: "batches the sink fails (each stalls its partition); 0 disables"},
			&cli.DurationFlag{Name: "fail-for", Value: defaultFailFor, Usage: "how long the sink goes on rejecting a failed batch after its first rejection (each replay delivers it again)"},
			&cli.DurationFlag{Name: "stall-replay-after", Value: defaultStallReplayAfter, Usage: "the input's stall_replay_after: replay a stalled partition in place after this long; 0: never (it stays stalled until a restart)"},
			&cli.IntFlag{Name: "dead-letter-after", Usage: "give the input a dead-letter topic (<topic>-dlq) with dead_letter.max_attempts N: the failed batch, rejected on every delivery, is dead-lettered after N attempts; 0: none"},
			&cli.StringFlag{Name: "ordering", Value: orderingNone, Usage: "the input's ordering: none, or key (records of a key never in two unanswered batches; a failed batch holds only its keys)"},
			&cli.IntFlag{Name: "keys", Usage: "keys the records carry, spread over the partitions (0: 4 per partition under --ordering key, else every record its own key)"},
			&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "stop after this long even if not everything settled"},
			&cli.StringFlag{Name: "brokers", Usage: "comma-separated seed brokers of a real cluster, instead of the in-process one"},
			&cli.StringFlag{Name: "topic", Value: "watermark-demo", Usage: "topic to produce to and consume (created if missing)"},
			&cli.StringFlag{Name: "group", Usage: "consumer group (default watermark-demo; a fresh name per run with --brokers)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed for latencies, failures and values (0: random, printed in the summary)"},
			&cli.IntFlag{Name: "batch-max-records", Value: 100, Usage: "the input's batch_max_records: records per batch, the unit of acknowledgement"},
			&cli.IntFlag{Name: "max-pending", Value: 16, Usage: "the input's max_pending_batches: at this many the stalled partition pauses"},
			&cli.IntFlag{Name: "max-in-flight", Value: 8, Usage: "the sink's max_in_flight: batches written concurrently, acknowledged out of order"},
			&cli.DurationFlag{Name: "max-latency", Value: 200 * time.Millisecond, Usage: "the sink's largest random latency per batch (sets the pace: ~3s with the defaults)"},
			&cli.StringFlag{Name: "log-level", Value: "none", Usage: "Benthos log level on stderr: none, error, warn, info, debug"},
			&cli.BoolFlag{Name: "share", Usage: "show the kafka_share input instead: three share group members on one partition, records released and delivered again, a poison record dead-lettered"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("share") {
				return shareAction(c)
			}
			o := demoOptions{
				Partitions:      c.Int("partitions"),
				Records:         c.Int("records"),
				RecordSize:      c.Int("record-size"),
				FailBatches:     c.Int("fail-batches"),
				FailFor:         c.Duration("fail-for"),
				DeadLetterAfter: c.Int("dead-letter-after"),
				Ordering:        c.String("ordering"),
				Keys:            c.Int("keys"),
				Duration:        c.Duration("duration"),
				Topic:           c.String("topic"),
				Group:           c.String("group"),
				Seed:            c.Uint64("seed"),
				MaxPending:      c.Int("max-pending"),
				BatchMaxRecords: c.Int("batch-max-records"),
				MaxInFlight:     c.Int("max-in-flight"),
				MaxLatency:      c.Duration("max-latency"),
				LogLevel:        c.String("log-level"),
			}
			if o.StallReplayAfter = c.Duration("stall-replay-after"); o.StallReplayAfter == 0 {
				o.StallReplayAfter = neverReplay
			}
			for _, b := range strings.Split(c.String("brokers"), ",") {
				if b = strings.TrimSpace(b); b != "" {
					o.Brokers = append(o.Brokers, b)
				}
			}
			// Every flag has a default, so a zero here was asked for: reject
			// it rather than let withDefaults replace it.
			if err := o.validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := c.App.Writer
			_, err := runDemo(ctx, o, w, isTerminal(w))
			return err
		},
	}
}

// parseLogLevel maps a level name to slog; "none" is above every level.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "none", "off", "":
		return slog.LevelError + 100, nil
	case "error":
		return slog.LevelError, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "info":
		return slog.LevelInfo, nil
	case "debug", "trace":
		return slog.LevelDebug, nil
	}
	return 0, fmt.Errorf("--log-level must be one of none, error, warn, info, debug; got %q", s)
}
