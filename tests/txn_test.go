package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionIsolation on the real broker: a transactional producer
// commits, aborts and commits transactions of 50 records on one partition.
// With read_committed only the committed records arrive; with
// read_uncommitted the aborted ones too. At either level the group commits the
// log end, past the transaction markers, which are never delivered.
func TestTransactionIsolation(t *testing.T) {
	env := needBroker(t)
	for _, level := range []string{"read_committed", "read_uncommitted"} {
		t.Run(level, func(t *testing.T) {
			k := newKafka(t, env)
			topic, group := "wm-txn-"+suffix(), "wm-txn-g-"+suffix()
			k.createTopic(topic, 1)
			cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(env.Brokers, ",")...),
				kgo.TransactionalID("wm-txn-"+suffix()), kgo.DefaultProduceTopic(topic),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			require.NoError(t, err)
			ctx := testCtx(t, 2*time.Minute)
			aborted := map[int64]bool{}
			for txn, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
				require.NoError(t, cl.BeginTransaction())
				for j := range int64(50) {
					// Each transaction's 50 records are followed by its
					// marker, so the record's offset is known before the
					// write, and its value is what the sink expects there.
					off := int64(txn)*51 + j
					r := &kgo.Record{Partition: 0, Value: []byte(value(0, off))}
					require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
					require.Equal(t, off, r.Offset)
					if commit == kgo.TryAbort {
						aborted[off] = true
					}
				}
				require.NoError(t, cl.EndTransaction(ctx, commit))
			}
			cl.Close()
			// The coordinator writes a transaction's marker after EndTxn
			// returns: wait for the last one.
			var end map[int32]int64
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				end = k.endOffsets(topic)
				assert.Equal(c, int64(250+5), end[0], "250 records and 5 markers")
			}, time.Minute, 50*time.Millisecond, "the last transaction marker")

			s := newSink(t, topic, 1, 0, 2*time.Millisecond)
			conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "txn",
				input: fmt.Sprintf("commit_period: 200ms\nbatch_max_records: 20\ntransaction_isolation_level: %s\n", level)}
			p := startProc(t, "txn", conf.yaml())
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				got, err := k.committed(cctx, group, topic)
				if assert.NoError(c, err) {
					assert.Equal(c, end[0], got[0], "the commit reaches the log end past the markers")
				}
			}, 2*time.Minute, 100*time.Millisecond, "the group to commit the log end")
			p.stop(45 * time.Second)
			p.assertClean()

			sn := s.snapshot()
			var delivered, abortedDelivered, markers int
			for off := int64(0); off < end[0]; off++ {
				n := sn.count(0, off)
				require.LessOrEqual(t, n, 1, "offset %d delivered twice", off)
				delivered += n
				if aborted[off] {
					abortedDelivered += n
				}
			}
			markers = int(end[0]) - 250
			figure(t, "transactions level=%s records=250 aborted=%d markers=%d delivered=%d aborted_delivered=%d",
				level, len(aborted), markers, delivered, abortedDelivered)
			if level == "read_committed" {
				require.Equal(t, 150, delivered, "only the committed transactions' records")
				require.Zero(t, abortedDelivered)
			} else {
				require.Equal(t, 250, delivered, "every record, the aborted ones too")
			}
		})
	}
}
