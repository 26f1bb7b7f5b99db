package demo

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/urfave/cli/v2"

	"github.com/watermark-connect/watermark-connect/internal/status"
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

// quick are short replay timings: the sink rejects a failed batch for
// 100ms, the input replays it 400ms after the stall, once, and the sink
// takes it. The broker shows the stall for at least 400ms, more than the
// demo's 250ms between two status answers.
func quick(o demoOptions) demoOptions {
	o.StallReplayAfter, o.FailFor = 400*time.Millisecond, 100*time.Millisecond
	return o
}

// The demo's story as its defaults tell it, at a quarter of their pace
// (stall_replay_after 600ms, the sink failing for 1.45s): the failed batch
// stalls its partition, status (from the broker) names it and exits 1, the
// first replay in place (at 0.6s-1.1s) meets the sink still failing, the
// second (1.2s after that, the backoff) is accepted, and every partition
// reaches its log end in the same process, with status healthy again. The
// only duplicates are the failed batch's two re-deliveries.
func TestDemoHealsInPlace(t *testing.T) {
	t.Parallel()
	r, out := runDemoT(t, demoOptions{Partitions: 4, Records: 2000, FailBatches: 1, Seed: 42, Duration: 40 * time.Second,
		StallReplayAfter: 600 * time.Millisecond, FailFor: 1450 * time.Millisecond}, false)
	require.True(t, r.Settled, out)
	assert.Equal(t, 2000, r.Distinct, "every record delivered at least once:\n%s", out)
	require.Len(t, r.Failures, 1, out)
	f := r.Failures[0]
	require.Len(t, f.Deliveries, 3, "delivered again by each of two replays:\n%s", out)
	const extra = 2
	assert.True(t, f.Deliveries[extra].Accepted, "the last delivery was accepted")
	assert.Equal(t, extra, f.rejections(), "every delivery but the last was rejected")
	assert.GreaterOrEqual(t, f.Deliveries[2].Start.Sub(f.Deliveries[1].Answered), 1200*time.Millisecond,
		"the second replay waited twice stall_replay_after")

	assert.Equal(t, int64(extra), r.Replays, "each replay in place delivers the failed batch once more")
	assert.Equal(t, int(f.records())*extra, r.Duplicates, "duplicates = the failed batch's records x its extra deliveries:\n%s", out)
	for _, v := range r.Parts {
		assert.Equal(t, v.LogEnd, v.Committed, "partition %d commits to the log end:\n%s", v.Partition, out)
		if v.Partition == f.Partition {
			assert.Equal(t, r.Replays, v.Replays)
			assert.True(t, v.healed())
		} else {
			assert.Zero(t, v.Replays, "partition %d", v.Partition)
			assert.Equal(t, 0, v.Sink.Dups, "partition %d delivers nothing twice", v.Partition)
		}
	}

	st := r.Story
	require.NotNil(t, st.firstStall, "status saw the stall:\n%s", out)
	assert.Equal(t, status.ExitStalled, st.firstStall.Exit)
	stalled := stalledPartitions(st.firstStall)
	require.Len(t, stalled, 1, st.firstStall.Text)
	assert.Equal(t, f.Partition, stalled[0].Partition)
	assert.Equal(t, f.First, stalled[0].Stall.First, "status names the failed batch")
	assert.Equal(t, f.Last, stalled[0].Stall.Last)
	// The error class (internal/errclass) keeps the demo's error whole:
	// its topic/partition, offset range and reason phrase all pass.
	assert.Equal(t, fmt.Sprintf("HTTP 503 Service Unavailable from downstream for watermark-demo/%d offsets %d-%d (injected failure)",
		f.Partition, f.First, f.Last), stalled[0].Stall.Reason, "status reads the sink's error as text, nothing redacted")
	assert.Equal(t, f.Err, stalled[0].Stall.Reason)
	require.NotNil(t, st.healthyAgain, "status healthy again while running:\n%s", out)
	require.NotNil(t, st.final)
	assert.Equal(t, status.ExitHealthy, st.final.Exit, st.final.Text)

	u := unwrapped(out)
	assert.Contains(t, out, "status after the stop:      exit 0: group watermark-demo: healthy, none of 4 partitions stalled")
	assert.Contains(t, out, fmt.Sprintf("(only the failed batch's re-deliveries: %d records x %d more deliveries)", f.records(), extra))
	assert.Contains(t, u, fmt.Sprintf("The sink rejected batch %d-%d: %s.", f.First, f.Last, f.Err))
	assert.Contains(t, u, "saw it and exited 1")
	assert.Contains(t, u, fmt.Sprintf("Replay 1 in place, 600ms (stall_replay_after) after the stall: the input ended the partition's epoch and read it again from offset %d", f.First))
	assert.Contains(t, u, "the failed batch was delivered again and the sink rejected it again")
	assert.Contains(t, u, "Replay 2 in place, 1.2s after it failed again (the wait doubles for each replay at the same offset): the input ended")
	assert.Contains(t, u, "the failed batch was delivered again and the sink accepted it")
	assert.Contains(t, u, "the partition healed without a restart")
	assert.Contains(t, u, "healthy, none of 4 partitions stalled (exit 0)")
	assert.Contains(t, out, fmt.Sprintf("healed in place after %d replay(s)", r.Replays))
	assert.NotContains(t, out, "\x1b[", "no escape codes when the output is not a terminal")
}

