package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// Admin requests and direct reads and writes the harness makes besides the
// members and the producers: topics, log bounds, topic configs, and, for
// the unclean-election fault, one partition's replicas, leaders, epochs and
// records.

// createTopic creates topic with parts partitions of rf replicas, and waits
// until every partition has a leader.
func createTopic(ctx context.Context, brokers, topic string, parts, rf int, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, int32(parts), int16(rf), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for {
		ends, err := adm.ListEndOffsets(cctx, topic)
		if err == nil && ends.Error() == nil && len(ends[topic]) == parts {
			return nil
		}
		if cctx.Err() != nil {
			return errors.New("topic " + topic + " has no leaders after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startOffsets is the log start of each of topic's partitions.
func startOffsets(ctx context.Context, brokers, topic string, parts int) ([]int64, error) {
	return listOffsets(ctx, brokers, topic, parts, "start", (*kadm.Client).ListStartOffsets)
}

// endOffsets is the log end of each of topic's partitions.
func endOffsets(ctx context.Context, brokers, topic string, parts int) ([]int64, error) {
	return listOffsets(ctx, brokers, topic, parts, "end", (*kadm.Client).ListEndOffsets)
}

// listOffsets lists the offsets of topic's partitions with list (the log
// starts or ends), on a client of its own, within a minute.
func listOffsets(ctx context.Context, brokers, topic string, parts int, which string,
	list func(*kadm.Client, context.Context, ...string) (kadm.ListedOffsets, error)) ([]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	listed, err := list(kadm.NewClient(cl), cctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("%s offsets of %s: %w", which, topic, err)
	}
	out := make([]int64, parts)
	listed.Each(func(l kadm.ListedOffset) {
		if int(l.Partition) < parts {
			out[l.Partition] = l.Offset
		}
	})
	return out, nil
}

// alterTopic applies op to the configs kv of topic.
func alterTopic(ctx context.Context, adm *kadm.Client, topic string, op kadm.IncrementalOp, kv map[string]string) error {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var cs []kadm.AlterConfig
	for k, v := range kv {
		c := kadm.AlterConfig{Op: op, Name: k}
		if op == kadm.SetConfig {
			c.Value = &v
		}
		cs = append(cs, c)
	}
	resp, err := adm.AlterTopicConfigs(actx, cs, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("alter the configs of %s: %w", topic, err)
	}
	return nil
}

// partitionDetail is partition p's metadata (leader, epoch, replicas, ISR).
func partitionDetail(ctx context.Context, adm *kadm.Client, topic string, p int32) (kadm.PartitionDetail, error) {
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(mctx, topic)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	d, ok := td[topic].Partitions[p]
	if !ok {
		return kadm.PartitionDetail{}, fmt.Errorf("no partition %s/%d in the metadata", topic, p)
	}
	return d, nil
}

// waitPartition waits until partition p's metadata satisfies ok.
func waitPartition(ctx context.Context, adm *kadm.Client, topic string, p int32, timeout time.Duration, what string, ok func(kadm.PartitionDetail) bool) (kadm.PartitionDetail, error) {
	deadline := time.Now().Add(timeout)
	for {
		d, err := partitionDetail(ctx, adm, topic, p)
		if err == nil && ok(d) {
			return d, nil
		}
		if time.Now().After(deadline) {
			return d, fmt.Errorf("partition %d: not %s after %v (leader %d, replicas %v, ISR %v, last error %s)", p, what, timeout, d.Leader, d.Replicas, d.ISR, errString(err))
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return d, err
		}
	}
}

// reassign sets partition p's replicas, and waits until the reassignment
// is no longer in progress.
func reassign(ctx context.Context, adm *kadm.Client, topic string, p int32, replicas []int32) error {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, p, replicas)
	resp, err := adm.AlterPartitionAssignments(rctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("reassign partition %d to %v: %w", p, replicas, err)
	}
	set := kadm.TopicsSet{}
	set.Add(topic, p)
	for {
		l, err := adm.ListPartitionReassignments(rctx, set)
		if err == nil && len(l[topic]) == 0 {
			return nil
		}
		if err := sleepCtx(rctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("reassign partition %d to %v: still in progress: %w", p, replicas, err)
		}
	}
}

// electLive elects a live replica of p until node leads it, and returns
// when and the new leader epoch.
func electLive(ctx context.Context, adm *kadm.Client, topic string, p, node int32) (time.Time, int32, error) {
	set := kadm.TopicsSet{}
	set.Add(topic, p)
	deadline := time.Now().Add(3 * time.Minute)
	var last error
	for {
		d, err := partitionDetail(ctx, adm, topic, p)
		if err == nil && d.Leader == node {
			return time.Now(), d.LeaderEpoch, nil
		}
		ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := adm.ElectLeaders(ectx, kadm.ElectLiveReplica, set)
		cancel()
		if err != nil {
			last = err
		} else if r, ok := res[topic][p]; ok && r.Err != nil {
			last = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
		}
		if time.Now().After(deadline) {
			return time.Time{}, 0, fmt.Errorf("node %d does not lead partition %d after 3m of unclean elections (last: %s)", node, p, errString(last))
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return time.Time{}, 0, err
		}
	}
}

// epochEnd is where the leader's log ends leader epoch epoch: the offset
// its next epoch begins at.
func epochEnd(ctx context.Context, adm *kadm.Client, topic string, p, epoch int32) (int64, error) {
	var req kadm.OffsetForLeaderEpochRequest
	req.Add(topic, p, epoch)
	for deadline := time.Now().Add(time.Minute); ; {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := adm.OffsetForLeaderEpoch(octx, req)
		cancel()
		if err == nil {
			if r, ok := resp[topic][p]; ok && r.Err == nil && r.EndOffset >= 0 {
				return r.EndOffset, nil
			} else if ok && r.Err != nil {
				err = r.Err
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("OffsetForLeaderEpoch of partition %d, epoch %d: %s", p, epoch, errString(err))
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// listBounds is partition p's log start and end.
func listBounds(ctx context.Context, adm *kadm.Client, topic string, p int32) (start, end int64, err error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := adm.ListStartOffsets(lctx, topic)
	if err == nil {
		err = s.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("log start of %s: %w", topic, err)
	}
	e, err := adm.ListEndOffsets(lctx, topic)
	if err == nil {
		err = e.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("log end of %s: %w", topic, err)
	}
	so, ok1 := s.Lookup(topic, p)
	eo, ok2 := e.Lookup(topic, p)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("no offsets listed for %s/%d", topic, p)
	}
	return so.Offset, eo.Offset, nil
}

// produceTo writes n records to partition p with acks, synchronously, and
// returns them with their offsets.
func produceTo(ctx context.Context, brokers, topic string, p int32, n int, tag string, acks kgo.Acks) ([]prodRec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(),
		kgo.RecordDeliveryTimeout(time.Minute), kgo.ClientID("chaos-unclean-producer"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s-%04d-p%02d-%s", tag, i, p, pad)}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return nil, err
	}
	out := make([]prodRec, n)
	for i, r := range recs {
		out[i] = prodRec{p: p, o: r.Offset, hash: testkit.HashValue(string(r.Value))}
	}
	slices.SortFunc(out, func(a, b prodRec) int { return int(a.o - b.o) })
	return out, nil
}

// readRange reads partition p's records of [from, to) (read_uncommitted),
// and returns their values' hashes by offset.
func readRange(ctx context.Context, brokers, topic string, p int32, from, to int64) (map[int64]uint32, error) {
	out := map[int64]uint32{}
	if to <= from {
		return out, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-reader"), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return nil, fmt.Errorf("read partition %d [%d,%d): %w", p, from, to, rctx.Err())
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < to {
				out[r.Offset] = testkit.HashValue(string(r.Value))
			}
			if r.Offset >= to-1 {
				done = true
			}
		})
		if done {
			return out, nil
		}
	}
}

// seedList splits a comma-separated list of addresses.
func seedList(s string) []string { return strings.Split(s, ",") }

// errString is err's text, or "none".
func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
