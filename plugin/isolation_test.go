package plugin

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTransactions writes three transactions of 10 records each to
// partition 0 of topic: committed, aborted, committed. Each ends in a
// transaction marker, so the log ends at offset 33.
func produceTransactions(t *testing.T, c *cluster, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.TransactionalID("txn-"+topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	for i, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
		require.NoError(t, cl.BeginTransaction())
		for j := range 10 {
			v := fmt.Sprintf("txn%d-%d", i, j)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr())
		}
		require.NoError(t, cl.EndTransaction(ctx, commit))
	}
}

// A transactional producer commits two transactions and aborts one between
// them. read_committed delivers the committed records only; read_uncommitted
// delivers the aborted ones too. At either level the commits reach the log
// end, past the transaction markers, which are never delivered.
func TestTransactionIsolation(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  int
	}{{isolationCommitted, 20}, {isolationUncommitted, 30}} {
		t.Run(tc.level, func(t *testing.T) {
			topic := "txn-" + tc.level
			c := newCluster(t, 1, topic)
			produceTransactions(t, c, topic)
			end := c.endOffsets(t, topic, 1)[0]
			require.Equal(t, int64(33), end, "30 records and 3 markers")
			s := newSink()
			// Offsets the sink never sees (markers; aborted records under
			// read_committed) count as delivered for the audit.
			for _, off := range []int64{10, 21, 32} {
				s.ack([]rec{{topic: topic, partition: 0, offset: off}})
			}
			if tc.level == isolationCommitted {
				for off := int64(11); off < 21; off++ {
					s.ack([]rec{{topic: topic, partition: 0, offset: off}})
				}
			}
			c.mu.Lock()
			c.sink = s
			c.mu.Unlock()
			st := startStream(t, testEnv(t, s, 4), inputYAML(c.addr, topic, "txn", fmt.Sprintf("  batch_max_records: 4\n  transaction_isolation_level: %s\n", tc.level)), 1)
			waitCommitted(t, c, "txn", topic, map[int32]int64{0: end})
			st.stop(t)
			s.mu.Lock()
			defer s.mu.Unlock()
			delivered := 0
			for off := range end {
				n := s.delivered[key3(topic, 0, off)]
				require.LessOrEqual(t, n, 1, "offset %d", off)
				delivered += n
				if off == 10 || off == 21 || off == 32 {
					require.Zero(t, n, "the marker at %d is not delivered", off)
				}
				if tc.level == isolationCommitted && off > 10 && off < 21 {
					require.Zero(t, n, "aborted record at %d", off)
				}
			}
			require.Equal(t, tc.want, delivered)
		})
	}
}
