package plugin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// warnLines returns the lines of out that are WARN or ERROR.
func warnLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			lines = append(lines, l)
		}
	}
	return lines
}

// A broker address whose dials fail is reported at once, then at a
// doubling interval (5s, 10s, 20s, ... up to 5m) with how many dials
// failed meanwhile; a dial that succeeds says so once.
func TestDialReporter(t *testing.T) {
	var out syncBuf
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&out, nil)))
	now := time.Unix(0, 0)
	r := newDialReporter(log, func() time.Time { return now })
	meta := kgo.BrokerMetadata{NodeID: -1, Host: "localhost", Port: 1}
	refused := errors.New("unable to dial: dial tcp 127.0.0.1:1: connect: connection refused")

	// Two dials a second for two minutes, as kgo does against a closed port.
	for range 240 {
		r.OnBrokerConnect(meta, 0, nil, refused)
		now = now.Add(500 * time.Millisecond)
	}
	lines := warnLines(out.String())
	// At 0s, 5s, 15s, 35s, 75s.
	require.Len(t, lines, 5, out.String())
	assert.Contains(t, lines[0], "cannot connect to broker localhost:1: unable to dial: dial tcp 127.0.0.1:1: connect: connection refused; retrying, next report in 5s")
	assert.Contains(t, lines[1], "cannot connect to broker localhost:1: 10 failed dial(s) in the last 5s (11 since the first, 5s ago), the last: unable to dial")
	assert.Contains(t, lines[4], "80 failed dial(s) in the last 40s (151 since the first, 1m15s ago)")
	assert.Contains(t, lines[4], "next report in 1m20s")

	// Another address is reported on its own; a success ends the run.
	r.OnBrokerConnect(kgo.BrokerMetadata{Host: "other", Port: 9092}, 0, nil, refused)
	r.OnBrokerConnect(meta, 0, nil, nil)
	assert.Len(t, warnLines(out.String()), 6)
	assert.Contains(t, out.String(), "connected to broker localhost:1 after 240 failed dial(s) over 2m0s")
	r.OnBrokerConnect(meta, 0, nil, refused)
	assert.Len(t, warnLines(out.String()), 7, "a new run of failures is reported at once")

	// A closing client's cancelled dials are not the broker's failures.
	r.OnBrokerConnect(meta, 0, nil, context.Canceled)
	r.OnBrokerConnect(meta, 0, nil, kgo.ErrClientClosed)
	assert.Len(t, warnLines(out.String()), 7)
}

// Issue 30: with a seed broker whose port is closed, the input logged two
// lines a second for as long as it ran (kgo's line per failed dial). The
// client's logging now reports the address once, then at a growing
// interval.
func TestClientLogsFailedDialsWithBackoff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	var out syncBuf
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&out, nil)))
	// Connecting as the input does: a refused dial is retriable
	// (internal/kafkaconn/refused.go), so kgo dials again every 250 ms to 5 s.
	conn := kafkaconn.Config{SeedBrokers: []string{addr}, ClientID: "t", SessionTimeout: 10 * time.Second}
	opts := append(conn.Opts(), logOpts(log)...)
	cl, err := kgo.NewClient(append(opts, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"))...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx)
	}
	cl.Close()

	lines := warnLines(out.String())
	require.NotEmpty(t, lines, "the failed dials are reported")
	assert.LessOrEqual(t, len(lines), 2, "lines in 3s:\n%s", out.String())
	assert.Contains(t, lines[0], "cannot connect to broker "+addr)
	assert.Contains(t, lines[0], "connection refused")
}
