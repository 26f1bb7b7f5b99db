package dlcmd

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/status"
)

// timeLayout is RFC 3339 in UTC to the millisecond, the precision of the
// headers.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Summary is what inspect reports of a dead-letter topic; its JSON is the
// --format json output, a stable shape (fields are only ever added). A
// value once built, safe for concurrent reads.
type Summary struct {
	Topic      string          `json:"dead_letter_topic"`
	Partitions int             `json:"partitions"` // of the dead-letter topic
	Records    int             `json:"records"`    // read, unparsable ones included
	Origins    []Origin        `json:"origins"`    // by topic, then partition
	Unparsable UnparsableCount `json:"unparsable"`
}

// Origin is the dead letters of one origin topic and partition.
type Origin struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Count     int          `json:"count"`
	Oldest    LetterRef    `json:"oldest"` // the lowest origin offset
	Newest    LetterRef    `json:"newest"` // the highest origin offset
	Errors    []ErrorCount `json:"errors"` // by count, highest first, then by class
}

// LetterRef is one dead letter: where its origin record was and where the
// dead letter is.
type LetterRef struct {
	Offset              int64  `json:"offset"`       // the origin offset
	Timestamp           string `json:"timestamp"`    // the origin record's, RFC 3339 UTC to the millisecond
	FirstFailed         string `json:"first_failed"` // likewise
	DeadLetterPartition int32  `json:"dead_letter_partition"`
	DeadLetterOffset    int64  `json:"dead_letter_offset"`
}

// ErrorCount is how many dead letters of an origin carry an error class.
type ErrorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

// UnparsableCount is the records whose provenance does not parse.
type UnparsableCount struct {
	Count   int          `json:"count"`
	Records []Unparsable `json:"records"` // by partition, then offset
}

// Unparsable is one record whose provenance does not parse, and why.
type Unparsable struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
}

// summarizer builds a Summary from records in any order.
type summarizer struct {
	topic      string
	partitions int
	records    int
	origins    map[originKey]*originAcc
	unparsable []Unparsable
}

type originKey struct {
	topic     string
	partition int32
}

type originAcc struct {
	count          int
	oldest, newest letterAt
	errors         map[string]int
}

// letterAt is a dead letter with its provenance and its place.
type letterAt struct {
	p         deadletter.Provenance
	partition int32
	offset    int64
}

// before orders dead letters by origin offset, then by place: a total order,
// so that oldest and newest do not depend on the order records arrive in.
func (a letterAt) before(b letterAt) bool {
	return cmp.Or(cmp.Compare(a.p.Offset, b.p.Offset), cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset)) < 0
}

func newSummarizer(topic string, partitions int) *summarizer {
	return &summarizer{topic: topic, partitions: partitions, origins: map[originKey]*originAcc{}}
}

func (s *summarizer) add(r *kgo.Record) {
	s.records++
	p, err := deadletter.Parse(r)
	if err != nil {
		s.unparsable = append(s.unparsable, Unparsable{Partition: r.Partition, Offset: r.Offset, Reason: err.Error()})
		return
	}
	l := letterAt{p, r.Partition, r.Offset}
	k := originKey{p.Topic, p.Partition}
	acc := s.origins[k]
	if acc == nil {
		acc = &originAcc{oldest: l, newest: l, errors: map[string]int{}}
		s.origins[k] = acc
	}
	acc.count++
	acc.errors[p.Error]++
	if l.before(acc.oldest) {
		acc.oldest = l
	}
	if acc.newest.before(l) {
		acc.newest = l
	}
}

func (s *summarizer) summary() Summary {
	out := Summary{Topic: s.topic, Partitions: s.partitions, Records: s.records, Origins: []Origin{}}
	keys := slices.SortedFunc(maps.Keys(s.origins), func(a, b originKey) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	for _, k := range keys {
		acc := s.origins[k]
		o := Origin{Topic: k.topic, Partition: k.partition, Count: acc.count, Oldest: acc.oldest.ref(), Newest: acc.newest.ref()}
		for e, n := range acc.errors {
			o.Errors = append(o.Errors, ErrorCount{e, n})
		}
		slices.SortFunc(o.Errors, func(a, b ErrorCount) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Error, b.Error)) })
		out.Origins = append(out.Origins, o)
	}
	out.Unparsable.Records = slices.SortedFunc(slices.Values(s.unparsable), func(a, b Unparsable) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	if out.Unparsable.Records == nil {
		out.Unparsable.Records = []Unparsable{}
	}
	out.Unparsable.Count = len(s.unparsable)
	return out
}

func (l letterAt) ref() LetterRef {
	return LetterRef{
		Offset:              l.p.Offset,
		Timestamp:           formatTime(l.p.Timestamp),
		FirstFailed:         formatTime(l.p.FirstFailed),
		DeadLetterPartition: l.partition,
		DeadLetterOffset:    l.offset,
	}
}

// writeJSON writes s indented, as --format json, with the runes a terminal
// acts on escaped (status.EncodeJSON): a record's headers are anyone's
// bytes.
func writeJSON(w io.Writer, s Summary) error { return status.EncodeJSON(w, s) }

// writeText writes s as a table, one row per origin partition, then the
// unparsable records and a summary line:
//
//	TOPIC   PARTITION  COUNT  OLDEST  OLDEST TIMESTAMP          OLDEST FIRST FAILED       NEWEST  NEWEST TIMESTAMP  NEWEST FIRST FAILED  ERRORS
//	orders  3          2      1207    2026-03-01T12:00:00.000Z  2026-03-01T12:05:00.000Z  1300    ...               ...                  2 "http: status=503"
//	unparsable orders.dlq/0@7: header dead_letter_topic: missing
//	dead-letter topic orders.dlq: 3 records in 1 partition: 2 from 1 origin partition, 1 unparsable
//
// Error classes are quoted, and topics and reasons escaped
// (status.TextSafe): a record's headers are anyone's bytes.
func writeText(w io.Writer, s Summary) error {
	if len(s.Origins) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOUNT\tOLDEST\tOLDEST TIMESTAMP\tOLDEST FIRST FAILED\tNEWEST\tNEWEST TIMESTAMP\tNEWEST FIRST FAILED\tERRORS")
		for _, o := range s.Origins {
			var errs []string
			for _, e := range o.Errors {
				errs = append(errs, fmt.Sprintf("%d %s", e.Count, strconv.Quote(e.Error)))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", status.TextSafe(o.Topic), o.Partition, o.Count,
				o.Oldest.Offset, o.Oldest.Timestamp, o.Oldest.FirstFailed,
				o.Newest.Offset, o.Newest.Timestamp, o.Newest.FirstFailed, strings.Join(errs, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, u := range s.Unparsable.Records {
		if _, err := fmt.Fprintf(w, "unparsable %s/%d@%d: %s\n", status.TextSafe(s.Topic), u.Partition, u.Offset, status.TextSafe(u.Reason)); err != nil {
			return err
		}
	}
	parsed := s.Records - s.Unparsable.Count
	_, err := fmt.Fprintf(w, "dead-letter topic %s: %d record%s in %d partition%s: %d from %d origin partition%s, %d unparsable\n",
		s.Topic, s.Records, plural(s.Records), s.Partitions, plural(s.Partitions), parsed, len(s.Origins), plural(len(s.Origins)), s.Unparsable.Count)
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// formatTime formats t as the output does, a time past the year 9999 (a
// header can say anything) as the last instant RFC 3339 can write.
func formatTime(t time.Time) string { return status.FormatTime(t, timeLayout) }
