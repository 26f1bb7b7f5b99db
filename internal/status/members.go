package status

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// markNotConsumed sets NotConsumed on the partitions of parts that have no
// commit and that no member of group is assigned. It asks the coordinator
// only when there is such a partition: a partition with a commit reads the
// same whether or not a member consumes it now (the pipeline may be
// stopped; its lag and reports are in the commit).
//
// The classic DescribeGroups is asked first. A group of the consumer
// protocol (KIP-848) reads as dead or unknown to it, so then ListGroups,
// which names each group's type, says whether to ask ConsumerGroupDescribe
// (a broker that predates KIP-848 names no type, and holds no such group).
// A group listed by neither has no members. Any other failure is an
// error: status cannot tell whether the partitions are consumed.
//
// Kafka names the topics of a ConsumerGroupDescribe assignment; a broker
// that gives their IDs only (kfake does) leaves them under the topic "",
// which kadm cannot resolve. Such a partition counts as consumed in every
// topic: status must not call a consumed partition unconsumed, which would
// make a probe read unready for as long as the group runs.
func markNotConsumed[K comparable](ctx context.Context, adm *kadm.Client, group string, parts map[K]*Partition) error {
	need := false
	for _, p := range parts {
		need = need || p.Committed < 0
	}
	if !need {
		return nil
	}
	assigned, err := assignedPartitions(ctx, adm, group)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.Committed < 0 {
			_, named := assigned[p.Topic][p.Partition]
			_, unnamed := assigned[""][p.Partition]
			p.NotConsumed = !named && !unnamed
		}
	}
	return nil
}

// assignedPartitions returns the partitions the members of group are
// assigned, under either group protocol.
func assignedPartitions(ctx context.Context, adm *kadm.Client, group string) (kadm.TopicsSet, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", group, err)
	}
	if g, ok := described[group]; ok {
		switch {
		case errors.Is(g.Err, kerr.GroupIDNotFound):
		case g.Err != nil:
			return nil, fmt.Errorf("describe group %q: %w", group, g.Err)
		case len(g.Members) > 0:
			return g.AssignedPartitions(), nil
		}
	}
	listed, err := adm.ListGroups(ctx)
	if g, ok := listed[group]; !ok || g.GroupType != "consumer" {
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		return kadm.TopicsSet{}, nil
	}
	consumer, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe consumer group %q: %w", group, err)
	}
	g, ok := consumer[group]
	switch {
	case !ok, errors.Is(g.Err, kerr.GroupIDNotFound):
		return kadm.TopicsSet{}, nil
	case g.Err != nil:
		return nil, fmt.Errorf("describe consumer group %q: %w", group, g.Err)
	}
	return g.AssignedPartitions(), nil
}
