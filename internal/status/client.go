package status

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// NewClient returns a kgo client for t, and checks that a seed broker
// answers (which is where an unreachable cluster, a TLS failure or a failed
// authentication shows). It connects as the input does, with the options
// kafkaconn makes of t.Conn: the tcp block's dialer, TLS over it, the SASL
// mechanisms, refused dials retried within a request's budget. The client
// joins no group and consumes nothing: reading a group's offsets never
// triggers its rebalance. The caller closes it.
func NewClient(ctx context.Context, t Target) (*kgo.Client, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return Connect(ctx, t)
}

// Connect is NewClient for a command that needs no group (t.Group is not
// read): a client connecting as the input does, with extra options after
// the connection's (a producer's, or partitions to consume), checked to
// reach a seed broker. The caller closes it.
func Connect(ctx context.Context, t Target, extra ...kgo.Opt) (*kgo.Client, error) {
	if err := t.validateConn(); err != nil {
		return nil, err
	}
	// The Silence names, in the error, a broker that accepted the
	// connection and never answered: without it the error said only that
	// the deadline passed.
	silence := kafkaconn.NewSilence(kafkaconn.SilentAfter, nil, nil)
	opts := append(t.Conn.Opts(), kgo.WithHooks(silence))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("invalid client options: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		err = silence.Explain(err)
		cl.Close()
		return nil, fmt.Errorf("cannot reach seed brokers %s%s: %w", strings.Join(t.Conn.SeedBrokers, ","), t.security(), err)
	}
	return cl, nil
}
