package demo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/urfave/cli/v2"
)

// runDemoT runs the demo to a buffer (not a terminal) within 50s.
func runDemoT(t *testing.T, o demoOptions, live bool) (*demoResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if o.MaxLatency == 0 {
		o.MaxLatency = 5 * time.Millisecond
	}
	var buf bytes.Buffer
	r, err := runDemo(ctx, o, &buf, live)
	require.NoError(t, err, buf.String())
	return r, buf.String()
}

// unwrapped joins the summary's wrapped paragraph back into one line.
func unwrapped(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func TestDemoStallsExactlyAtTheFailedBatch(t *testing.T) {
	t.Parallel()
	r, out := runDemoT(t, demoOptions{Partitions: 4, Records: 2000, FailBatches: 1, Seed: 42, Duration: 40 * time.Second}, false)
	require.True(t, r.Settled, out)
	assert.Equal(t, 2000, r.Produced)
	assert.Equal(t, 2000, r.Distinct, "every record delivered at least once:\n%s", out)
	assert.Zero(t, r.Duplicates, "a single run without rebalances delivers nothing twice")

	require.Len(t, r.Failures, 1, out)
	f := r.Failures[0]
	require.Len(t, r.Parts, 4)
	for _, v := range r.Parts {
		if v.Partition == f.Partition {
			assert.Equal(t, f.First, v.Committed, "the stalled partition's commit stops at the failed batch's first offset:\n%s", out)
			assert.Greater(t, f.First, v.Start, "the failed batch is not the partition's first: a prefix was committed")
			assert.True(t, v.Stalled, "the input reported the partition stalled")
			continue
		}
		assert.Equal(t, v.LogEnd, v.Committed, "partition %d commits to the log end:\n%s", v.Partition, out)
		assert.Equal(t, int64(500), v.LogEnd)
	}

	assert.Contains(t, out, "Summary")
	assert.Contains(t, out, "distinct records delivered: 2000 of 2000")
	assert.Contains(t, out, fmt.Sprintf("partition %d: committed offset %d, the failed batch's first offset is %d", f.Partition, f.First, f.First))
	assert.Contains(t, out, fmt.Sprintf("batch %d-%d failed: %s", f.First, f.Last, f.Err))
	assert.Contains(t, unwrapped(out), fmt.Sprintf("commit stopped exactly at offset %d, the failed batch's first offset", f.First))
	assert.Contains(t, unwrapped(out), fmt.Sprintf("resumes partition %d at offset %d", f.Partition, f.First))
	assert.NotContains(t, out, "\x1b[", "no escape codes when the output is not a terminal")
}

func TestDemoWithoutFailuresCommitsEverything(t *testing.T) {
	t.Parallel()
	r, out := runDemoT(t, demoOptions{Partitions: 3, Records: 900, FailBatches: 0, Duration: 40 * time.Second}, false)
	require.True(t, r.Settled, out)
	assert.Equal(t, 900, r.Distinct)
	assert.Empty(t, r.Failures)
	for _, v := range r.Parts {
		assert.Equal(t, v.LogEnd, v.Committed, "partition %d", v.Partition)
	}
	assert.Contains(t, unwrapped(out), "No batch failed, so every partition's commit reached its log end")
}

// A max_pending_batches smaller than what follows the failed batch pauses
// the stalled partition: its later records are not delivered, the others'
// all are.
func TestDemoPausesTheStalledPartition(t *testing.T) {
	t.Parallel()
	r, out := runDemoT(t, demoOptions{Partitions: 2, Records: 4000, FailBatches: 1, MaxPending: 4, Seed: 7, Duration: 40 * time.Second}, false)
	require.True(t, r.Settled, out)
	require.Len(t, r.Failures, 1, out)
	f := r.Failures[0]
	for _, v := range r.Parts {
		if v.Partition == f.Partition {
			assert.True(t, v.Paused, "paused at max_pending_batches:\n%s", out)
			assert.Equal(t, int64(4), v.Pending)
			assert.Equal(t, f.First, v.Committed)
			assert.Less(t, int64(v.Sink.Distinct), v.Sink.Expected, "records behind the pause are not delivered")
		} else {
			assert.Equal(t, v.LogEnd, v.Committed)
			assert.Equal(t, v.Sink.Expected, int64(v.Sink.Distinct))
		}
	}
	assert.Contains(t, out, "paused with 4 batches pending")
}

// With --brokers the demo works against an existing cluster and group: a
// second run of the same group resumes the stalled partition at the failed
// batch, which is the restart the summary promises.
func TestDemoRestartResumesAtTheFailedBatch(t *testing.T) {
	t.Parallel()
	k, err := kfake.NewCluster(kfake.NumBrokers(1)) // no topics: the first run creates it
	require.NoError(t, err)
	t.Cleanup(k.Close)
	o := demoOptions{Brokers: k.ListenAddrs(), Topic: "replay", Group: "replay-group", Partitions: 3, Records: 600,
		FailBatches: 1, Seed: 3, Duration: 40 * time.Second}
	r1, out1 := runDemoT(t, o, false)
	require.True(t, r1.Settled, out1)
	require.Len(t, r1.Failures, 1, out1)
	f := r1.Failures[0]

	o.FailBatches, o.Records = 0, 300
	r2, out2 := runDemoT(t, o, false)
	require.True(t, r2.Settled, out2)
	assert.Contains(t, out2, "using the existing topic replay with 3 partitions")
	for _, v := range r2.Parts {
		if v.Partition == f.Partition {
			assert.Equal(t, f.First, v.Start, "the restart resumes at the failed batch's first offset")
		} else {
			assert.Equal(t, int64(200), v.Start, "the others resume where the first run committed")
		}
		assert.Equal(t, v.LogEnd, v.Committed, "partition %d", v.Partition)
		assert.Equal(t, v.Sink.Expected, int64(v.Sink.Distinct), "partition %d: everything from the resume point delivered", v.Partition)
	}
}

func TestDemoLiveTable(t *testing.T) {
	t.Parallel()
	_, out := runDemoT(t, demoOptions{Partitions: 2, Records: 200, FailBatches: 1, Duration: 40 * time.Second}, true)
	assert.Contains(t, out, "\x1b[?25l", "hides the cursor")
	assert.Contains(t, out, "\x1b[?25h", "and shows it again")
	assert.Contains(t, out, "STALLED at")
	assert.Contains(t, out, "Summary")
	for _, line := range strings.Split(out[:strings.Index(out, "Summary")], "\n") {
		plain := line
		for _, seq := range []string{"\x1b[K", "\x1b[J", "\x1b[?25l", "\x1b[?25h"} {
			plain = strings.ReplaceAll(plain, seq, "")
		}
		assert.LessOrEqual(t, len([]rune(plain)), 90, "a redrawn line must not wrap: %q", plain)
	}
}

func TestDemoOptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, demoOptions{}.withDefaults().validate())
	err := demoOptions{Records: -1, FailBatches: -2, LogLevel: "loud"}.withDefaults().validate()
	require.Error(t, err)
	for _, want := range []string{"--records", "--fail-batches", "--log-level"} {
		assert.Contains(t, err.Error(), want)
	}
}

// Command parses its flags into the run, as the binary's `demo` does.
func TestCommand(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (string, error) {
		var buf bytes.Buffer
		app := &cli.App{Name: "watermark-connect", Writer: &buf, ErrWriter: &buf, Commands: []*cli.Command{Command()}}
		err := app.Run(append([]string{"watermark-connect", "demo"}, args...))
		return buf.String(), err
	}
	out, err := run("--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Summary (")
	assert.Contains(t, out, "seed 9")
	assert.Contains(t, out, "records produced:           300 (2 partitions")
	assert.Contains(t, out, "distinct records delivered: 300 of 300")

	_, err = run("--partitions", "0", "--records", "-1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--partitions must be at least 1")
	assert.Contains(t, err.Error(), "--records must be at least 1")
}
