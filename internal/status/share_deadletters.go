package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/dlscan"
)

// defaultShareReportFor is kafka_share's dead_letter.report_for default,
// used without -c; TestShareReportForDefault checks it against the spec.
const defaultShareReportFor = 24 * time.Hour

// How much of the dead-letter topic `status --share-group` reads at most.
// A share group commits no offsets, so its dead-letter report is the
// dead-letter topic itself: status reads each partition from the first
// record at or after the window's start (ListOffsetsAfterMilli) to its
// end, within these bounds.
const (
	// shareDLMaxRecords is the most records read from one partition: when
	// the window holds more, its oldest are not read, and the count is a
	// lower bound ("at least").
	shareDLMaxRecords = 10_000
	// shareDLTail is how many records before that first one are read too,
	// per partition. A dead letter keeps its origin record's timestamp,
	// which the offset lookup goes by, so the letter of a record produced
	// before the window and dead-lettered within it can sit before the
	// window's first timestamp (or, with no timestamp in the window, at the
	// end): the shareDLTail records before it are read whatever their
	// timestamps, and every record is counted by when it was written.
	shareDLTail = 1_000
	// shareDLMaxBytes bounds the bytes read (keys, values, header keys and
	// values), all partitions together: at it the read stops, and the
	// count is a lower bound.
	shareDLMaxBytes = 32 << 20
)

// shareDLFetchMaxBytes bounds one fetch of the dead-letter read, so that
// what kgo buffers stays near shareDLMaxBytes.
const shareDLFetchMaxBytes = 4 << 20

// shareDLLimits are the bounds of one read: the constants above, smaller
// in tests.
type shareDLLimits struct{ records, tail, bytes int64 }

var defaultShareDLLimits = shareDLLimits{records: shareDLMaxRecords, tail: shareDLTail, bytes: shareDLMaxBytes}

// ShareDeadLetters is what status read of one share group's dead letters:
// the records of its dead-letter topic that carry the group in
// deadletter.HeaderShareGroup and were written within ReportFor. A value
// once returned, safe for concurrent reads.
type ShareDeadLetters struct {
	Topic     string        // the dead-letter topic read
	ReportFor time.Duration // how far back: dead_letter.report_for
	Count     int           // the group's dead letters written within ReportFor
	// Since is when the earliest of them was written; Last is the latest
	// (nil when Count is 0).
	Since time.Time
	Last  *ShareDeadLetter
	// Capped says what bound the read ("" when the window was read
	// whole): Count is then a lower bound.
	Capped string
	// Missing: the topic does not exist (nothing was ever written to it).
	Missing bool
	// Read is how many records status read, of every group and input.
	Read int64
	// Malformed counts the records that name the group but whose
	// provenance does not parse (deadletter.Parse: anyone who may produce
	// to the topic writes its headers); MalformedErr names the first, where
	// it is and why.
	Malformed    int
	MalformedErr string
	// Err is why the read stopped before the end, or never started; what
	// was read before is counted.
	Err error
}

// ShareDeadLetter is one dead letter of a share group.
type ShareDeadLetter struct {
	Topic     string // the origin record's topic, partition and offset
	Partition int32
	Offset    int64
	// At is when it was written: its dead_letter_first_failed_ms, which a
	// kafka_share input sets to the time of the last failure, just before
	// the write.
	At                  time.Time
	Error               string // the error class of the last failure
	DeadLetterPartition int32  // where it is in the dead-letter topic
	DeadLetterOffset    int64
}

// after orders dead letters by when they were written, then by place.
func (l *ShareDeadLetter) after(o *ShareDeadLetter) bool {
	if !l.At.Equal(o.At) {
		return l.At.After(o.At)
	}
	if l.DeadLetterPartition != o.DeadLetterPartition {
		return l.DeadLetterPartition > o.DeadLetterPartition
	}
	return l.DeadLetterOffset > o.DeadLetterOffset
}

// errReadCapped stops a read at shareDLLimits.bytes.
var errReadCapped = errors.New("read capped")

// CollectShareDeadLetters reads group's dead letters written to topic in
// the reportFor before now, with cl, which must keep control records
// (dlscan.Opts) and consume nothing else. It never fails: a topic that does
// not exist is Missing, an error stops the read and is kept in Err with
// what was counted before.
func CollectShareDeadLetters(ctx context.Context, cl *kgo.Client, group, topic string, reportFor time.Duration, now time.Time) *ShareDeadLetters {
	return collectShareDeadLetters(ctx, cl, group, topic, reportFor, now, defaultShareDLLimits)
}

