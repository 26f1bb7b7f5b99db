package tests

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStallHealsInPlace: the sink is down for one partition's batch longer
// than the retries. The partition stalls, `status` reads why from the broker
// and exits 1 naming the failed offsets, the input replays the partition in
// place while the sink stays down, and when the sink comes back the same
// process (no restart) commits to the log end and `status` exits 0. The
// replays deliver nothing again that the sink had taken.
func TestStallHealsInPlace(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart, batchMax = 4, 2000, 100
	const bad, badOff = int32(1), int64(500)
	topic, group := "wm-heal-"+suffix(), "wm-heal-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 5*time.Millisecond)
	var down atomic.Bool
	down.Store(true)
	var refusals atomic.Int64
	s.setFail(func(recs []rec) bool { // called one request at a time
		if !down.Load() {
			return false
		}
		for _, r := range recs {
			if r.P == bad && r.O == badOff {
				refusals.Add(1)
				return true
			}
		}
		return false
	})
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "heal",
		input: fmt.Sprintf("commit_period: 200ms\nbatch_max_records: %d\nmax_pending_batches: 16\nstall_replay_after: 2s\n"+
			"nack_retry:\n  max_retries: 1\n  initial_backoff: 50ms\n  max_backoff: 50ms\n", batchMax)}
	p := startProc(t, "heal", conf.yaml())

	failed := fmt.Sprintf("%s/%d: stalled: offsets %d-%d for", topic, bad, badOff, badOff+batchMax-1)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group, "--topics", topic)
		assert.Equal(c, 1, code, "status exit; stdout:\n%s\nstderr: %s", stdout, stderr)
		assert.Contains(c, stdout, failed)
		assert.Contains(c, stdout, "status=500", "the error class")
	}, 2*time.Minute, 250*time.Millisecond, "status to name the stalled partition and its failed batch")
	replayLine := fmt.Sprintf("replaying %s/%d in place from offset %d", topic, bad, badOff)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, p.grep(replayLine), "a replay in place")
	}, 2*time.Minute, 100*time.Millisecond, "the partition to replay in place while the sink is down")

	before := s.snapshot()
	down.Store(false)
	healed := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := k.committed(ctx, group, topic)
		if assert.NoError(c, err) {
			assert.Equal(c, end, got, "commits at the log end")
		}
	}, 2*time.Minute, 50*time.Millisecond, "the partition to heal and every partition to commit its log end")
	recovery := time.Since(healed)
	require.True(t, p.running(), "healed in the same process, without a restart")
	code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group, "--topics", topic)
	require.Equal(t, 0, code, "status exit once healed; stdout:\n%s\nstderr: %s", stdout, stderr)

	p.stop(45 * time.Second)
	p.assertClean()
	w.check(t)
	after := s.snapshot()
	dups := after.coverage(t, end)
	again := 0
	for _, offs := range after.since(before) {
		again += len(offs)
	}
	replays := len(p.grep(replayLine))
	figure(t, "heal_in_place records=%d refusals=%d replays=%d duplicates=%d delivered_after_recovery=%d recovery_to_log_end_s=%.2f",
		parts*perPart, refusals.Load(), replays, dups, again, recovery.Seconds())
	require.GreaterOrEqual(t, refusals.Load(), int64(2), "the batch and its retry were refused")
	// The sink records only what it took: a replay in place delivers again
	// only what was not delivered, so nothing it took comes twice.
	require.Zero(t, dups, "duplicates")
	require.False(t, strings.Contains(p.logText(), "dropped without a commit"), "no partition lost")
}