// stalledPartitions returns the partitions a status answer names stalled.
func stalledPartitions(s *statusSeen) []status.Partition {
	var out []status.Partition
	for _, p := range s.Report.Partitions {
		if p.Stalled() {
			out = append(out, p)
		}
	}
	return out
}

// With --stall-replay-after 0 the partition stays stalled exactly at the
// failed batch, as before replays in place, and status exits 1 at the end.
func TestDemoStallsExactlyAtTheFailedBatch(t *testing.T) {
	t.Parallel()
	r, out := runDemoT(t, demoOptions{Partitions: 4, Records: 2000, FailBatches: 1, Seed: 42, Duration: 40 * time.Second,
		StallReplayAfter: neverReplay, FailFor: 100 * time.Millisecond}, false)
	require.True(t, r.Settled, out)
	assert.Equal(t, 2000, r.Produced)
	assert.Equal(t, 2000, r.Distinct, "every record delivered at least once:\n%s", out)
	assert.Zero(t, r.Duplicates, "nothing delivers the failed batch again")
	assert.Zero(t, r.Replays)

	require.Len(t, r.Failures, 1, out)
	f := r.Failures[0]
	assert.Len(t, f.Deliveries, 1, "delivered once")
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
	require.NotNil(t, r.Story.final)
	assert.Equal(t, status.ExitStalled, r.Story.final.Exit, "status exits 1 at the end:\n%s", r.Story.final.Text)
	stalled := stalledPartitions(r.Story.final)
	require.Len(t, stalled, 1)
	assert.Equal(t, f.Partition, stalled[0].Partition)
	assert.Equal(t, f.First, stalled[0].Committed)
	assert.Equal(t, f.First, stalled[0].Stall.First)

	assert.Contains(t, out, "Summary")
	assert.Contains(t, out, "distinct records delivered: 2000 of 2000")
	assert.Contains(t, out, "status after the stop:      exit 1: group watermark-demo: 1 of 4 partitions stalled")
	assert.Contains(t, out, fmt.Sprintf("partition %d: committed offset %d, the failed batch's first offset is %d", f.Partition, f.First, f.First))
	u := unwrapped(out)
	assert.Contains(t, u, fmt.Sprintf("The sink rejected batch %d-%d: %s.", f.First, f.Last, f.Err))
	assert.Contains(t, u, fmt.Sprintf("the partition stays stalled at offset %d until a restart", f.First))
	assert.Contains(t, u, fmt.Sprintf("commit stopped exactly at offset %d, the failed batch's first offset", f.First))
	assert.Contains(t, u, fmt.Sprintf("partition %d stays stalled at offset %d, the failed batch's first offset, until a restart", f.Partition, f.First))
	assert.Contains(t, u, fmt.Sprintf("resumes partition %d at offset %d", f.Partition, f.First))
	assert.NotContains(t, out, "Replay 1")
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
	r, out := runDemoT(t, demoOptions{Partitions: 2, Records: 4000, FailBatches: 1, MaxPending: 4, Seed: 7, Duration: 40 * time.Second,
		StallReplayAfter: neverReplay}, false)
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
	assert.Contains(t, out, "paused with 4 batches pending behind the failed one (max_pending_batches: 4 per partition)")
	assert.Contains(t, unwrapped(out), "With 4 batches pending behind the failed one (max_pending_batches: 4 per partition), the partition paused its fetching")
}

