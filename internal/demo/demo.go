// Package demo is `watermark-connect demo` (Command): it shows the
// kafka_watermark guarantee end to end with nothing installed but Go: an
// in-process Kafka (kfake) on a random loopback port, a topic of several
// partitions, and a real Benthos pipeline built from YAML whose sink
// (sink.go) acknowledges batches out of order and fails a few. It shows each
// partition's committed offset as the broker reports it (cluster.go: the
// broker is the truth a restart resumes from), its log end, and the input's
// own pending / stalled / paused state read from an in-memory metrics
// exporter (internal/memmetrics), live (watch.go, view.go), then a summary
// that explains the stall.
//
// Files: demo.go (command and options), run.go (the run), watch.go
// (progress and the end condition), view.go (rendering), sink.go,
// cluster.go.
package demo

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// demoOptions are the demo's knobs. A zero field means its default (see
// withDefaults), except FailBatches, where zero means no failures.
type demoOptions struct {
	Partitions  int
	Records     int
	RecordSize  int
	FailBatches int
	Duration    time.Duration
	Brokers     []string
	Topic       string
	Group       string
	Seed        uint64

	BatchMaxRecords int
	MaxPending      int
	MaxInFlight     int
	MaxLatency      time.Duration
	CommitPeriod    time.Duration

	LogLevel  string    // Benthos log level, "none" to silence it
	LogWriter io.Writer // where Benthos logs go; os.Stderr by default
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
whose sink acknowledges batches out of order and fails a few of them. It shows,
per partition, the committed offset (asked of the broker), the log end, the
batches pending and whether the partition is stalled or paused, then a summary
of what was committed and why.`[1:],
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "partitions", Value: 8, Usage: "partitions of the topic when the demo creates it"},
			&cli.IntFlag{Name: "records", Value: 20000, Usage: "records to produce"},
			&cli.IntFlag{Name: "record-size", Value: 100, Usage: "bytes per record value"},
			&cli.IntFlag{Name: "fail-batches", Value: 1, Usage: "batches the sink fails (each stalls its partition); 0 disables"},
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
		},
		Action: func(c *cli.Context) error {
			o := demoOptions{
				Partitions:      c.Int("partitions"),
				Records:         c.Int("records"),
				RecordSize:      c.Int("record-size"),
				FailBatches:     c.Int("fail-batches"),
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
