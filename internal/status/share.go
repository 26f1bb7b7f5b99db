package status

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/plugin"
)

// ShareReport is `status --share-group`'s answer: a share group (KIP-932,
// the kafka_share input's) as the brokers hold it. A value once returned,
// safe for concurrent reads.
type ShareReport struct {
	Group         string
	State         string // the group's state: Empty, Stable, Dead, ...
	DeliveryLimit int32  // deliveries before the broker archives a record
	LockDuration  int64  // milliseconds a member holds a record it acquired
	Partitions    []SharePartition
	Members       []ShareMember
	// DeadLetters is the group's dead letters of the last report_for, read
	// from its dead-letter topic (CollectShareDeadLetters); nil when status
	// did not look: no topic known, or report_for 0s. Dead-lettering is by
	// design: it changes no exit status.
	DeadLetters *ShareDeadLetters
}

// SharePartition is one share-partition of the group.
type SharePartition struct {
	Topic     string
	Partition int32
	// StartOffset is the share-partition start offset: every record below
	// it is accepted, rejected or archived; -1 when the group has not
	// started reading the partition.
	StartOffset int64
	Lag         int64 // records not yet acknowledged, as the broker counts them; -1: unknown
	Members     int   // members assigned the partition
}

// ShareMember is one member of the group.
type ShareMember struct {
	MemberID, ClientID, ClientHost string
	Partitions                     int // partitions assigned to it
}