// With --brokers the demo works against an existing cluster and group: a
// second run of the same group resumes the partition left stalled by
// --stall-replay-after 0 at the failed batch, which is the restart the
// summary promises.
func TestDemoRestartResumesAtTheFailedBatch(t *testing.T) {
	t.Parallel()
	k, err := kfake.NewCluster(kfake.NumBrokers(1)) // no topics: the first run creates it
	require.NoError(t, err)
	t.Cleanup(k.Close)
	o := demoOptions{Brokers: k.ListenAddrs(), Topic: "replay", Group: "replay-group", Partitions: 3, Records: 600,
		FailBatches: 1, Seed: 3, Duration: 40 * time.Second, StallReplayAfter: neverReplay}
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

// escapes matches the live table's escape sequences.
var escapes = regexp.MustCompile(`\x1b\[[0-9?]*[A-Za-z]`)

func TestDemoLiveTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		deadLetterAfter int
		healed          string // the failed partition's state at the end
	}{{0, "healed, "}, {2, "dead-lettered, "}} {
		t.Run(fmt.Sprintf("dead-letter-after %d", c.deadLetterAfter), func(t *testing.T) {
			t.Parallel()
			r, out := runDemoT(t, quick(demoOptions{Partitions: 2, Records: 200, FailBatches: 1, Duration: 40 * time.Second,
				DeadLetterAfter: c.deadLetterAfter}), true)
			require.True(t, r.Settled, out)
			assert.Contains(t, out, "\x1b[?25l", "hides the cursor")
			assert.Contains(t, out, "\x1b[?25h", "and shows it again")
			assert.Contains(t, out, "STALLED at")
			assert.Contains(t, out, "watermark-connect status, asked of the broker at", "status is mirrored in the live view")
			assert.Contains(t, out, "partition(s) not stalled left out")
			assert.Contains(t, out, "stalled: offsets")
			assert.Contains(t, out, c.healed)
			assert.Contains(t, out, "Summary")
			for _, line := range strings.Split(out[:strings.Index(out, "Summary")], "\n") {
				plain := escapes.ReplaceAllString(line, "")
				assert.LessOrEqual(t, len([]rune(plain)), liveWidth, "a redrawn line must not wrap: %q", plain)
			}
		})
	}
}

func TestDemoOptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, demoOptions{}.withDefaults().validate())
	require.NoError(t, demoOptions{StallReplayAfter: neverReplay}.withDefaults().validate())
	err := demoOptions{Records: -1, FailBatches: -2, LogLevel: "loud", FailFor: -time.Second, StallReplayAfter: -time.Second}.withDefaults().validate()
	require.Error(t, err)
	for _, want := range []string{"--records", "--fail-batches", "--log-level", "--fail-for", "--stall-replay-after must be at least 0"} {
		assert.Contains(t, err.Error(), want)
	}

	require.NoError(t, demoOptions{DeadLetterAfter: 5}.withDefaults().validate())
	require.NoError(t, demoOptions{DeadLetterAfter: 1, StallReplayAfter: neverReplay}.withDefaults().validate(),
		"without replays the input dead-letters at the first attempt: 1 is what it does")
	err = demoOptions{DeadLetterAfter: 3, StallReplayAfter: neverReplay}.withDefaults().validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--dead-letter-after 3 needs replays in place")
	err = demoOptions{DeadLetterAfter: -1}.withDefaults().validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--dead-letter-after must be at least 0")
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
	out, err := run("--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9",
		"--stall-replay-after", "400ms", "--fail-for", "100ms")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Summary (")
	assert.Contains(t, out, "seed 9")
	assert.Contains(t, out, "stall_replay_after 400ms")
	assert.Contains(t, out, "records produced:           300 (2 partitions")
	assert.Contains(t, out, "distinct records delivered: 300 of 300")
	assert.Contains(t, out, "status after the stop:      exit 0")

	// 0 is stall_replay_after: 0s, not the flag's default.
	out, err = run("--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9", "--stall-replay-after", "0")
	require.NoError(t, err, out)
	assert.Contains(t, out, "stall_replay_after 0s")
	assert.Contains(t, out, "status after the stop:      exit 1")

	_, err = run("--partitions", "0", "--records", "-1", "--fail-for", "0s", "--stall-replay-after", "-1s")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--partitions must be at least 1")
	assert.Contains(t, err.Error(), "--records must be at least 1")
	assert.Contains(t, err.Error(), "--fail-for must be greater than 0")
	assert.Contains(t, err.Error(), "--stall-replay-after must be at least 0")
}
