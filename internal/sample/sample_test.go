package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

func newCluster(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// ends returns the end offset of each partition of topic.
func ends(t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func run(t *testing.T, o Options) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), o, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The README's route to a real broker starts here: the topic does not
// exist, sample creates it and fills it; a second run adds to it.
func TestSampleCreatesAndFills(t *testing.T) {
	addr := newCluster(t)
	o := Options{Conn: status.Conn{SeedBrokers: []string{addr}}, Topic: "orders", Partitions: 3, Records: 2500, Timeout: 20 * time.Second, Seed: 1}
	code, stdout, stderr := run(t, o)
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "created topic orders with 3 partition(s)\nproduced 2500 of 2500 record(s) to orders\n", stdout)
	e := ends(t, addr, "orders")
	require.Len(t, e, 3)
	assert.Equal(t, int64(2500), e[0]+e[1]+e[2])

	o.Records, o.Partitions = 10, 8
	code, stdout, stderr = run(t, o)
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "topic orders exists with 3 partition(s)\nproduced 10 of 10 record(s) to orders\n", stdout, "--partitions only applies to a topic it creates")
	e = ends(t, addr, "orders")
	assert.Equal(t, int64(2510), e[0]+e[1]+e[2])
}

func TestSampleRecordsAreKeyedJSON(t *testing.T) {
	r := record("orders", 7, rand.New(rand.NewPCG(3, 30)))
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.Value, &v), string(r.Value))
	assert.Equal(t, float64(7), v["order_id"])
	assert.Equal(t, v["customer"], string(r.Key))
}

func TestSampleRefusesBadOptions(t *testing.T) {
	code, stdout, stderr := run(t, Options{Partitions: 0, Records: -1})
	assert.Equal(t, ExitFailed, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "--topic is required")
	assert.Contains(t, stderr, "--partitions (0) must be between 1 and 10000")
	assert.Contains(t, stderr, "--records (-1) must be between 0 and 10000000")
	assert.Contains(t, stderr, "--timeout (0s) must be positive")
}

func TestSampleUnreachableBroker(t *testing.T) {
	code, _, stderr := run(t, Options{Conn: status.Conn{SeedBrokers: []string{"127.0.0.1:1"}}, Topic: "orders", Partitions: 1, Records: 1, Timeout: 2 * time.Second})
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, stderr, "cannot reach seed brokers 127.0.0.1:1")
}
