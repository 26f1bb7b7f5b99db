package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// WriteText writes r as a table, one row per partition, then one line per
// report a partition carries, and a summary line:
//
//	TOPIC   PARTITION  COMMITTED  LOG END  LAG  DELIVERED ABOVE  STALLED  LOST  DEAD-LETTERED
//	orders  0          1200       1500     300  50               yes      -     -
//	orders  1          1500       1500     0    0                no       1100  12
//	orders/0: stalled: offsets 1200-1209 for 4m12s (since 2026-01-01T00:00:00Z), 3 attempts, by sink@pod-7: http 503
//	orders/1: lost: 1100 (offsets 100-1499, retention, since 2026-01-01T00:00:00Z)
//	orders/1: dead-lettered: 12 (offsets 100-140, http 503, since 2026-01-01T11:00:00Z)
//	group orders-to-http: 1 of 2 partitions stalled; 1 of 2 lost records before delivery; 1 of 2 dead-lettered records
//
// The table holds only short cells: STALLED is yes or no, LOST and
// DEAD-LETTERED the number of offsets or "-". What a report says at length
// (a stall's error class is the sink's message, hundreds of characters)
// is on its own line after the table: in a cell it set the width of its
// column, so that every other row was padded to it, ~300 columns of spaces
// in a file or a pipe, where nothing wraps the lines.
//
// A stalled partition whose commit had room for the stall's mark only says
// "stalled: at offset 1200 (the rest of the stall did not fit the commit
// metadata)". A partition without a commit shows "-" for COMMITTED and LAG.
// LAG counts the records that exist: from the committed offset or the log
// start, whichever is higher. LOST counts the offsets of the commit's loss
// report and those status sees lost below the log start (lost). The columns
// that came later come last, so that the columns before them read as they
// did before they existed. Metadata that was not used, then the partitions
// not consumed, are listed after the reports.
//
// Dead-lettering is by design (the input sets aside records its output
// refuses, so that the partition flows): unlike a loss, it does not keep
// the summary from calling the group healthy.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG END\tLAG\tDELIVERED ABOVE\tSTALLED\tLOST\tDEAD-LETTERED")
	for _, p := range r.Partitions {
		committed, lag := "-", "-"
		if l, ok := p.Lag(); ok {
			committed, lag = strconv.FormatInt(p.Committed, 10), strconv.FormatInt(l, 10)
		}
		stalled := "no"
		if p.Stall != nil {
			stalled = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", TextSafe(p.Topic), p.Partition, committed, p.LogEnd, lag, p.DeliveredAbove,
			stalled, lostCount(p), deadLetteredCount(p.DeadLetter))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Partitions {
		for _, d := range []struct{ what, text string }{
			{"stalled", stallText(r.At, p.Stall)},
			{"lost", lost(p)},
			{"dead-lettered", deadLettered(p.DeadLetter)},
		} {
			if d.text == "" {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s/%d: %s: %s\n", TextSafe(p.Topic), p.Partition, d.what, d.text); err != nil {
				return err
			}
		}
	}
	for _, p := range r.Partitions {
		if p.MetadataErr != nil {
			if _, err := fmt.Fprintf(w, "%s/%d: commit metadata not used: %s\n", TextSafe(p.Topic), p.Partition, TextSafe(p.MetadataErr.Error())); err != nil {
				return err
			}
		}
	}
	for _, p := range r.Partitions {
		if p.NotConsumed {
			waits := "its log holds no record"
			switch n := p.LogEnd - p.LogStart; {
			case n == 1:
				waits = fmt.Sprintf("1 record waits (offset %d)", p.LogStart)
			case n > 1:
				waits = fmt.Sprintf("%d records wait (offsets %d-%d)", n, p.LogStart, p.LogEnd-1)
			}
			if _, err := fmt.Fprintf(w, "%s/%d: not consumed: no commit, and no member of the group is assigned it; %s\n", TextSafe(p.Topic), p.Partition, waits); err != nil {
				return err
			}
		}
	}
	// Only a group whose exit status is ExitHealthy is called healthy
	// here; the JSON's "healthy" leaves losses out (a group that lost
	// records and flows is healthy there).
	var extra string
	for _, c := range []struct {
		n    int
		what string
	}{{r.Lost(), "lost records before delivery"}, {r.NotConsumed(), "not consumed"}, {r.DeadLettered(), "dead-lettered records"}} {
		if c.n > 0 {
			extra += fmt.Sprintf("; %d of %d %s", c.n, len(r.Partitions), c.what)
		}
	}
	var err error
	group := TextSafe(r.Group)
	switch n, all := r.Stalled(), len(r.Partitions); {
	case all == 0:
		_, err = fmt.Fprintf(w, "group %s: no partitions with commits\n", group)
	case r.ExitStatus() == ExitHealthy:
		_, err = fmt.Fprintf(w, "group %s: healthy, none of %d partition%s stalled%s\n", group, all, plural(all), extra)
	case n == 0:
		_, err = fmt.Fprintf(w, "group %s: none of %d partition%s stalled%s\n", group, all, plural(all), extra)
	default:
		_, err = fmt.Fprintf(w, "group %s: %d of %d partition%s stalled%s\n", group, n, all, plural(all), extra)
	}
	return err
}

