package plugin

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

func TestDuplicateAckIsIgnored(t *testing.T) {
	const topic = "dup"
	c := newCluster(t, 1, topic)
	c.produce(t, topic, 1, 30)
	in, ctx := connectedInput(t, c.addr, topic, "dup", "  batch_max_records: 10\n")
	var acks []service.AckFunc
	var got int
	for got < 30 {
		b, ack, err := in.ReadBatch(ctx)
		require.NoError(t, err)
		got += len(b)
		acks = append(acks, ack)
	}
	// Ack in reverse; every ack is then repeated, the repeat with an error
	// that would stall the partition if it were applied.
	for i := len(acks) - 1; i >= 0; i-- {
		require.NoError(t, acks[i](ctx, nil))
		require.NoError(t, acks[i](ctx, errors.New("repeat must be ignored")))
	}
	require.Eventually(t, func() bool { return c.lastCommit("dup", topic, 0) == 30 }, 10*time.Second, 10*time.Millisecond, "commit to the end")
	require.NoError(t, in.Close(ctx))
}

// Stopping a stream while sinks are still acknowledging, again and again:
// no race, no panic, no commit past an unacknowledged batch, nothing lost.
func TestShutdownRacingAcks(t *testing.T) {
	const (
		topic      = "race"
		partitions = 4
		n          = 4000
	)
	c, s := newAuditedCluster(t, partitions, topic, n)
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(7, 7))
	s.decide = func([]rec) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		if r.IntN(20) == 0 {
			return 0, errors.New("random nack")
		}
		return time.Duration(r.IntN(2000)) * time.Microsecond, nil
	}
	env := testEnv(t, s, 16)
	for range 3 {
		s.mu.Lock()
		before := s.batches
		s.mu.Unlock()
		st := startStream(t, env, inputYAML(c.addr, topic, "race", "  batch_max_records: 20\n"), 4)
		// Up to session_timeout plus rebalance_timeout (11 s) can pass
		// before a restarted member is assigned, should the stopped one not
		// have left the group in time: 10 s failed once in about ten runs
		// of the package.
		require.Eventually(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.batches > before+10 }, 30*time.Second, 10*time.Millisecond, "some progress")
		st.stop(t)
	}
	s.decide = nil
	st := startStream(t, env, inputYAML(c.addr, topic, "race", ""), 2)
	waitCommitted(t, c, "race", topic, c.endOffsets(t, topic, partitions))
	st.stop(t)
	distinct, _ := s.counts()
	require.Equal(t, n, distinct)
}
