package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// The checker's inputs from the cluster, read after the drain: the topic
// as it ended (readTopic) and every OffsetCommit record of the group
// (readCommitLog).

// Kinds of offsets in the log, as read back after the run.
const (
	offUnknown byte = 0
	offData    byte = 'd' // a record a read_committed consumer sees
	offAborted byte = 'a' // a record of an aborted transaction
	offMarker  byte = 'm' // a transaction marker (control record)
	offDeleted byte = 'x' // below the log start: deleted (what it was: logRec.was)
)

// logRec is one offset of the topic as read back after the run.
type logRec struct {
	kind byte
	hash uint32 // of the value
	key  uint32 // hash of the key
	// nullKey: the record has a null key (key is then the hash of "", as
	// for the empty key, which is a key).
	nullKey bool
	ts      int64 // the record's timestamp (the producer's clock), Unix ns
	// Deleted offsets only: what the producers wrote there (offData,
	// offAborted, or offUnknown for a marker or a record of unknown fate)
	// and when a fault of the harness deleted it (Unix ns; 0: not the
	// harness).
	was  byte
	gone int64
	// pid is the producer ID of an aborted record or a marker (what the
	// marker ended: commit, or abort), so that a record's fate can be read
	// from the marker that follows it.
	pid    int64
	commit bool
}

// readTopic reads every partition of topic from starts to ends, once at
// read_committed (visible records and markers) and once at
// read_uncommitted (what is left are the aborted records). Offsets below a
// partition's start are offDeleted.
func readTopic(ctx context.Context, brokers, topic string, starts, ends []int64) ([][]logRec, error) {
	out := make([][]logRec, len(ends))
	for p, e := range ends {
		out[p] = make([]logRec, e)
		for o := int64(0); o < min(starts[p], e); o++ {
			out[p][o].kind = offDeleted
		}
	}
	for _, committed := range []bool{true, false} {
		if err := readPass(ctx, brokers, topic, starts, ends, committed, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readPass(ctx context.Context, brokers, topic string, starts, ends []int64, committed bool, out [][]logRec) error {
	offsets := map[int32]kgo.Offset{}
	left := 0
	for p, e := range ends {
		if e > starts[p] {
			offsets[int32(p)] = kgo.NewOffset().AtStart()
			left++
		}
	}
	if left == 0 {
		return nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seedList(brokers)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.KeepControlRecords(),
		kgo.ClientID("chaos-reader"),
	}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	done := make([]bool, len(ends))
	for left > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return fmt.Errorf("read back %s (read_committed %v): %d partitions not read to their end: %w", topic, committed, left, rctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) {
			if ctx.Err() == nil {
				fmt.Printf("chaos: read back partition %d: %v\n", p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if int(p) >= len(ends) || r.Offset >= ends[p] || r.Offset < starts[p] {
				return
			}
			lr := &out[p][r.Offset]
			switch {
			case r.Attrs.IsControl():
				// A control record's key is version (int16) then type
				// (int16): 0 abort, 1 commit.
				lr.kind, lr.pid = offMarker, r.ProducerID
				lr.commit = len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 1
			case committed:
				*lr = logRec{kind: offData, hash: testkit.HashValue(string(r.Value)), key: testkit.HashValue(string(r.Key)), nullKey: r.Key == nil,
					ts: r.Timestamp.UnixNano()}
			case lr.kind == offUnknown:
				*lr = logRec{kind: offAborted, hash: testkit.HashValue(string(r.Value)), ts: r.Timestamp.UnixNano(), pid: r.ProducerID}
			}
			if r.Offset == ends[p]-1 && !done[p] {
				done[p] = true
				left--
			}
		})
	}
	return nil
}

// auditRec is one OffsetCommit record of the group in __consumer_offsets.
type auditRec struct {
	p         int32
	offset    int64
	epoch     int32 // the leader epoch the commit carries (-1: none)
	meta      string
	commitTs  int64 // ms, the broker's clock
	logOffset int64
}

// readCommitLog reads __consumer_offsets from its start to its end and
// returns the group's OffsetCommit records for topic, in log order.
func readCommitLog(ctx context.Context, brokers, group, topic string) ([]auditRec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-auditor"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(actx, "__consumer_offsets")
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of __consumer_offsets: %w", err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(l kadm.ListedOffset) {
		if l.Offset > 0 {
			want[l.Partition] = l.Offset
			offsets[l.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(seedList(brokers)...), kgo.ClientID("chaos-auditor"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": offsets}))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var out []auditRec
	for len(want) > 0 {
		fs := rd.PollFetches(actx)
		if actx.Err() != nil {
			return nil, fmt.Errorf("read __consumer_offsets: %w", actx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if e, ok := want[r.Partition]; ok && r.Offset >= e-1 {
				delete(want, r.Partition)
			}
			if len(r.Key) < 2 || r.Value == nil {
				return
			}
			if v := int16(binary.BigEndian.Uint16(r.Key)); v != 0 && v != 1 {
				return // group metadata and other record types
			}
			var k kmsg.OffsetCommitKey
			if k.ReadFrom(r.Key) != nil || k.Group != group || k.Topic != topic {
				return
			}
			var v kmsg.OffsetCommitValue
			if err := v.ReadFrom(r.Value); err != nil {
				return
			}
			epoch := int32(-1)
			if v.Version >= 3 {
				epoch = v.LeaderEpoch
			}
			out = append(out, auditRec{p: k.Partition, offset: v.Offset, epoch: epoch, meta: v.Metadata, commitTs: v.CommitTimestamp, logOffset: r.Offset})
		})
	}
	slices.SortStableFunc(out, func(a, b auditRec) int { return int(a.logOffset - b.logOffset) })
	return out, nil
}
