package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The leader-move fault: leadership of partitions, or of the group's
// coordinator, moved to another replica of a running cluster.

// moveLeaders moves the leadership of partitions to another replica: it
// reorders their replicas (the same set, so no data moves) with a new
// preferred leader first, then runs a preferred leader election. With
// coordinator, the partition is the group's __consumer_offsets partition,
// so the group coordinator moves; otherwise three partitions of topic.
func (c *cluster) moveLeaders(ctx context.Context, topic, group string, coordinator bool, first int32, topicParts int) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(c.seeds())...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var targets []kadm.PartitionDetail
	if coordinator {
		td, err := adm.ListTopicsWithInternal(mctx, "__consumer_offsets")
		if err != nil {
			return "", err
		}
		d := td["__consumer_offsets"]
		if len(d.Partitions) == 0 {
			return "", errors.New("no __consumer_offsets partitions")
		}
		p := int32(javaStringHash(group)&0x7fffffff) % int32(len(d.Partitions))
		targets = append(targets, d.Partitions[p])
	} else {
		td, err := adm.ListTopics(mctx, topic)
		if err != nil {
			return "", err
		}
		for k := range int32(3) {
			if p, ok := td[topic].Partitions[(first+k*int32(max(1, topicParts/3)))%int32(topicParts)]; ok {
				targets = append(targets, p)
			}
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	set := kadm.TopicsSet{}
	var moves []string
	for _, p := range targets {
		i := slices.Index(p.Replicas, p.Leader)
		if i < 0 || len(p.Replicas) < 2 {
			continue
		}
		next := p.Replicas[(i+1)%len(p.Replicas)]
		order := []int32{next}
		for _, r := range p.Replicas {
			if r != next {
				order = append(order, r)
			}
		}
		req.Assign(p.Topic, p.Partition, order)
		set.Add(p.Topic, p.Partition)
		moves = append(moves, fmt.Sprintf("%s/%d: %d->%d", p.Topic, p.Partition, p.Leader, next))
	}
	if len(moves) == 0 {
		return "", errors.New("no partition to move")
	}
	resp, err := adm.AlterPartitionAssignments(mctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return "", fmt.Errorf("reorder replicas: %w", err)
	}
	// The same replica set: the reassignment completes at once; the
	// election may still race it, so retry a little.
	var lastErr error
	for range 20 {
		res, err := adm.ElectLeaders(mctx, kadm.ElectPreferredReplica, set)
		if err == nil {
			lastErr = nil
			for _, ps := range res {
				for _, r := range ps {
					if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) && lastErr == nil {
						lastErr = r.Err
					}
				}
			}
			if lastErr == nil {
				break
			}
		} else {
			lastErr = err
		}
		if err := sleepCtx(mctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
	if lastErr != nil {
		return strings.Join(moves, ", "), fmt.Errorf("preferred leader election: %w", lastErr)
	}
	return strings.Join(moves, ", "), nil
}

// javaStringHash is Java's String.hashCode, which Kafka uses to place a
// group on a __consumer_offsets partition.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s { // group names here are ASCII: one UTF-16 unit per rune
		h = 31*h + int32(r)
	}
	return h
}
