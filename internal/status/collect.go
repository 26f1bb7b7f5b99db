package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

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
		starts, err := adm.ListStartOffsets(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("list start offsets: %w", err)
		}
		for k, p := range parts {
			end, ok := ends.Lookup(k.topic, k.partition)
			if len(q.Topics) == 0 && (!ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition)) {
				// A commit for a topic deleted since: the broker keeps it
				// until offsets.retention.minutes, but nothing consumes it.
				delete(parts, k)
				delete(metas, k)
				continue
			}
			start, startOK := starts.Lookup(k.topic, k.partition)
			if err := listed("log end", k.topic, k.partition, end, ok); err != nil {
				errs = append(errs, err)
			} else if err := listed("log start", k.topic, k.partition, start, startOK); err != nil {
				errs = append(errs, err)
			} else {
				p.LogEnd, p.LogStart = end.Offset, start.Offset
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}

	if err := markNotConsumed(ctx, adm, q.Group, parts); err != nil {
		return nil, err
	}

	r := &Report{Group: q.Group, At: time.Now()}
	for k, p := range parts {
		if meta, ok := metas[k]; ok {
			p.readMetadata(meta)
		}
		p.BelowStart = p.goneBelowStart()
		r.Partitions = append(r.Partitions, *p)
	}
	slices.SortFunc(r.Partitions, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return r, nil
}

// listed returns the error of one partition's listed offset (what names
// the offset: "log end", "log start"), or nil when o holds the offset.
func listed(what, topic string, partition int32, o kadm.ListedOffset, ok bool) error {
	switch {
	case !ok:
		return fmt.Errorf("%s of %s/%d: not listed (%w)", what, topic, partition, kerr.UnknownTopicOrPartition)
	case o.Err != nil:
		return fmt.Errorf("%s of %s/%d: %w", what, topic, partition, o.Err)
	}
	return nil
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
