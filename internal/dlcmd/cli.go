package dlcmd

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// Command is `watermark-connect dead-letter`, with the subcommands inspect
// and redrive. Add it to the binary with service.CLIOptAddCommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "dead-letter",
		Usage: "Inspect the kafka_watermark input's dead-letter topic, or redrive its records",
		Description: `
The kafka_watermark input produces a record that keeps failing to its
dead-letter topic, with provenance headers (dead_letter_topic,
dead_letter_partition, dead_letter_offset, dead_letter_timestamp_ms,
dead_letter_attempts, dead_letter_error, dead_letter_first_failed_ms,
dead_letter_member), and commits past it. inspect summarises the topic;
redrive produces its records again.`[1:],
		Subcommands:  []*cli.Command{inspectCommand(), redriveCommand()},
		Action:       status.UnknownSubcommand,
		OnUsageError: status.OnUsageError,
	}
}

// commonFlags are the connection flags, as status has them, the topic and
// the timeout.
func commonFlags() []cli.Flag {
	return append(status.ConnFlags(),
		&cli.StringFlag{Name: flagTopic, Usage: "the dead-letter topic (overrides the config's dead_letter.topic; required without -c, or when that topic is interpolated per message)"},
		&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "give up after this long, for the whole command (exit 1; redrive exits 2 once it moved records, and lists what it did not try)"},
	)
}

const connHelp = `
With -c, the connection settings (seed_brokers, client_id, tls, sasl, tcp,
and the request timeouts) are those of the config's kafka_watermark input,
read as status reads them (environment variables interpolated, the input
found wherever it sits, linted), and the topic is its dead_letter.topic,
unless that is interpolated per message (${! ... }): then give
--dead-letter-topic. Flags override the config. The dead-letter topic is
read from its log start to the end offsets it had when the command started,
joining no group.`

func options(c *cli.Context) Options {
	return Options{Conn: status.ConnFromFlags(c), Topic: c.String(flagTopic), Timeout: c.Duration("timeout")}
}

// noArgs refuses positional arguments, as status does.
func noArgs(c *cli.Context, name string) error {
	if c.Args().Present() {
		fmt.Fprintf(c.App.ErrWriter, "dead-letter %s: unexpected arguments %v: the config is given with -c\n", name, c.Args().Slice())
		return cli.Exit("", status.ExitUsage)
	}
	return nil
}

// signalContext is c's context, cancelled by SIGINT or SIGTERM with the
// signal as its cause, so that a run cut short by a signal reports as one
// cut by --timeout: what was done and what was not, instead of dying
// silently with the signal's status.
func signalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

func exit(code int) error {
	if code != ExitOK {
		return cli.Exit("", code)
	}
	return nil
}

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "Summarise the dead-letter topic per origin topic and partition",
		ArgsUsage: " ",
		Description: (`
Reads the dead-letter topic to its end and reports, per origin topic and
partition: how many dead letters, the oldest and newest of them (by origin
offset: the offset, the origin record's timestamp and when its first
delivery failed, in RFC 3339 UTC), and the error classes with their counts.
Records whose provenance headers do not parse are counted and listed as
unparsable, with the reason; they never fail the command.

  {{.BinaryName}} dead-letter inspect -c ./config.yaml
  {{.BinaryName}} dead-letter inspect --seed-brokers localhost:9092 --dead-letter-topic orders.dlq --format json
` + connHelp + `

--format json writes one object (keys are only ever added):

  {"dead_letter_topic": "orders.dlq", "partitions": 1, "records": 3,
   "origins": [{"topic": "orders", "partition": 3, "count": 2,
     "oldest": {"offset": 1207, "timestamp": "2026-03-01T12:00:00.000Z",
                "first_failed": "2026-03-01T12:05:00.000Z",
                "dead_letter_partition": 0, "dead_letter_offset": 0},
     "newest": {...the same keys...},
     "errors": [{"error": "http: status=503", "count": 2}]}],
   "unparsable": {"count": 1, "records": [{"partition": 0, "offset": 2,
     "reason": "header dead_letter_topic: missing"}]}}

origins are sorted by topic and partition, errors by count (highest first),
unparsable records by partition and offset.

Exit status: 0 when the topic was read to its end, 1 when it could not be
(the reason on stderr).`)[1:],
		OnUsageError: status.OnUsageError,
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output format: text or json"},
		),
		Action: func(c *cli.Context) error {
			if err := noArgs(c, "inspect"); err != nil {
				return err
			}
			o := InspectOptions{Options: options(c), Format: c.String("format")}
			ctx, stop := signalContext(c)
			defer stop()
			return exit(Inspect(ctx, o, c.App.Writer, c.App.ErrWriter))
		},
	}
}

