package dlcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// Exit statuses of the dead-letter commands.
const (
	ExitOK      = 0
	ExitFailed  = 1 // nothing was produced: the reason is on stderr
	ExitPartial = 2 // redrive produced some records, then failed: stdout says which were moved, stderr what failed
)

// Options are what both subcommands need: how to connect, the dead-letter
// topic and a time limit. A value; the commands neither keep nor modify it.
type Options struct {
	Conn    status.Conn
	Topic   string        // --dead-letter-topic; "" for the config's dead_letter.topic
	Timeout time.Duration // for the whole command
}

// InspectOptions are inspect's inputs.
type InspectOptions struct {
	Options
	Format string // "text" (the default) or "json"
}

// RedriveOptions are redrive's inputs.
type RedriveOptions struct {
	Options
	To        string // destination topic; "" for each record's origin topic
	Select    Selection
	BatchSize int // records per ProduceSync; 0 is defaultBatchSize
	// KeepTimestamps keeps each dead letter's timestamp on the redriven
	// record; without it the record gets the time of the redrive and the
	// old timestamp goes in HeaderOriginalTimestampMs.
	KeepTimestamps bool
	// AllowPartial redrives what is left of an offset range that is partly
	// below its partition's log start; without it such a range fails, with
	// nothing produced.
	AllowPartial bool
}

const defaultBatchSize = 500

// session is a connected command: its client, the dead-letter topic and
// the secrets its output must not hold.
type session struct {
	cl      *kgo.Client
	topic   string
	secrets []string
}

// open loads the connection settings, finds the topic and connects, with
// extra client options.
func (o Options) open(ctx context.Context, extra ...kgo.Opt) (*session, error) {
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("--timeout (%v) must be positive", o.Timeout)
	}
	in, err := o.Conn.Load()
	if err != nil {
		return nil, err
	}
	s := &session{secrets: in.Target.Secrets()}
	if s.topic, err = deadLetterTopic(o.Topic, in, o.Conn.ConfigPath != ""); err != nil {
		return s, err
	}
	if s.cl, err = status.Connect(ctx, in.Target, append(scanOpts(), extra...)...); err != nil {
		return s, err
	}
	return s, nil
}

