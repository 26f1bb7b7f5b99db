package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// ErrUnknownGroup is Collect's error for a group the cluster does not know:
// no committed offset and no members (dead, empty or never created). It is
// most often a typo in the group name, which must not read as healthy.
var ErrUnknownGroup = errors.New("unknown group")

// Query is what Collect reads. A Query is a value; Collect does not keep or
// modify it.
type Query struct {
	Group string

	// Topics restricts the report to these topics, and adds their
	// partitions that have no commit yet. Empty: every partition the group
	// has a commit for.
	Topics []string

	// RegexpTopics reads Topics as regular expressions, unanchored, as the
	// input's regexp_topics does.
	RegexpTopics bool
}

// Report is one group's state as the brokers hold it: per partition, the
// committed offset, the log end, and what the commit metadata says about the
// records above the committed offset.
//
// A Report is a value once Collect returns it: safe for concurrent reads.
type Report struct {
	Group      string
	At         time.Time   // when the offsets were read; a stall's age is measured to it
	Partitions []Partition // sorted by topic, then partition
}

// Partition is one partition of a Report; a value, safe for concurrent
// reads.
type Partition struct {
	Topic     string
	Partition int32

	Committed int64 // the committed offset (the watermark); -1 when the group has none
	LogEnd    int64 // the high watermark: one past the last record

	// DeliveredAbove counts the records above Committed that the commit
	// metadata names as delivered: those a restart skips. 0 when the
	// metadata is not the input's, or is for another offset.
	DeliveredAbove int64

	// Stall is the failed batch that holds the watermark, from the commit
	// metadata; nil when the partition is not stalled.
	Stall *commitmeta.Stall

	// Loss is the records Kafka deleted or rewrote before the input
	// delivered them, from the commit metadata; nil when the commit carries
	// no loss report (the input drops it lost_records_report_for after the
	// loss; status shows what the commit carries, whatever its age). The
	// partition may flow meanwhile: a loss is not a stall.
	Loss *commitmeta.Loss

	// DeadLetter is the records the input dead-lettered lately (the output
	// kept refusing them, and they went to the dead-letter topic), from the
	// commit metadata; nil when the commit carries no dead-letter report.
	// Dead-lettering is by design: it changes no exit status.
	DeadLetter *commitmeta.DeadLetter

	// MetadataErr says why metadata that looked like the input's was not
	// used, or which of its reports was not: malformed, another version, or
	// written for another offset (an offset reset by an admin tool keeps the
	// old metadata). A malformed stall provenance, loss report or
	// dead-letter report leaves that report nil and the others, and the
	// ranges, in use. Another client's metadata is no error. nil when all
	// of it was used.
	MetadataErr error
}

// Lag returns LogEnd - Committed, and false when there is no commit.
func (p Partition) Lag() (int64, bool) {
	if p.Committed < 0 {
		return 0, false
	}
	return p.LogEnd - p.Committed, true
}

// Stalled reports whether p's commit names a stall.
func (p Partition) Stalled() bool { return p.Stall != nil }

// Lost reports whether p's commit carries a loss report.
func (p Partition) Lost() bool { return p.Loss != nil }

// DeadLettered reports whether p's commit carries a dead-letter report.
func (p Partition) DeadLettered() bool { return p.DeadLetter != nil }

// Healthy reports whether no partition is stalled.
func (r *Report) Healthy() bool {
	return !slices.ContainsFunc(r.Partitions, Partition.Stalled)
}

// Stalled returns the number of stalled partitions.
func (r *Report) Stalled() int {
	n := 0
	for _, p := range r.Partitions {
		if p.Stalled() {
			n++
		}
	}
	return n
}

// Lost returns the number of partitions whose commit carries a loss report.
// Healthy does not count them: a partition that lost records may flow.
func (r *Report) Lost() int {
	n := 0
	for _, p := range r.Partitions {
		if p.Lost() {
			n++
		}
	}
	return n
}