func redriveCommand() *cli.Command {
	return &cli.Command{
		Name:      "redrive",
		Usage:     "Produce dead letters back to their origin topic (or --to), for the pipeline to process again",
		ArgsUsage: " ",
		Description: (`
Produces the selected records of the dead-letter topic to --to, or each to
its origin topic (its dead_letter_topic header), with their key, value
and headers, minus the dead_letter_* ones, plus
dead_letter_redriven_from: "<dead-letter topic>/<partition>/<offset>" and
dead_letter_original_timestamp_ms: the record is stamped with the time of
the redrive, so that a destination's time retention does not delete it at
once, and its old timestamp (Unix milliseconds) is kept in that header.
--keep-timestamps keeps the old timestamp instead, and adds no header. The
partition is the producer's (records of one key go to one partition). It
uses an idempotent producer with acks from all in-sync replicas.

Running it twice writes twice: nothing is removed from the dead-letter
topic, and nothing remembers what was redriven. Narrow the selection with:

  --partition       one partition of the dead-letter topic
  --from-offset     offsets in the dead-letter topic, inclusive, in each
  --to-offset       partition read
  --from-time       the ORIGIN record's timestamp (dead_letter_timestamp_ms),
  --to-time         RFC 3339; from inclusive, to exclusive

Without them, it redrives every record the topic held when it started. An
offset range partly below a partition's log start (deleted by retention:
asked 0-4, the log starts at 3) fails the command, with nothing produced
and the missing offsets named, unless --allow-partial: then it says so on
stderr and redrives what is left.

  {{.BinaryName}} dead-letter redrive -c ./config.yaml --partition 0 --from-offset 120 --to-offset 180
  {{.BinaryName}} dead-letter redrive -c ./config.yaml --from-time 2026-03-01T12:00:00Z --to-time 2026-03-01T13:00:00Z
  {{.BinaryName}} dead-letter redrive --seed-brokers localhost:9092 --dead-letter-topic orders.dlq --to orders-retry
` + connHelp + `

The selection is read in full and checked before anything is produced,
then read again to be produced a batch at a time (memory holds a batch and
the client's fetch buffers, not the selection): a record whose provenance
does not parse fails the command, with nothing produced, when its
destination (no --to) or its timestamp (a time range) is needed; select
around it by offset, or give --to and no time range to move it as it is. A
record deleted between the two reads is reported as gone. Records go out in
batches, in dead-letter partition and offset order; the first batch with a
failure ends the run, and the records after it are not tried. --timeout,
SIGINT (Ctrl-C) and SIGTERM end it too, once the records already sent are
answered.

It prints, per destination topic, how many records it moved and their
offsets in the dead-letter topic; on stderr, when the run ends early, why,
each record that failed, and the records not tried.

Exit status: 0 when every selected record was produced; 1 when nothing was
produced (the reason on stderr); 2 when some were produced and then one
failed or the run was cut short (stdout lists what was moved, stderr what
failed and what was not tried: running the same selection again writes the
moved ones again).`)[1:],
		OnUsageError: status.OnUsageError,
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "to", Usage: "the destination topic (default: each record's origin topic, from dead_letter_topic)"},
			// A range flag left out bounds nothing (selection): its
			// DefaultText says so, where urfave/cli would show the
			// zero value, "(default: 0)", a bound it is not.
			&cli.Int64Flag{Name: "partition", Usage: "only this partition of the dead-letter topic", DefaultText: "every partition"},
			&cli.Int64Flag{Name: "from-offset", Usage: "the first offset in the dead-letter topic (inclusive)", DefaultText: "each partition's log start"},
			&cli.Int64Flag{Name: "to-offset", Usage: "the last offset in the dead-letter topic (inclusive)", DefaultText: "the last record when the command started"},
			&cli.StringFlag{Name: "from-time", Usage: "RFC 3339: the earliest origin record timestamp (dead_letter_timestamp_ms, inclusive)", DefaultText: "no bound"},
			&cli.StringFlag{Name: "to-time", Usage: "RFC 3339: origin record timestamps before this (dead_letter_timestamp_ms, exclusive)", DefaultText: "no bound"},
			&cli.BoolFlag{Name: "allow-partial", Usage: "redrive what is left of an offset range partly below its partition's log start; without it, such a range fails with nothing produced"},
			&cli.BoolFlag{Name: "keep-timestamps", Usage: "keep each record's timestamp; without it, a record gets the time of the redrive and the old one goes in dead_letter_original_timestamp_ms"},
			&cli.IntFlag{Name: "batch-size", Value: defaultBatchSize, Usage: "records per produce request batch (ProduceSync)"},
		),
		Action: func(c *cli.Context) error {
			if err := noArgs(c, "redrive"); err != nil {
				return err
			}
			o, err := redriveOptions(c)
			if err != nil {
				fmt.Fprintf(c.App.ErrWriter, "dead-letter redrive: %s\n", err)
				return cli.Exit("", status.ExitUsage)
			}
			ctx, stop := signalContext(c)
			defer stop()
			return exit(Redrive(ctx, o, c.App.Writer, c.App.ErrWriter))
		},
	}
}

// redriveOptions reads redrive's flags, refusing values out of their
// types' range before any conversion (an int64 --partition of -4294967296
// would wrap to int32 0): only the range flags given bound.
func redriveOptions(c *cli.Context) (RedriveOptions, error) {
	o := RedriveOptions{Options: options(c), To: c.String("to"), BatchSize: c.Int("batch-size"),
		KeepTimestamps: c.Bool("keep-timestamps"), AllowPartial: c.Bool("allow-partial")}
	if o.BatchSize < 1 {
		return o, fmt.Errorf("--batch-size (%d) must be at least 1", o.BatchSize)
	}
	var err error
	o.Select, err = selection(c)
	return o, err
}

// selection reads the range flags; only the ones given bound.
func selection(c *cli.Context) (Selection, error) {
	var s Selection
	if c.IsSet("partition") {
		p := c.Int64("partition")
		if p < 0 || p > math.MaxInt32 {
			return s, fmt.Errorf("--partition (%d) must be between 0 and %d", p, math.MaxInt32)
		}
		p32 := int32(p)
		s.Partition = &p32
	}
	if c.IsSet("from-offset") {
		v := c.Int64("from-offset")
		s.FromOffset = &v
	}
	if c.IsSet("to-offset") {
		v := c.Int64("to-offset")
		s.ToOffset = &v
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from-time", &s.FromTime}, {"to-time", &s.ToTime}} {
		if v := c.String(f.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return s, fmt.Errorf("--%s (%q) must be an RFC 3339 time, like 2026-03-01T12:00:00Z", f.name, v)
			}
			*f.dst = t
		}
	}
	return s, nil
}
