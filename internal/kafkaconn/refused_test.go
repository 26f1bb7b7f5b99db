package kafkaconn

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A classic member used to drop every partition as lost about a second into
// a broker restart: kgo does not retry a coordinator lookup whose dial was
// refused (a non-timeout dial error), so the heartbeat gave up long before
// session_timeout. retriableRefusals makes a refused dial a retriable one for
// kgo, and changes nothing else about the error. If a kgo upgrade changes how
// it classifies dial errors, this fails.
func TestRefusedDialIsRetriableForKgo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	var d net.Dialer
	_, raw := d.DialContext(context.Background(), "tcp", addr)
	require.Error(t, raw)
	require.False(t, kgo.IsRetryableBrokerErr(raw), "kgo gives up on a raw refusal: %v", raw)

	_, marked := retriableRefusals(d.DialContext)(context.Background(), "tcp", addr)
	require.True(t, kgo.IsRetryableBrokerErr(marked), "a marked refusal is retried: %v", marked)
	require.True(t, errors.Is(marked, syscall.ECONNREFUSED))
	require.Equal(t, raw.Error(), marked.Error(), "the message is unchanged")

	other := errors.New("no route")
	require.Same(t, other, markRefused(other), "other errors are left alone")
}
