package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service/integration"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Benthos's public stream suite (public/service/integration) for the
// kafka_share input, on kfake, with the kafka_watermark output writing
// what it reads back: the definitions that hold for an input that does not
// keep order (the sequential ones assume a log read in order, which a
// share group does not promise). Each definition gets a topic and a share
// group of its own ($ID). One record per batch, as the suite's
// receiveMessage expects.
func TestShareStreamSuite(t *testing.T) {
	addr := shareStreamCluster(t)
	runShareStreams(t, addr, 2*time.Minute,
		integration.StreamTestOpenClose(),
		integration.StreamTestMetadata(),
		integration.StreamTestSendBatch(10),
		integration.StreamTestSendBatches(20, 100, 1),
		integration.StreamTestSendBatchCount(10),
		integration.StreamTestStreamParallel(1000),
		integration.StreamTestStreamParallelLossy(1000),
		// Not StreamTestAtLeastOnceDelivery: it reads 3 of its 5 records
		// before the restart and expects a released one first after it,
		// which only an input reading in order gives (the 2 it never read
		// may come first from a share group), and its sender ranges over a
		// map its reader deletes from, a data race under -race.
		// TestShareAcceptedBeforeCloseStays says more, and checks what it
		// means: nothing accepted before a clean close comes back.
	)
}

// shareStreamCluster is a kfake cluster for the stream suite whose
// share-group requests are logged (observeShareRequests).
func shareStreamCluster(t *testing.T) string {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"share.record.lock.sweep.interval.ms": "100"}))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	observeShareRequests(kc)
	return kc.ListenAddrs()[0]
}

// runShareStreams runs the stream suite's defs, in parallel, on the kfake
// cluster at addr: the input is kafka_share as shareDebugInputName logs
// it, and a definition that fails prints its share group's log.
func runShareStreams(t *testing.T, addr string, timeout time.Duration, defs ...integration.StreamTestDefinition) {
	template := `
output:
  kafka_watermark:
    seed_brokers: [ ` + addr + ` ]
    topic: topic-$ID
    max_in_flight: $MAX_IN_FLIGHT
    metadata:
      include_patterns: [ '.*' ]
    batching:
      count: $OUTPUT_BATCH_COUNT

input:
  ` + shareDebugInputName + `:
    seed_brokers: [ ` + addr + ` ]
    topics: [ topic-$ID ]
    share_group: group-$ID
    start_offset: earliest
    batch_max_records: 1
`
	integration.StreamTests(defs...).Run(t, template,
		integration.StreamTestOptTimeout(timeout),
		integration.StreamTestOptPreTest(func(t testing.TB, ctx context.Context, vars *integration.StreamTestConfigVars) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
			require.NoError(t, err)
			defer cl.Close()
			_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "topic-"+vars.ID)
			require.NoError(t, err)
			group := "group-" + vars.ID
			l := shareDebugLogs.of(group)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("share group %s's log:\n%s", group, l)
				}
				shareDebugLogs.drop(group)
			})
		}),
	)
}
