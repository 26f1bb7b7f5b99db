package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/dlscan"
	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// Exit statuses of the status command. For a readiness probe, 1, 2 and 4
// are unready; 3 is ready (the partitions flow) but worth an alert.
const (
	ExitHealthy     = 0 // no partition is stalled, none lost records, none waits unconsumed
	ExitStalled     = 1 // at least one partition is stalled (whatever else)
	ExitUnknown     = 2 // status could not be read: the reason is on stderr
	ExitLost        = 3 // none of the above, but at least one partition lost records
	ExitNotConsumed = 4 // none stalled, but records wait in a partition without a commit that no member consumes
)

// ExitStatus returns the exit status for r: ExitStalled when a partition is
// stalled, else ExitNotConsumed when one is not consumed while records wait
// in it (Partition.Waiting), else ExitLost when one lost records (a loss
// report in its commit, or its commit below the log start), else
// ExitHealthy. The unready statuses come first: they are what a readiness
// probe must see, and a loss is shown in the report whatever the status.
//
// A partition that no member consumes and that has no commit is unready
// when records wait in it, because nothing delivers them and status cannot
// know that anything will: which of them a member assigned later delivers
// depends on its start_offset (latest skips them all). An empty one is
// shown as not consumed but changes nothing: no record waits, none can be
// lost there until one arrives. A partition with a commit is read from its
// commit whether or not a member consumes it now, as before: a stopped
// pipeline's partitions show their lag and reports.
func (r *Report) ExitStatus() int {
	switch {
	case r.Stalled() > 0:
		return ExitStalled
	case r.Waiting() > 0:
		return ExitNotConsumed
	case r.Lost() > 0:
		return ExitLost
	}
	return ExitHealthy
}

// Options are the status command's inputs. Flags override the config's
// fields. Options is a value; Run does not keep or modify it.
type Options struct {
	ConfigPath  string   // a Benthos config with one kafka_watermark input; "" for flags only
	SeedBrokers []string // overrides seed_brokers
	Group       string   // overrides consumer_group
	// ShareGroup, when set, reports this share group (runShare) instead of
	// a consumer group; -c then reads a kafka_share input.
	ShareGroup string
	// DeadLetterTopic, with ShareGroup, is the dead-letter topic to read
	// the group's dead letters from (overrides the kafka_share input's
	// dead_letter.topic).
	DeadLetterTopic string
	Topics          []string // overrides topics (as exact names: regexp_topics is then false)
	Format          string   // "text" (the default) or "json"
	Timeout         time.Duration

	Lookup func(string) (string, bool) // environment lookup; nil is os.LookupEnv
	Env    *service.Environment        // component specs for the config; nil is the global environment
}

// scrubbed replaces a secret that would otherwise be printed; Benthos's echo
// writes the same.
const scrubbed = "!!!SECRET_SCRUBBED!!!"

// Run reads the status, writes the report to stdout and returns the exit
// status. When it cannot tell, it writes the reason to stderr, nothing to
// stdout, and returns ExitUnknown. Nothing it writes holds a SASL password or
// token: its messages never include them, and as a second line of defence
// every output is scrubbed of the configured secrets.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) int {
	var secrets []string
	fail := func(err error) int {
		fmt.Fprintf(stderr, "status: %s\n", Scrub(err.Error(), secrets))
		return ExitUnknown
	}
	switch o.Format {
	case "", "text", "json":
	default:
		return fail(fmt.Errorf("--format (%q) must be text or json", o.Format))
	}
	if o.Timeout <= 0 {
		return fail(fmt.Errorf("--timeout (%v) must be positive", o.Timeout))
	}
	if o.DeadLetterTopic != "" && o.ShareGroup == "" {
		return fail(fmt.Errorf("--%s (%q) goes with --share-group: a consumer group's dead letters are reported from its commits", flagDeadLetterTopic, o.DeadLetterTopic))
	}

	in, err := Conn{ConfigPath: o.ConfigPath, SeedBrokers: o.SeedBrokers, Lookup: o.Lookup, Env: o.Env, Share: o.ShareGroup != ""}.Load()
	if err != nil {
		return fail(err)
	}
	t := in.Target
	if o.ShareGroup != "" {
		t.Group = o.ShareGroup
		return runShare(ctx, o, t, stdout, stderr)
	}
	secrets = t.Secrets()
	if o.Group != "" {
		t.Group = o.Group
	}
	if len(o.Topics) > 0 {
		t.Topics, t.RegexpTopics = o.Topics, false
	}

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	timedOut := func(err error) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("no answer within --timeout %v: %w", o.Timeout, err)
		}
		return err
	}
	cl, err := NewClient(ctx, t)
	if err != nil {
		return fail(timedOut(err))
	}
	defer cl.Close()
	// A broker that has just started answers COORDINATOR_NOT_AVAILABLE for
	// seconds: Collect reads only, so it is tried again within --timeout.
	var r *Report
	retries, err := kafkaconn.Retry(ctx, func(ctx context.Context) error {
		var err error
		r, err = Collect(ctx, kadm.NewClient(cl), Query{Group: t.Group, Topics: t.Topics, RegexpTopics: t.RegexpTopics})
		return err
	})
	if s := retries.String(); s != "" && !kafkaconn.Transient(err) {
		fmt.Fprintf(stderr, "status: %s\n", Scrub(s, secrets))
	}
	if err != nil {
		return fail(timedOut(kafkaconn.SilenceOf(cl).Explain(err)))
	}

	var out bytes.Buffer
	if o.Format == "json" {
		err = WriteJSON(&out, r)
	} else {
		err = WriteText(&out, r)
	}
	if err != nil {
		return fail(err)
	}
	scrub := Scrub
	if o.Format == "json" {
		scrub = ScrubJSON
	}
	if _, err := io.WriteString(stdout, scrub(out.String(), secrets)); err != nil {
		return fail(err)
	}
	return r.ExitStatus()
}

