package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

// testKafka is an in-process kfake cluster for tests of the binary: the
// binary connects to it over loopback like to any broker.
type testKafka struct {
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func newTestKafka(t *testing.T, partitions int32, topics ...string) *testKafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &testKafka{addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

// produce writes n records round robin over the partitions, with values
// "<topic>-<i>".
func (k *testKafka) produce(t *testing.T, topic string, partitions int32, n int) {
	t.Helper()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "%s-%d", topic, i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, k.cl.ProduceSync(ctx, rs...).FirstErr())
}

// endOffsets returns each partition's log end offset.
func (k *testKafka) endOffsets(t testingT, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := k.adm.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, l.Error())
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// committed returns the group's committed offsets of the topic (absent
// partitions have none).
func (k *testKafka) committed(t testingT, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := k.adm.FetchOffsets(ctx, group)
	require.NoError(t, err)
	out := map[int32]int64{}
	rs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// deadLetter is a record of a dead-letter topic: its value and provenance.
type deadLetter struct {
	value string
	prov  deadletter.Provenance
	err   error // the provenance did not parse
}

// readDeadLetters reads topic from its start to its log end now.
func (k *testKafka) readDeadLetters(t *testing.T, topic string) []deadLetter {
	t.Helper()
	var want int64
	for _, end := range k.endOffsets(t, topic) {
		want += end
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []deadLetter
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "reading %s: %d of %d records", topic, len(out), want)
		fs.EachRecord(func(r *kgo.Record) {
			prov, err := deadletter.Parse(r)
			out = append(out, deadLetter{value: string(r.Value), prov: prov, err: err})
		})
	}
	return out
}