// DeadLettered returns the number of partitions whose commit carries a
// dead-letter report. Neither Healthy nor ExitStatus counts them:
// dead-lettering is how a partition keeps flowing past records its output
// refuses.
func (r *Report) DeadLettered() int {
	n := 0
	for _, p := range r.Partitions {
		if p.DeadLettered() {
			n++
		}
	}
	return n
}

// Collect reads q's group through adm: its committed offsets with their
// metadata (OffsetFetch), the partitions of q.Topics (Metadata), their log
// ends (ListOffsets) and, when the group has no commit, its state
// (DescribeGroups, ListGroups) to tell an unknown group (ErrUnknownGroup)
// from one that has not committed yet.
//
// Without q.Topics, commits for topics that no longer exist are left out:
// the broker keeps them until offsets.retention.minutes, but nothing
// consumes them.
//
// Any error, including one partition's, means the report would be
// incomplete: Collect returns no report then, since a partition it cannot
// read may be the stalled one.
func Collect(ctx context.Context, adm *kadm.Client, q Query) (*Report, error) {
	match, err := topicMatcher(q)
	if err != nil {
		return nil, err
	}
	type key struct {
		topic     string
		partition int32
	}
	parts := map[key]*Partition{}
	get := func(topic string, partition int32) *Partition {
		k := key{topic, partition}
		if p, ok := parts[k]; ok {
			return p
		}
		p := &Partition{Topic: topic, Partition: partition, Committed: -1}
		parts[k] = p
		return p
	}

	if len(q.Topics) > 0 {
		var names []string
		if !q.RegexpTopics {
			names = q.Topics
		}
		topics, err := adm.ListTopics(ctx, names...)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		for _, name := range names {
			if td, ok := topics[name]; !ok || td.Err != nil {
				return nil, fmt.Errorf("topic %q: %w", name, cmp.Or(td.Err, error(kerr.UnknownTopicOrPartition)))
			}
		}
		for name, td := range topics {
			if match(name) {
				for _, pd := range td.Partitions {
					get(name, pd.Partition)
				}
			}
		}
	}

	fetched, err := adm.FetchOffsets(ctx, q.Group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		// Some brokers (kfake among them) answer so for a group they do
		// not know, rather than with no offsets.
		return nil, unknownGroup(q.Group, "not found")
	}
	if err != nil {
		return nil, fmt.Errorf("fetch the offsets of group %q: %w", q.Group, err)
	}
	var errs []error
	metas := map[key]string{}
	known := false // the group has a commit, whether or not in the report
	fetched.Each(func(o kadm.OffsetResponse) {
		known = known || o.Err == nil && o.At >= 0
		if !match(o.Topic) {
			return
		}
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("committed offset of %s/%d: %w", o.Topic, o.Partition, o.Err))
			return
		}
		p := get(o.Topic, o.Partition)
		p.Committed = o.At
		if o.At >= 0 {
			metas[key{o.Topic, o.Partition}] = o.Metadata
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if !known {
		if err := checkGroupKnown(ctx, adm, q.Group); err != nil {
			return nil, err
		}
	}

	if len(parts) > 0 {
		var topics []string
		for k := range parts {
			if !slices.Contains(topics, k.topic) {
				topics = append(topics, k.topic)
			}
		}
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("list end offsets: %w", err)
		}
		for k, p := range parts {
			end, ok := ends.Lookup(k.topic, k.partition)
			switch {
			case len(q.Topics) == 0 && (!ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition)):
				// A commit for a topic deleted since: the broker keeps it
				// until offsets.retention.minutes, but nothing consumes it.
				delete(parts, k)
				delete(metas, k)
			case !ok:
				errs = append(errs, fmt.Errorf("log end of %s/%d: not listed (%w)", k.topic, k.partition, kerr.UnknownTopicOrPartition))
			case end.Err != nil:
				errs = append(errs, fmt.Errorf("log end of %s/%d: %w", k.topic, k.partition, end.Err))
			default:
				p.LogEnd = end.Offset
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}

	r := &Report{Group: q.Group, At: time.Now()}
	for k, p := range parts {
		if meta, ok := metas[k]; ok {
			p.readMetadata(meta)
		}
		r.Partitions = append(r.Partitions, *p)
	}
	slices.SortFunc(r.Partitions, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return r, nil
}

// topicMatcher returns whether a topic is in q's report.
func topicMatcher(q Query) (func(string) bool, error) {
	if len(q.Topics) == 0 {
		return func(string) bool { return true }, nil
	}
	if !q.RegexpTopics {
		return func(t string) bool { return slices.Contains(q.Topics, t) }, nil
	}
	res := make([]*regexp.Regexp, 0, len(q.Topics))
	for _, expr := range q.Topics {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a valid regular expression: %w", fieldTopics, expr, err)
		}
		res = append(res, re)
	}
	return func(t string) bool {
		return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(t) })
	}, nil
}