// flagDeadLetterTopic names the dead-letter topic of --share-group.
const flagDeadLetterTopic = "dead-letter-topic"

// Command is `watermark-connect status`. Add it to the binary with
// service.CLIOptAddCommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "Report each partition's committed offset, lag, stall, lost and dead-lettered records from the group's commits, for a readiness probe",
		ArgsUsage: " ",
		Description: `
Reads a consumer group's committed offsets and their commit metadata from the
brokers, as the kafka_watermark input wrote them, and reports per partition:
the committed offset (the watermark), the log end, the lag, the records
delivered above the committed offset (skipped after a restart), for a
stalled partition the failed batch that holds it: its offsets, since when, how
many deliveries, the error class and the member that saw it, and under LOST
the records Kafka deleted (retention) or rewrote (an unclean leader election)
before they were delivered, as long as the input's commits carry the report
(lost_records_report_for), and under DEAD-LETTERED the records the input
dead-lettered lately: how many, within which offsets, since when, and the
error class of the last failure. When writing to the dead-letter topic fails,
the partition stalls and its stall names it (e.g. "dead_letter_write: broker
down"). LOST also counts the records deleted from below the log start before
they were delivered, as status sees them from the committed offset ("below
the log start 100: seen by status"), counted as the input will when it
resumes; LAG counts only records that exist. The table holds short cells
(yes or no, counts), so that no column is padded to a long message; what
each report says follows the table on a line of its own ("orders/1:
stalled: offsets ..."). A partition without a commit that no member of the
group is assigned is listed after the table as "not consumed".

It joins no group and needs no metrics endpoint: it works from any host that
can read the group's offsets, while the pipeline runs or after it stopped.

  {{.BinaryName}} status -c ./config.yaml
  {{.BinaryName}} status -c ./config.yaml --format json
  {{.BinaryName}} status --seed-brokers localhost:9092 --consumer-group G --topics a,b
  {{.BinaryName}} status -c ./share.yaml --share-group workers --format json

With --share-group, it reports a share group (the kafka_share input's)
instead: per share-partition its start offset (every record below it is
settled), the lag the broker counts and how many members are assigned it,
then the group's members, delivery count limit and record lock duration.
-c then reads the config's kafka_share input for the connection. A share
group commits no offsets, so its dead letters are read from the dead-letter
topic itself (the input's dead_letter.topic, or --dead-letter-topic): the
records written in the last dead_letter.report_for (24h by default; 0s: it
does not look) that carry the group in their dead_letter_share_group
header. The "dead-lettered:" line, "dead_lettered" in JSON, says how many,
and the last one's origin (topic/partition@offset), when it was written and
its error class. Status reads each partition of the dead-letter topic from
the first record at or after the window's start, and the 1000 records
before it, to its end, at most the last 10000 records of a partition and
32 MiB in all; a count past those bounds reads "at least". Dead letters
change no exit status: it is 0, or 2 when it cannot tell.

With -c, consumer_group, topics, regexp_topics and the connection settings
(seed_brokers, client_id, tls, sasl, tcp, and the request timeouts) are those
of the config's kafka_watermark input, read as run reads them: environment
variables interpolated (${VAR}, ${VAR:default}; the root flag -e loads an env
file), the input found wherever it sits (input, or a broker's inputs) and
linted. Status connects as the input does, with the same code. The config
must hold one kafka_watermark input. Flags override its fields.

Exit status: 0 when no partition is stalled, none lost records and none waits
unconsumed; 1 when any is stalled; 2 when it cannot tell (brokers unreachable,
authentication failed, unknown group, a bad config, a bad flag), with the
reason on stderr; 4 when none is stalled but records wait in a partition that
is not consumed (no commit, no member assigned it: nothing delivers them, and
a member assigned later with start_offset latest would skip them); 3 when
none of those, but some partition lost records. For a readiness probe 1, 2
and 4 are unready; 3 is ready (the partitions flow) but should alert. An
empty partition that is not consumed, and dead-lettered records, change no
exit status. Secrets are never printed.`[1:],
		OnUsageError: OnUsageError,
		Flags: append(ConnFlags(),
			&cli.StringFlag{Name: "consumer-group", Usage: "the consumer group (overrides the config's consumer_group)"},
			&cli.StringFlag{Name: "share-group", Usage: "report this share group (a kafka_share input's) instead: per partition its start offset, lag and members, and the group's delivery limit and lock; -c then reads a kafka_share input"},
			&cli.StringFlag{Name: flagDeadLetterTopic, Usage: "with --share-group: the dead-letter topic to count the group's dead letters in (overrides the kafka_share input's dead_letter.topic; needed without -c, or when that topic is interpolated per message)"},
			&cli.StringFlag{Name: "topics", Usage: "comma-separated topics to report, including partitions without a commit (overrides the config's topics); default: every partition the group committed"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output format: text or json"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "give up (exit 2) after this long"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				fmt.Fprint(c.App.ErrWriter, unexpectedArgs("status", c.Args().Slice()))
				return cli.Exit("", ExitUnknown)
			}
			conn := ConnFromFlags(c)
			o := Options{
				ConfigPath:  conn.ConfigPath,
				SeedBrokers: conn.SeedBrokers,
				Group:       c.String("consumer-group"),
				ShareGroup:  c.String("share-group"),
				Topics:      splitList(c.String("topics")),
				// The flag's value as given: a topic name, not a list.
				DeadLetterTopic: c.String(flagDeadLetterTopic),
				Format:          c.String("format"),
				Timeout:         c.Duration("timeout"),
			}
			if code := Run(c.Context, o, c.App.Writer, c.App.ErrWriter); code != ExitHealthy {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}

// shareDeadLetterTopic returns where and how far back runShare looks for
// the group's dead letters: --dead-letter-topic, else the config's static
// dead_letter.topic; the config's report_for, else its default. No topic
// (none known, or report_for 0s) means it does not look; err says why it
// cannot when the config's topic is interpolated per message.
func shareDeadLetterTopic(o Options, t Target) (topic string, reportFor time.Duration, err error) {
	reportFor = defaultShareReportFor
	if o.ConfigPath != "" {
		reportFor = t.DeadLetterReportFor
	}
	if reportFor <= 0 {
		return "", 0, nil
	}
	switch {
	case o.DeadLetterTopic != "":
		return o.DeadLetterTopic, reportFor, nil
	case strings.Contains(t.DeadLetterTopic, "${!"):
		return "", reportFor, fmt.Errorf("%s.%s (%q) is interpolated per message, so it names no one topic: give the topic with --%s",
			fieldDeadLetter, fieldDeadLetterTopic, t.DeadLetterTopic, flagDeadLetterTopic)
	}
	return t.DeadLetterTopic, reportFor, nil
}

// runShare is Run for --share-group: t names the share group.
func runShare(ctx context.Context, o Options, t Target, stdout, stderr io.Writer) int {
	secrets := t.Secrets()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "status: %s\n", Scrub(err.Error(), secrets))
		return ExitUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	dlTopic, reportFor, dlErr := shareDeadLetterTopic(o, t)
	var extra []kgo.Opt
	if dlTopic != "" {
		extra = append(dlscan.Opts(), kgo.FetchMaxBytes(shareDLFetchMaxBytes))
	}
	cl, err := Connect(ctx, t, extra...)
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	var r *ShareReport
	if _, err := kafkaconn.Retry(ctx, func(ctx context.Context) error {
		var err error
		r, err = CollectShare(ctx, cl, t.Group)
		return err
	}); err != nil {
		return fail(kafkaconn.SilenceOf(cl).Explain(err))
	}
	switch {
	case dlTopic != "":
		r.DeadLetters = CollectShareDeadLetters(ctx, cl, t.Group, dlTopic, reportFor, time.Now())
	case dlErr != nil:
		r.DeadLetters = &ShareDeadLetters{ReportFor: reportFor, Err: dlErr}
	}
	var out bytes.Buffer
	scrub := Scrub
	if o.Format == "json" {
		err, scrub = WriteShareJSON(&out, r), ScrubJSON
	} else {
		err = WriteShareText(&out, r)
	}
	if err != nil {
		return fail(err)
	}
	if _, err := io.WriteString(stdout, scrub(out.String(), secrets)); err != nil {
		return fail(err)
	}
	return ExitHealthy
}
