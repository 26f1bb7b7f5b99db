package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteText writes r as a table, one row per partition, and a summary line:
//
//	TOPIC   PARTITION  COMMITTED  LOG END  LAG  DELIVERED ABOVE  STALLED
//	orders  0          1200       1500     300  50               yes: offsets 1200-1209 for 4m12s (since 2026-01-01T00:00:00Z), 3 attempts, by sink@pod-7: http 503
//	orders  1          900        900      0    0                no
//	group orders-to-http: 1 of 2 partitions stalled
//
// A partition without a commit shows "-" for COMMITTED and LAG. Metadata
// that was not used is listed after the table.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG END\tLAG\tDELIVERED ABOVE\tSTALLED")
	for _, p := range r.Partitions {
		committed, lag := "-", "-"
		if l, ok := p.Lag(); ok {
			committed, lag = strconv.FormatInt(p.Committed, 10), strconv.FormatInt(l, 10)
		}
		stalled := "no"
		if s := p.Stall; s != nil {
			stalled = fmt.Sprintf("yes: offsets %d-%d for %s (since %s), %d attempt%s",
				s.First, s.Last, stallAge(r.At, s.Since), s.Since.UTC().Format(time.RFC3339), s.Attempts, plural(s.Attempts))
			if s.Member != "" {
				stalled += ", by " + s.Member
			}
			if s.Reason != "" {
				stalled += ": " + s.Reason
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d\t%s\n", p.Topic, p.Partition, committed, p.LogEnd, lag, p.DeliveredAbove, stalled)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Partitions {
		if p.MetadataErr != nil {
			if _, err := fmt.Fprintf(w, "%s/%d: commit metadata not used: %v\n", p.Topic, p.Partition, p.MetadataErr); err != nil {
				return err
			}
		}
	}
	var err error
	switch n := r.Stalled(); {
	case len(r.Partitions) == 0:
		_, err = fmt.Fprintf(w, "group %s: no partitions with commits\n", r.Group)
	case n == 0:
		_, err = fmt.Fprintf(w, "group %s: healthy, none of %d partition%s stalled\n", r.Group, len(r.Partitions), plural(len(r.Partitions)))
	default:
		_, err = fmt.Fprintf(w, "group %s: %d of %d partition%s stalled\n", r.Group, n, len(r.Partitions), plural(len(r.Partitions)))
	}
	return err
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
// for a partition without a commit; "stall" is null when not stalled;
// "metadata_error" is present only when metadata was not used.
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
	MetadataError  string     `json:"metadata_error,omitempty"`
}

type jsonStall struct {
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	Since       string `json:"since"` // RFC 3339, UTC, to the millisecond
	AgeS        int64  `json:"age_s"` // whole seconds since Since, at the report's time
	Attempts    int    `json:"attempts"`
	Reason      string `json:"reason"`
	Member      string `json:"member"`
}

// WriteJSON writes r as one JSON object, indented, with a final newline:
//
//	{"group": "g", "healthy": false, "partitions": [{"topic": "orders", "partition": 0,
//	  "committed": 1200, "log_end": 1500, "lag": 300, "delivered_above": 50, "stalled": true,
//	  "stall": {"first_offset": 1200, "last_offset": 1209, "since": "2026-01-01T00:00:00.000Z",
//	  "age_s": 252, "attempts": 3, "reason": "http 503", "member": "sink@pod-7"}}]}
func WriteJSON(w io.Writer, r *Report) error {
	doc := jsonReport{Group: r.Group, Healthy: r.Healthy(), Partitions: []jsonPartition{}}
	for _, p := range r.Partitions {
		jp := jsonPartition{
			Topic:          p.Topic,
			Partition:      p.Partition,
			LogEnd:         p.LogEnd,
			DeliveredAbove: p.DeliveredAbove,
			Stalled:        p.Stalled(),
		}
		if l, ok := p.Lag(); ok {
			committed := p.Committed
			jp.Committed, jp.Lag = &committed, &l
		}
		if s := p.Stall; s != nil {
			jp.Stall = &jsonStall{
				FirstOffset: s.First,
				LastOffset:  s.Last,
				Since:       s.Since.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
				AgeS:        int64(stallAge(r.At, s.Since) / time.Second),
				Attempts:    s.Attempts,
				Reason:      s.Reason,
				Member:      s.Member,
			}
		}
		if p.MetadataErr != nil {
			jp.MetadataError = p.MetadataErr.Error()
		}
		doc.Partitions = append(doc.Partitions, jp)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
