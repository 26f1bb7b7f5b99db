package plugin

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestUnreachableBrokersAtStart(t *testing.T) {
	// A port that is certainly closed: bind, note it, release it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	in := directInput(t, addr, "t", "g", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = in.Connect(ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot reach seed brokers "+addr)
	_, _, err = in.ReadBatch(ctx)
	require.ErrorIs(t, err, service.ErrNotConnected, "Benthos reconnects on ErrNotConnected")

	// Benthos retries Connect: once a broker listens there, records flow.
	s := newSink()
	st := startStream(t, testEnv(t, s, 4), inputYAML(addr, "t", "g", ""), 1)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer kc.Close()
	c := &cluster{Cluster: kc, addr: addr}
	c.produce(t, "t", 1, 10)
	require.Eventually(t, func() bool { d, _ := s.counts(); return d == 10 }, 30*time.Second, 10*time.Millisecond, "records after the broker came up")
	st.stop(t)
}
