package dlcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testCluster is a kfake cluster with a client that produces to chosen
// partitions and reads topics back.
type testCluster struct {
	addr string
	cl   *kgo.Client
}

func newCluster(t *testing.T, opts ...kfake.Opt) *testCluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &testCluster{addr: addr, cl: cl}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// letter is the dead letter, for partition dlp of the dead-letter topic, of
// the origin record topic/partition@offset written at ts.
func letter(dlp int32, topic string, partition int32, offset int64, ts time.Time, attempts int, errClass string) *kgo.Record {
	r := &kgo.Record{
		Topic: topic, Partition: partition, Offset: offset, Timestamp: ts,
		Key: fmt.Appendf(nil, "k%d", offset), Value: fmt.Appendf(nil, "v%d", offset),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}},
	}
	l := deadletter.Letter(r, "orders.dlq", deadletter.Failure{Attempts: attempts, Error: errClass, FirstFailed: ts.Add(5 * time.Minute), Member: "wm@pod-1"})
	l.Partition = dlp
	return l
}

func (c *testCluster) produce(t *testing.T, rs ...*kgo.Record) {
	t.Helper()
	require.NoError(t, c.cl.ProduceSync(ctxFor(t), rs...).FirstErr())
}

// read returns every record of topic, in partition and offset order.
func (c *testCluster) read(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append(scanOpts(), kgo.SeedBrokers(c.addr))...)
	require.NoError(t, err)
	defer cl.Close()
	var out []*kgo.Record
	spans, err := snapshotFor(t, cl, topic)
	require.NoError(t, err)
	require.NoError(t, scan(ctxFor(t), cl, topic, spans, func(r *kgo.Record) error { out = append(out, r); return nil }))
	return out
}

// seed writes the dead letters most tests read: orders.dlq has 2
// partitions; partition 0 holds orders/0@10, @11, @12, partition 1
// orders/1@5 and payments/0@7, and an unparsable record at 1@2.
func seed(t *testing.T) *testCluster {
	c := newCluster(t, kfake.SeedTopics(2, "orders.dlq", "orders", "retry"), kfake.SeedTopics(1, "payments"))
	c.produce(t,
		letter(0, "orders", 0, 11, t0.Add(1*time.Minute), 3, "http: status=503"),
		letter(0, "orders", 0, 10, t0, 3, "http: status=503"),
		letter(0, "orders", 0, 12, t0.Add(2*time.Minute), 1, "timeout"),
		letter(1, "orders", 1, 5, t0.Add(30*time.Minute), 2, "timeout"),
		letter(1, "payments", 0, 7, t0.Add(90*time.Minute), 1, "bad request"),
		&kgo.Record{Topic: "orders.dlq", Partition: 1, Value: []byte("junk"), Timestamp: t0, Headers: []kgo.RecordHeader{{Key: deadletter.HeaderTopic, Value: []byte("orders")}}},
	)
	return c
}

// runCLI runs `dead-letter args...` in-process, as the binary does, and
// returns the exit status, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := 0
	app := &cli.App{
		Name:      "watermark-connect",
		Writer:    &stdout,
		ErrWriter: &stderr,
		Commands:  []*cli.Command{Command()},
		ExitErrHandler: func(_ *cli.Context, err error) {
			var ec cli.ExitCoder
			if errors.As(err, &ec) {
				code = ec.ExitCode()
			}
		},
	}
	err := app.RunContext(ctxFor(t), append([]string{"watermark-connect", "dead-letter"}, args...))
	if err != nil && code == 0 {
		code = -1
		stderr.WriteString(err.Error())
	}
	return code, stdout.String(), stderr.String()
}

// writeConfig writes a config file and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
	return p
}

func snapshotFor(t *testing.T, cl *kgo.Client, topic string) (map[int32]span, error) {
	return snapshot(ctxFor(t), kadm.NewClient(cl), topic)
}

func kfakeTopics(partitions int32, topics ...string) kfake.Opt {
	return kfake.SeedTopics(partitions, topics...)
}
