package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// testCluster is an in-process kfake cluster with an admin client, for
// writing the commits a report is read from.
type testCluster struct {
	kc   *kfake.Cluster
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

// newCluster starts a cluster with topics of the given partitions; it is
// closed at the end of the test.
func newCluster(t *testing.T, partitions int32, topics ...string) *testCluster {
	t.Helper()
	return newClusterWith(t, nil, kfake.SeedTopics(partitions, topics...))
}

// newClusterWith starts a cluster with opts; the test's own client uses
// clientOpts besides the address (SASL credentials).
func newClusterWith(t *testing.T, clientOpts []kgo.Opt, opts ...kfake.Opt) *testCluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, clientOpts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &testCluster{kc: c, addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates another topic, with its own partition count.
func createTopic(t *testing.T, c *testCluster, name string, partitions int32) error {
	t.Helper()
	resp, err := c.adm.CreateTopic(testContext(t), partitions, 1, nil, name)
	if err != nil {
		return err
	}
	return resp.Err
}

// produce appends n records to the partition.
func (c *testCluster) produce(t *testing.T, topic string, partition int32, n int) {
	t.Helper()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "%d", i)}
	}
	require.NoError(t, c.cl.ProduceSync(testContext(t), rs...).FirstErr())
}

// commit commits offset with metadata for group, as a member-less (simple)
// commit, the way an admin tool would.
func (c *testCluster) commit(t *testing.T, group, topic string, partition int32, offset int64, metadata string) {
	t.Helper()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1, Metadata: metadata})
	resp, err := c.adm.CommitOffsets(testContext(t), group, offs)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// report is a report the input writes as extra fields: a *commitmeta.Stall
// or a *commitmeta.Loss.
type report interface{ Fields() string }

// meta encodes the input's metadata for base with the given ranges and
// reports (their fields in order; a nil report is none), as the input writes
// them.
func meta(t *testing.T, base int64, ranges []commitmeta.Range, reports ...report) string {
	t.Helper()
	var extra []string
	for _, r := range reports {
		if r != nil {
			extra = append(extra, r.Fields())
		}
	}
	s, cut := commitmeta.Encode(commitmeta.Meta{Base: base, Epoch: 0, Delivered: ranges}, strings.Join(extra, " "), 4000)
	require.Zero(t, cut)
	return s
}