// Inspect reads the dead-letter topic from its log start to the end offsets
// it had when Inspect started, and writes the Summary to stdout. It returns
// ExitOK, or ExitFailed with the reason on stderr and nothing on stdout.
// Unparsable records are reported in the summary, not as a failure.
func Inspect(ctx context.Context, o InspectOptions, stdout, stderr io.Writer) int {
	var secrets []string
	fail := failer("inspect", stderr, &secrets)
	switch o.Format {
	case "", "text", "json":
	default:
		return fail(fmt.Errorf("--format (%q) must be text or json", o.Format))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	s, err := o.open(ctx)
	if s != nil {
		secrets = s.secrets
	}
	if err != nil {
		return fail(cutShort(ctx, o.Timeout, err))
	}
	defer s.cl.Close()

	spans, err := snapshot(ctx, kadm.NewClient(s.cl), s.topic)
	if err != nil {
		return fail(cutShort(ctx, o.Timeout, err))
	}
	sum := newSummarizer(s.topic, len(spans))
	if err := scan(ctx, s.cl, s.topic, spans, func(r *kgo.Record) error { sum.add(r); return nil }); err != nil {
		return fail(cutShort(ctx, o.Timeout, err))
	}
	var out strings.Builder
	if o.Format == "json" {
		err = writeJSON(&out, sum.summary())
	} else {
		err = writeText(&out, sum.summary())
	}
	if err != nil {
		return fail(err)
	}
	scrub := status.Scrub
	if o.Format == "json" {
		scrub = status.ScrubJSON
	}
	if _, err := io.WriteString(stdout, scrub(out.String(), secrets)); err != nil {
		return fail(err)
	}
	return ExitOK
}

// Redrive reads the selected dead letters (Selection, over the end offsets
// the topic had when it started), checks that each can be placed, and
// produces them (deadletter.Redriven) to --to or their origin topics with an
// idempotent producer and acks from all in-sync replicas, in batches. It
// writes what it moved to stdout and returns ExitOK; ExitFailed when it
// produced nothing (the reason on stderr); ExitPartial when it produced
// some records and then failed. Nothing is deleted from the dead-letter
// topic: a second run writes the records again.
func Redrive(ctx context.Context, o RedriveOptions, stdout, stderr io.Writer) int {
	var secrets []string
	fail := failer("redrive", stderr, &secrets)
	if err := o.Select.validate(); err != nil {
		return fail(err)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = defaultBatchSize
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	s, err := o.open(ctx, kgo.RequiredAcks(kgo.AllISRAcks())) // idempotent is kgo's default, and needs all acks
	if s != nil {
		secrets = s.secrets
	}
	if err != nil {
		return fail(cutShort(ctx, o.Timeout, err))
	}
	defer s.cl.Close()

	spans, err := snapshot(ctx, kadm.NewClient(s.cl), s.topic)
	var gone []string
	if err == nil {
		spans, gone, err = o.Select.narrow(spans)
	}
	if err != nil {
		return fail(cutShort(ctx, o.Timeout, err))
	}
	if len(gone) > 0 {
		what := "the selected range is partly gone from the dead-letter topic: " + strings.Join(gone, ", ")
		if !o.AllowPartial {
			return fail(fmt.Errorf("nothing produced: %s; give --allow-partial to redrive what is left", what))
		}
		fmt.Fprintf(stderr, "dead-letter redrive: %s; redriving what is left (--allow-partial)\n", what)
	}
	// Two passes: the check reads the selection and keeps runs of offsets;
	// the produce pass reads the records again, a batch at a time, in the
	// order of the dead-letter topic, whatever order the fetches came in:
	// a failure then stops at the same record every run.
	sel := newSelector(o.Select, o.To, s.topic)
	if err := scan(ctx, s.cl, s.topic, spans, func(r *kgo.Record) error { sel.add(r); return nil }); err != nil {
		return fail(cutShort(ctx, o.Timeout, err))
	}
	if err := sel.check(); err != nil {
		return fail(fmt.Errorf("nothing produced: %w", err))
	}
	moved, notTried := tally{}, tally{}
	perr := produce(ctx, s.cl, s.topic, sel.plan, o.BatchSize, o.KeepTimestamps, moved, notTried)
	var out strings.Builder
	fmt.Fprintf(&out, "redrove %d of %d selected record%s from %s\n", moved.count(), sel.plan.total, plural(sel.plan.total), s.topic)
	if err := moved.write(&out, "", s.topic); err != nil {
		return fail(err)
	}
	if _, err := io.WriteString(stdout, status.Scrub(out.String(), secrets)); err != nil {
		return fail(err)
	}
	if perr == nil && len(notTried) == 0 {
		return ExitOK
	}
	// Cut short: by a failure, by --timeout or by a signal. stderr says
	// why, which records failed and which were not tried.
	var why strings.Builder
	why.WriteString(cutShort(ctx, o.Timeout, perr).Error())
	if n := notTried.count(); n > 0 {
		fmt.Fprintf(&why, "\n%d record%s not tried:\n", n, plural(n))
		if err := notTried.write(&why, "  ", s.topic); err != nil {
			return fail(err)
		}
	}
	code := fail(errors.New(strings.TrimSuffix(why.String(), "\n")))
	if len(moved) > 0 {
		return ExitPartial
	}
	return code
}

// failer returns the function that reports err on stderr, scrubbed of the
// secrets as they are when it is called, and returns ExitFailed.
func failer(command string, stderr io.Writer, secrets *[]string) func(error) int {
	return func(err error) int {
		fmt.Fprintf(stderr, "dead-letter %s: %s\n", command, status.Scrub(err.Error(), *secrets))
		return ExitFailed
	}
}

// cutShort says so when err came from the command's deadline (--timeout) or
// from a signal (the cause of ctx's cancellation). A nil err is the cut
// alone.
func cutShort(ctx context.Context, timeout time.Duration, err error) error {
	var why string
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		why = fmt.Sprintf("not done within --timeout %v", timeout)
	case ctx.Err() != nil:
		why = fmt.Sprintf("interrupted (%v)", context.Cause(ctx))
	case err != nil:
		return err
	default:
		return errors.New("cut short")
	}
	if err == nil {
		return errors.New(why)
	}
	return fmt.Errorf("%s: %w", why, err)
}