func collectShareDeadLetters(ctx context.Context, cl *kgo.Client, group, topic string, reportFor time.Duration, now time.Time, lim shareDLLimits) *ShareDeadLetters {
	d := &ShareDeadLetters{Topic: topic, ReportFor: reportFor}
	since := now.Add(-reportFor)
	adm := kadm.NewClient(cl)
	spans, err := dlscan.Snapshot(ctx, adm, topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		d.Missing = true
		return d
	}
	if err != nil {
		d.Err = err
		return d
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic)
	if err == nil {
		err = after.Error()
	}
	if err != nil {
		d.Err = fmt.Errorf("dead-letter topic %q: offsets after %s: %w", topic, FormatTime(since, time.RFC3339), err)
		return d
	}
	for p, s := range spans {
		first := s.To // no record at or after since
		if o, ok := after.Lookup(topic, p); ok && o.Offset >= 0 {
			first = min(o.Offset, s.To)
		}
		from := max(s.From, first-lim.tail)
		if from < s.To-lim.records {
			from = s.To - lim.records
			d.Capped = fmt.Sprintf("the last %d records of a partition", lim.records)
		}
		spans[p] = dlscan.Span{From: from, To: s.To}
	}

	var read int64
	want := []byte(group)
	err = dlscan.Scan(ctx, cl, topic, spans, func(r *kgo.Record) error {
		read += recordBytes(r)
		d.Read++
		if ofGroup(r, want) {
			d.add(r, since)
		}
		if read >= lim.bytes {
			return errReadCapped
		}
		return nil
	})
	switch {
	case errors.Is(err, errReadCapped):
		d.Capped = fmt.Sprintf("its cap of %d bytes (%d read; the latest letters may be unread)", lim.bytes, read)
	case err != nil:
		d.Err = err
	}
	return d
}

// add counts r, a record that names the group, when it parses and was
// written at or after since.
func (d *ShareDeadLetters) add(r *kgo.Record, since time.Time) {
	p, err := deadletter.Parse(r)
	if err != nil {
		if d.Malformed++; d.Malformed == 1 {
			d.MalformedErr = fmt.Sprintf("%s/%d@%d: %v", d.Topic, r.Partition, r.Offset, err)
		}
		return
	}
	if p.FirstFailed.Before(since) {
		return
	}
	l := &ShareDeadLetter{Topic: p.Topic, Partition: p.Partition, Offset: p.Offset, At: p.FirstFailed, Error: p.Error,
		DeadLetterPartition: r.Partition, DeadLetterOffset: r.Offset}
	if d.Count == 0 || l.At.Before(d.Since) {
		d.Since = l.At
	}
	if d.Last == nil || l.after(d.Last) {
		d.Last = l
	}
	d.Count++
}

// ofGroup reports whether r carries group in a deadletter.HeaderShareGroup
// header (Parse then refuses a record with two).
func ofGroup(r *kgo.Record, group []byte) bool {
	for _, h := range r.Headers {
		if h.Key == deadletter.HeaderShareGroup && string(h.Value) == string(group) {
			return true
		}
	}
	return false
}

// recordBytes is what a record read weighs: its key, value and headers.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// Complete reports whether Count is exact: the window was read whole.
func (d *ShareDeadLetters) Complete() bool { return d.Capped == "" && d.Err == nil }

// window formats a report_for as it is written: "24h", "1h30m", "90s" as
// "1m30s".
func window(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// line is the text of the "dead-lettered:" line: "3 in the last 24h to
// orders-dlq, the last orders/0@41 at 2026-01-01T12:00:00Z: http 503".
func (d *ShareDeadLetters) line() string {
	var b strings.Builder
	switch {
	case d.Topic == "" && d.Err != nil:
		fmt.Fprintf(&b, "unknown (%s)", TextSafe(d.Err.Error()))
		return b.String()
	case d.Complete():
		fmt.Fprintf(&b, "%d", d.Count)
	default:
		fmt.Fprintf(&b, "at least %d", d.Count)
	}
	fmt.Fprintf(&b, " in the last %s to %s", window(d.ReportFor), TextSafe(d.Topic))
	switch {
	case d.Missing:
		b.WriteString(" (no such topic)")
	case d.Err != nil:
		fmt.Fprintf(&b, " (the read stopped: %s)", TextSafe(d.Err.Error()))
	case d.Capped != "":
		fmt.Fprintf(&b, " (the read stopped at %s)", d.Capped)
	}
	if l := d.Last; l != nil {
		fmt.Fprintf(&b, ", the last %s/%d@%d at %s", TextSafe(l.Topic), l.Partition, l.Offset, FormatTime(l.At, time.RFC3339))
		if l.Error != "" {
			fmt.Fprintf(&b, ": %s", TextSafe(l.Error))
		}
	}
	return b.String()
}
