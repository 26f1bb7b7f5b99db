package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Benthos cancels ReadBatch's context at shutdown and drops whatever it
// returns. A batch the owner answered with just as the context ended goes
// back to the owner: it is handed out again first, and Close does not wait
// for it as if it were in the pipeline.
func TestWithdrawnReadGivesTheBatchBack(t *testing.T) {
	const topic = "withdraw"
	c := newCluster(t, 1, topic)
	c.produce(t, topic, 1, 10)
	in, ctx := connectedInput(t, c.addr, topic, "wd", "  batch_max_records: 5\n  drain_timeout: 60s\n  rebalance_timeout: 90s\n")

	// A read whose context has ended by the time the engine answers it, as
	// a cancelled ReadBatch at shutdown: the batch goes back.
	_, _, err := in.ReadBatch(answeredThenCancelled{})
	require.ErrorIs(t, err, context.Canceled)

	b, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	off, _ := b[0].MetaGetMut("kafka_offset")
	require.Equal(t, 0, off, "the given-back batch goes out first")
	require.NoError(t, ack(ctx, nil))
	require.Eventually(t, func() bool { return c.lastCommit("wd", topic, 0) == 5 }, 10*time.Second, 10*time.Millisecond, "commit through the first batch")

	// Give the second batch back too, then close: nothing is in the
	// pipeline, so Close must not sit out the 60s drain_timeout.
	_, _, err = in.ReadBatch(answeredThenCancelled{})
	require.ErrorIs(t, err, context.Canceled)
	start := time.Now()
	require.NoError(t, in.Close(context.Background()))
	require.Less(t, time.Since(start), 30*time.Second, "Close waited for a batch that was never handed out")
	require.Equal(t, int64(5), c.lastCommit("wd", topic, 0), "nothing past the given-back batch is committed")
}

// Benthos closes an input with a context that has no deadline. With a
// coordinator that never answers, the final commit cannot succeed: Close
// must still return (bounded by drain_timeout), say why, and a second Close
// is a no-op.
func TestCloseIsBoundedWhenTheBrokerIsGone(t *testing.T) {
	const topic = "gone"
	c := newCluster(t, 1, topic)
	c.produce(t, topic, 1, 10)
	in, ctx := connectedInput(t, c.addr, topic, "gone", "  commit_period: 1h\n  drain_timeout: 1s\n")
	_, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	require.NoError(t, ack(ctx, nil))
	// The coordinator stops answering commits: the connection stays up,
	// the request never completes.
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true
	})

	done := make(chan error, 1)
	go func() { done <- in.Close(context.Background()) }()
	select {
	case err := <-done:
		require.Error(t, err, "the final commit could not reach the broker")
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung on a commit the broker never answers")
	}
	require.NoError(t, in.Close(context.Background()), "a second Close is a no-op")
	_, _, err = in.ReadBatch(ctx)
	require.ErrorIs(t, err, service.ErrEndOfInput)
}

// answeredThenCancelled is a context that never signals Done but says it
// was cancelled: a ReadBatch with it waits for the engine's answer, then
// finds its context ended, as one whose context ends while the answer is on
// its way.
type answeredThenCancelled struct{ context.Context }

func (answeredThenCancelled) Done() <-chan struct{} { return nil }

func (answeredThenCancelled) Err() error { return context.Canceled }

func (answeredThenCancelled) Value(any) any { return nil }

func (answeredThenCancelled) Deadline() (deadline time.Time, ok bool) { return time.Time{}, false }