// CollectShare reads the share group's limits (plugin.ShareGroupLimits),
// its members and its share-partitions' start offsets and lag.
func CollectShare(ctx context.Context, cl *kgo.Client, group string) (*ShareReport, error) {
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeShareGroups(ctx, group)
	if err == nil {
		err = described.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("describing share group %q: %w", group, err)
	}
	d := described[group]
	offsets, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err == nil {
		err = offsets.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("describing share group %q's offsets: %w", group, err)
	}
	limits, err := plugin.ShareGroupLimits(ctx, cl, group)
	if err != nil {
		return nil, err
	}
	r := &ShareReport{Group: group, State: d.GroupState, DeliveryLimit: limits.DeliveryLimit, LockDuration: limits.LockDuration.Milliseconds()}
	assigned := map[string]int{}
	for _, m := range d.Members {
		n := 0
		for t, ps := range m.Assignment {
			for p := range ps {
				assigned[fmt.Sprintf("%s/%d", t, p)]++
				n++
			}
		}
		r.Members = append(r.Members, ShareMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Partitions: n})
	}
	for _, ps := range offsets[group].Offsets {
		for _, o := range ps {
			r.Partitions = append(r.Partitions, SharePartition{
				Topic: o.Topic, Partition: o.Partition, StartOffset: o.StartOffset, Lag: o.Lag,
				Members: assigned[fmt.Sprintf("%s/%d", o.Topic, o.Partition)],
			})
		}
	}
	slices.SortFunc(r.Partitions, func(a, b SharePartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return r, nil
}

// WriteShareText writes r as a table of share-partitions, then the
// limits, the members and, when status looked, the "dead-lettered:" line
// (and one more when records naming the group do not parse).
func WriteShareText(w io.Writer, r *ShareReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTART OFFSET\tLAG\tMEMBERS")
	for _, p := range r.Partitions {
		lag := "-"
		if p.Lag >= 0 {
			lag = fmt.Sprint(p.Lag)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\n", TextSafe(p.Topic), p.Partition, p.StartOffset, lag, p.Members)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "share group %s: %s, %d members, delivery count limit %d, record lock %d ms\n",
		TextSafe(r.Group), TextSafe(r.State), len(r.Members), r.DeliveryLimit, r.LockDuration)
	for _, m := range r.Members {
		fmt.Fprintf(w, "member %s (%s@%s): %d partitions\n", TextSafe(m.MemberID), TextSafe(m.ClientID), TextSafe(m.ClientHost), m.Partitions)
	}
	if d := r.DeadLetters; d != nil {
		fmt.Fprintf(w, "dead-lettered: %s\n", d.line())
		if d.Malformed > 0 {
			verb := "do"
			if d.Malformed == 1 {
				verb = "does"
			}
			fmt.Fprintf(w, "dead-lettered: %d record%s naming share group %s %s not parse, the first %s\n",
				d.Malformed, plural(d.Malformed), TextSafe(r.Group), verb, TextSafe(d.MalformedErr))
		}
	}
	return nil
}

// jsonShareReport is the JSON form of a ShareReport.
type jsonShareReport struct {
	Group         string               `json:"share_group"`
	State         string               `json:"state"`
	DeliveryLimit int32                `json:"delivery_count_limit"`
	LockDuration  int64                `json:"record_lock_duration_ms"`
	Partitions    []jsonSharePartition `json:"partitions"`
	Members       []jsonShareMember    `json:"members"`
	DeadLettered  *jsonShareDead       `json:"dead_lettered"`
}

// jsonShareDead is ShareDeadLetters, named as kafka_watermark's
// "dead_lettered" is where they mean the same: "count", "since" (the
// earliest), "error" (the last failure's class). "complete" is false when
// "count" is a lower bound ("capped" or "read_error" says why); "since" and
// "last" are null when "count" is 0.
type jsonShareDead struct {
	Topic          string           `json:"topic"` // the dead-letter topic
	ReportForS     int64            `json:"report_for_s"`
	Count          int              `json:"count"`
	Complete       bool             `json:"complete"`
	Since          *string          `json:"since"`
	Error          string           `json:"error"`
	Last           *jsonShareLetter `json:"last"`
	TopicMissing   bool             `json:"topic_missing"`
	Malformed      int              `json:"malformed"`
	MalformedError string           `json:"malformed_error,omitempty"`
	Capped         string           `json:"capped,omitempty"`
	ReadError      string           `json:"read_error,omitempty"`
	RecordsRead    int64            `json:"records_read"` // of every group and input
}

// jsonShareLetter is a ShareDeadLetter: the origin record, when it was
// written, and where it is in the dead-letter topic.
type jsonShareLetter struct {
	Topic               string `json:"topic"`
	Partition           int32  `json:"partition"`
	Offset              int64  `json:"offset"`
	Time                string `json:"time"` // RFC 3339, UTC, to the millisecond
	Error               string `json:"error"`
	DeadLetterPartition int32  `json:"dead_letter_partition"`
	DeadLetterOffset    int64  `json:"dead_letter_offset"`
}

// newJSONShareDead is d as the JSON shows it; nil for nil.
func newJSONShareDead(d *ShareDeadLetters) *jsonShareDead {
	if d == nil {
		return nil
	}
	j := &jsonShareDead{Topic: d.Topic, ReportForS: int64(d.ReportFor / time.Second), Count: d.Count, Complete: d.Complete(),
		TopicMissing: d.Missing, Malformed: d.Malformed, MalformedError: d.MalformedErr, Capped: d.Capped, RecordsRead: d.Read}
	if d.Err != nil {
		j.ReadError = d.Err.Error()
	}
	if l := d.Last; l != nil {
		since := FormatTime(d.Since, sinceJSON)
		j.Since, j.Error = &since, l.Error
		j.Last = &jsonShareLetter{Topic: l.Topic, Partition: l.Partition, Offset: l.Offset, Time: FormatTime(l.At, sinceJSON), Error: l.Error,
			DeadLetterPartition: l.DeadLetterPartition, DeadLetterOffset: l.DeadLetterOffset}
	}
	return j
}

type jsonSharePartition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
	Lag         *int64 `json:"lag"` // null when the broker does not know
	Members     int    `json:"members"`
}

type jsonShareMember struct {
	MemberID   string `json:"member_id"`
	ClientID   string `json:"client_id"`
	ClientHost string `json:"client_host"`
	Partitions int    `json:"partitions"`
}

// WriteShareJSON writes r as one JSON document.
func WriteShareJSON(w io.Writer, r *ShareReport) error {
	doc := jsonShareReport{Group: r.Group, State: r.State, DeliveryLimit: r.DeliveryLimit, LockDuration: r.LockDuration,
		Partitions: []jsonSharePartition{}, Members: []jsonShareMember{}, DeadLettered: newJSONShareDead(r.DeadLetters)}
	for _, p := range r.Partitions {
		jp := jsonSharePartition{Topic: p.Topic, Partition: p.Partition, StartOffset: p.StartOffset, Members: p.Members}
		if p.Lag >= 0 {
			jp.Lag = &p.Lag
		}
		doc.Partitions = append(doc.Partitions, jp)
	}
	for _, m := range r.Members {
		doc.Members = append(doc.Members, jsonShareMember(m))
	}
	return EncodeJSON(w, doc)
}
