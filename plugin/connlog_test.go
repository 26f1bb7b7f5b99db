package plugin

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/watermark-connect/watermark-connect/internal/testkit"
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
	r := newDialReporter(log, func() time.Time { return now }, nil)
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
	opts := append(conn.Opts(), newConnLog(log).opts()...)
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

// Issue 30: a seed broker that accepts connections and never answers gave
// 20s of silence: kgo waits for the first answer on a connection as long as
// for any request (request_timeout_overhead, 10s) and then called it a
// failed dial ("cannot connect ... i/o timeout"). The input now says, after
// kafkaconn.SilentAfter and while Connect still waits, that the address
// accepted the connection and answered nothing, and Connect's error names
// it.
func TestInputSaysABrokerNeverAnswers(t *testing.T) {
	t.Parallel()
	silent, err := testkit.NewSilent()
	require.NoError(t, err)
	t.Cleanup(silent.Close)
	var out syncBuf
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&out, nil)))
	pc, err := ConfigSpec().ParseYAML(fmt.Sprintf("seed_brokers: [ %q ]\ntopics: [ orders ]\nconsumer_group: g\n", silent.Addr()), nil)
	require.NoError(t, err)
	c, err := parseConfig(pc)
	require.NoError(t, err)
	in := newInput(c, service.MockResources(service.MockResourcesOptUseLogger(log)))
	t.Cleanup(func() { _ = in.Close(context.Background()) })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	connected := make(chan error, 1)
	go func() { connected <- in.Connect(ctx) }()
	want := "kafka_watermark: broker " + silent.Addr() + " accepted the connection and answered nothing in 3s (not even ApiVersions"
	deadline := time.After(kafkaconn.SilentAfter + 5*time.Second) // kgo gives up on the connection after 10s
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-connected:
			t.Fatalf("Connect returned (%v) before the silence was reported:\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("no report of the silent broker:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	lines := warnLines(out.String())
	require.Len(t, lines, 1, "one line, and no failed dial: it connected")
	assert.Contains(t, lines[0], "next report in 5s")

	cancel()
	err = <-connected
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kafka_watermark: cannot reach seed brokers "+silent.Addr()+": broker "+silent.Addr()+" accepted the connection and answered nothing in ")
}

// A failed Connect closes its client, and Benthos calls Connect again
// within a second, for as long as the broker is unreachable: with a
// reporter per client, each try reported the address anew, a WARN line a
// second for ever. The reporters are the Input's, shared by the clients of
// its tries, so the address is reported once here, then at a growing
// interval.
func TestConnectBackoffGrowsToItsCap(t *testing.T) {
	var got []time.Duration
	for fails := 1; fails <= 8; fails++ {
		got = append(got, connectBackoff(fails))
	}
	assert.Equal(t, []time.Duration{1e9, 2e9, 4e9, 8e9, 16e9, 30e9, 30e9, 30e9}, got)
}

func TestInputReportsAnAddressOnceAcrossConnects(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	var out syncBuf
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&out, nil)))
	pc, err := ConfigSpec().ParseYAML(fmt.Sprintf("seed_brokers: [ %q ]\ntopics: [ orders ]\nconsumer_group: g\n", addr), nil)
	require.NoError(t, err)
	c, err := parseConfig(pc)
	require.NoError(t, err)
	in := newInput(c, service.MockResources(service.MockResourcesOptUseLogger(log)))
	t.Cleanup(func() { _ = in.Close(context.Background()) })

	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		err := in.Connect(t.Context())
		require.ErrorContains(t, err, "cannot reach seed brokers "+addr)
		// Benthos waits what the error says before trying again, and logs
		// each failed Connect: without it, a line a second for ever.
		var boff *service.ErrBackOff
		require.ErrorAs(t, err, &boff, "try %d", i+1)
		assert.Equal(t, want, boff.Wait, "try %d", i+1)
		assert.ErrorContains(t, err, fmt.Sprintf("trying again in %v", want))
	}
	lines := warnLines(out.String())
	require.Len(t, lines, 1, out.String())
	assert.Contains(t, lines[0], "cannot connect to broker "+addr)
}