// checkGroupKnown returns ErrUnknownGroup when the cluster does not know
// group: dead, empty or not there at all. A group whose members have not
// committed yet is known. The classic DescribeGroups is asked first; a group
// of the consumer protocol (KIP-848) reads as dead to it, so ListGroups,
// which lists groups of every type, has the last word.
func checkGroupKnown(ctx context.Context, adm *kadm.Client, group string) error {
	live := func(state string) bool { return state != "" && state != "Dead" && state != "Empty" }
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", group, err)
	}
	detail := "not found"
	if g, ok := described[group]; ok {
		switch {
		case errors.Is(g.Err, kerr.GroupIDNotFound):
		case g.Err != nil:
			return fmt.Errorf("describe group %q: %w", group, g.Err)
		case live(g.State):
			return nil
		default:
			detail = "state " + g.State
		}
	}
	listed, err := adm.ListGroups(ctx)
	if g, ok := listed[group]; ok && live(g.State) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	return unknownGroup(group, detail)
}

func unknownGroup(group, detail string) error {
	return fmt.Errorf("%w %q: it has no committed offset and no members (%s); check the group name", ErrUnknownGroup, group, detail)
}

// readMetadata decodes the commit metadata of p's committed offset: the
// ranges delivered above it, the stall provenance, the loss report and the
// dead-letter report, all only when the metadata was written for that
// offset. The reports are read independently: a malformed one is left out
// (and named in MetadataErr) without hiding the others, so that a
// malformed loss or dead-letter report cannot make a stalled partition
// read as healthy.
func (p *Partition) readMetadata(meta string) {
	m, fields, err := commitmeta.DecodeFields(meta)
	switch {
	case errors.Is(err, commitmeta.ErrNotOurs):
		return
	case err != nil:
		p.MetadataErr = err
		return
	case m.Base != p.Committed:
		p.MetadataErr = fmt.Errorf("the metadata was written for offset %d, not the committed offset %d (an offset reset?): ignored", m.Base, p.Committed)
		return
	}
	p.DeliveredAbove = m.Records()
	s, stalled, stallErr := commitmeta.StallFromFields(fields)
	if stalled {
		p.Stall = &s
	}
	l, lost, lossErr := commitmeta.LossFromFields(fields)
	if lost {
		p.Loss = &l
	}
	dead, deadErr := commitmeta.DeadLetterFromFields(fields)
	p.DeadLetter = dead
	var errs reportErrors
	for _, err := range []error{stallErr, lossErr, deadErr} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch len(errs) {
	case 0:
	case 1:
		p.MetadataErr = errs[0]
	default:
		p.MetadataErr = errs
	}
}

// reportErrors is more than one malformed report of one commit, as one
// line (the text output lists it as one) whose parts stay reachable with
// errors.Is and errors.As.
type reportErrors []error

func (e reportErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e reportErrors) Unwrap() []error { return e }