// lostCount is the LOST cell of p: the offsets its commit's loss report
// counts plus those status sees lost below the log start (the two never
// overlap: GoneBelowStart leaves out what the report names); "-" for none.
func lostCount(p Partition) string {
	var n int64
	if l := p.Loss; l != nil {
		n += l.Count
	}
	if g := p.BelowStart; g != nil {
		n += g.Count
	}
	if p.Loss == nil && p.BelowStart == nil {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// lost is what p's "lost:" line says: the loss report its commit carries,
// as "20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)", then,
// after "; ", what status sees below the log start, as "50 (offsets
// 100-149, retention, below the log start 150: seen by status)"; "" for
// none.
func lost(p Partition) string {
	var cells []string
	if l := p.Loss; l != nil {
		cells = append(cells, reportCell(l.Report, l.Count))
	}
	if g := p.BelowStart; g != nil {
		cells = append(cells, fmt.Sprintf("%d (offsets %d-%d, %s, below the log start %d: seen by status)", g.Count, g.First, g.Last, g.Cause(), g.LogStart))
	}
	return strings.Join(cells, "; ")
}

// stallText is what a stalled partition's "stalled:" line says: "offsets
// 1200-1209 for 4m12s (since 2026-01-01T00:00:00Z), 3 attempts, by
// sink@pod-7: http 503", or, when the commit carried only the stall's mark,
// what the mark says: "at offset 1200 (the rest of the stall did not fit
// the commit metadata)"; "" for s nil.
func stallText(at time.Time, s *commitmeta.Stall) string {
	switch {
	case s == nil:
		return ""
	case s.MarkOnly:
		return fmt.Sprintf("at offset %d (the rest of the stall did not fit the commit metadata)", s.First)
	}
	text := fmt.Sprintf("offsets %d-%d for %s (since %s), %d attempt%s",
		s.First, s.Last, stallAge(at, s.Since), FormatTime(s.Since, time.RFC3339), s.Attempts, plural(s.Attempts))
	if s.Member != "" {
		text += ", by " + s.Member
	}
	if s.Reason != "" {
		text += ": " + s.Reason
	}
	return text
}

// deadLetteredCount is the DEAD-LETTERED cell of a report: how many
// offsets it counts; "-" for none.
func deadLetteredCount(d *commitmeta.DeadLetter) string {
	if d == nil {
		return "-"
	}
	return strconv.FormatInt(d.Count, 10)
}

// deadLettered is what a "dead-lettered:" line says, in lost's form with
// the error class in the cause's place: "12 (offsets 100-140, http 503,
// since 2026-01-01T11:00:00Z)"; "" for none.
func deadLettered(d *commitmeta.DeadLetter) string {
	if d == nil {
		return ""
	}
	return reportCell(d.Report, d.Count)
}

// reportCell is a report that counts offsets (a loss, a dead letter) as the
// "lost:" and "dead-lettered:" lines show it: "<count> (offsets
// <first>-<last>, <reason>, since <since>)", without the reason and its
// comma when it is empty. A loss read from a commit always has one, its
// cause; a dead letter of a failure without an error class may not.
func reportCell(r commitmeta.Report, count int64) string {
	reason := ""
	if r.Reason != "" {
		reason = r.Reason + ", "
	}
	return fmt.Sprintf("%d (offsets %d-%d, %ssince %s)", count, r.First, r.Last, reason, FormatTime(r.Since, time.RFC3339))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// stallAge is how long a stall has lasted at the report's time, to the
// second; a Since after it (clock skew between hosts) is an age of 0s.
func stallAge(at, since time.Time) time.Duration {
	return max(at.Sub(since), 0).Truncate(time.Second)
}

// The JSON document, one object. Its keys are a contract (monitoring reads
// them): add keys, never rename or remove one. "committed" and "lag" are null
// for a partition without a commit; "stall" is null when not stalled, and
// has "mark_only" true, with null "last_offset", "since", "age_s" and
// "attempts", when the commit carried only the stall's mark; "lost" is null
// when the commit carries no loss report; "lost_below_log_start" is null
// unless status sees the commit below the log start with records there not
// accounted for (Partition.BelowStart); "not_consumed" is true for a
// partition without a commit that no member consumes; "dead_lettered" is
// null when it carries no dead-letter report; "metadata_error" is present
// only when metadata, or a report in it, was not used. "healthy" is false
// when a partition is stalled, or not consumed with records waiting
// (Report.Healthy): a group that lost or dead-lettered records and flows is
// healthy.
type jsonReport struct {
	Group      string          `json:"group"`
	Healthy    bool            `json:"healthy"`
	Partitions []jsonPartition `json:"partitions"`
}

type jsonPartition struct {
	Topic          string     `json:"topic"`
	Partition      int32      `json:"partition"`
	Committed      *int64     `json:"committed"`
	LogEnd         int64      `json:"log_end"`
	Lag            *int64     `json:"lag"`
	DeliveredAbove int64      `json:"delivered_above"`
	Stalled        bool       `json:"stalled"`
	Stall          *jsonStall `json:"stall"`
	Lost           *jsonLoss  `json:"lost"`
	DeadLettered   *jsonDead  `json:"dead_lettered"`
	MetadataError  string     `json:"metadata_error,omitempty"`

	// Added after the keys above, in the order they came.
	LogStart          int64           `json:"log_start"`
	LostBelowLogStart *jsonBelowStart `json:"lost_below_log_start"`
	NotConsumed       bool            `json:"not_consumed"`
}

type jsonStall struct {
	FirstOffset int64   `json:"first_offset"`
	LastOffset  *int64  `json:"last_offset"`
	Since       *string `json:"since"` // RFC 3339, UTC, to the millisecond
	AgeS        *int64  `json:"age_s"` // whole seconds since Since, at the report's time
	Attempts    *int    `json:"attempts"`
	Reason      string  `json:"reason"`
	Member      string  `json:"member"`
	// MarkOnly: the commit carried only the stall's mark (its metadata had
	// no room for the rest); the fields above but first_offset are null.
	MarkOnly bool `json:"mark_only"`
}

// newJSONStall is s as the JSON shows it at the report's time at.
func newJSONStall(at time.Time, s *commitmeta.Stall) *jsonStall {
	if s.MarkOnly {
		return &jsonStall{FirstOffset: s.First, MarkOnly: true}
	}
	since := FormatTime(s.Since, sinceJSON)
	age := int64(stallAge(at, s.Since) / time.Second)
	last, attempts := s.Last, s.Attempts
	return &jsonStall{FirstOffset: s.First, LastOffset: &last, Since: &since, AgeS: &age, Attempts: &attempts, Reason: s.Reason, Member: s.Member}
}

type jsonLoss struct {
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	Count       int64  `json:"count"` // lost offsets within first_offset..last_offset
	Since       string `json:"since"` // RFC 3339, UTC, to the millisecond
	Cause       string `json:"cause"` // retention, truncation or unknown
}

type jsonDead struct {
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	Count       int64  `json:"count"` // dead-lettered offsets within first_offset..last_offset
	Since       string `json:"since"` // RFC 3339, UTC, to the millisecond: the earliest event
	Error       string `json:"error"` // the error class of the last failure
}

// jsonBelowStart is GoneBelowStart: seen by status, not carried by a
// commit, so it has no "since".
type jsonBelowStart struct {
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	Count       int64  `json:"count"`     // lost offsets within first_offset..last_offset
	LogStart    int64  `json:"log_start"` // the log start the committed offset is below
	Cause       string `json:"cause"`     // retention
}

// sinceJSON is the form of "since" in the JSON: RFC 3339 in UTC, to the
// millisecond the metadata keeps.
const sinceJSON = "2006-01-02T15:04:05.000Z07:00"

// WriteJSON writes r as one JSON object, indented, with a final newline:
//
//	{"group": "g", "healthy": false, "partitions": [{"topic": "orders", "partition": 0,
//	  "committed": 1200, "log_end": 1500, "lag": 300, "delivered_above": 50, "stalled": true,
//	  "stall": {"first_offset": 1200, "last_offset": 1209, "since": "2026-01-01T00:00:00.000Z",
//	  "age_s": 252, "attempts": 3, "reason": "http 503", "member": "sink@pod-7", "mark_only": false},
//	  "lost": {"first_offset": 100, "last_offset": 1199, "count": 1100,
//	  "since": "2026-01-01T00:00:00.000Z", "cause": "retention"},
//	  "dead_lettered": {"first_offset": 100, "last_offset": 140, "count": 12,
//	  "since": "2026-01-01T11:00:00.000Z", "error": "http 503"}}]}
func WriteJSON(w io.Writer, r *Report) error {
	doc := jsonReport{Group: r.Group, Healthy: r.Healthy(), Partitions: []jsonPartition{}}
	for _, p := range r.Partitions {
		jp := jsonPartition{
			Topic:          p.Topic,
			Partition:      p.Partition,
			LogEnd:         p.LogEnd,
			DeliveredAbove: p.DeliveredAbove,
			Stalled:        p.Stalled(),
			LogStart:       p.LogStart,
			NotConsumed:    p.NotConsumed,
		}
		if l, ok := p.Lag(); ok {
			committed := p.Committed
			jp.Committed, jp.Lag = &committed, &l
		}
		if s := p.Stall; s != nil {
			jp.Stall = newJSONStall(r.At, s)
		}
		if l := p.Loss; l != nil {
			jp.Lost = &jsonLoss{
				FirstOffset: l.First,
				LastOffset:  l.Last,
				Count:       l.Count,
				Since:       FormatTime(l.Since, sinceJSON),
				Cause:       l.Reason,
			}
		}
		if g := p.BelowStart; g != nil {
			jp.LostBelowLogStart = &jsonBelowStart{FirstOffset: g.First, LastOffset: g.Last, Count: g.Count, LogStart: g.LogStart, Cause: g.Cause()}
		}
		if d := p.DeadLetter; d != nil {
			jp.DeadLettered = &jsonDead{
				FirstOffset: d.First,
				LastOffset:  d.Last,
				Count:       d.Count,
				Since:       FormatTime(d.Since, sinceJSON),
				Error:       d.Reason,
			}
		}
		if p.MetadataErr != nil {
			jp.MetadataError = p.MetadataErr.Error()
		}
		doc.Partitions = append(doc.Partitions, jp)
	}
	return EncodeJSON(w, doc)
}
