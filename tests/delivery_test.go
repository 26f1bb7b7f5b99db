package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutOfOrderSink: 200k records over 8 partitions through a sink that
// acknowledges batches after random delays, 32 requests in flight. Every
// record arrives, the commits end at the log end, and a second run of the
// group delivers nothing old.
func TestOutOfOrderSink(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart = 8, 25000
	topic, group := "wm-ooo-"+suffix(), "wm-ooo-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)
	if sum(end) != parts*perPart {
		t.Fatalf("log end offsets %v do not add up to %d", fmtOffsets(end), parts*perPart)
	}

	s := newSink(t, topic, parts, 0, 15*time.Millisecond)
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "run1",
		input: "commit_period: 200ms\nbatch_max_records: 100\n"}

	start := time.Now()
	p := startProc(t, "run1", conf.yaml())
	s.waitTotal(t, parts*perPart, 4*time.Minute)
	k.waitCommitted(group, topic, end, time.Minute)
	took := time.Since(start)
	p.stop(45 * time.Second)
	w.check(t)

	first := s.snapshot()
	dups := first.coverage(t, end)
	t.Logf("run 1: %s", s.stats())
	ooo := s.outOfOrder()
	if ooo == 0 {
		t.Errorf("no batch was acknowledged out of order: the test did not exercise the watermark")
	}
	if dups != 0 {
		t.Errorf("%d duplicate deliveries in a run without failures, crashes or rebalances", dups)
	}
	figure(t, "test=out_of_order records=%d duplicates=%d out_of_order_acks=%d seconds=%.1f", parts*perPart, dups, ooo, took.Seconds())

	// A second run of the same group resumes at the log end. One new record
	// per partition proves it consumes, and that it starts exactly there.
	conf.instance = "run2"
	p2 := startProc(t, "run2", conf.yaml())
	k.produce(topic, parts, 1, end)
	end2 := k.endOffsets(topic)
	s.waitTotal(t, parts*perPart+parts, time.Minute)
	k.waitCommitted(group, topic, end2, time.Minute)
	s.waitIdle(t, 10*time.Second)
	p2.stop(45 * time.Second)
	got := s.snapshot().since(first)
	for pt := int32(0); pt < parts; pt++ {
		want := map[int64]int{end[pt]: 1}
		if fmt.Sprint(got[pt]) != fmt.Sprint(want) {
			t.Errorf("run 2, partition %d: delivered %v, want only the new record %v", pt, got[pt], want)
		}
	}
}

// TestFailedBatchStallsPartition: one record fails on its first delivery.
// Its partition's commit stops at the start of the failed batch for the rest
// of the run while the other partitions complete; a restart delivers the
// failed batch again and the commits reach the end. With commit_metadata
// (the default) the restart skips what run 1 delivered after the failed
// batch, which the commit's metadata carries: it delivers only the failed
// batch and what run 1 never delivered, each once. Without, it replays the
// failed batch and everything after it.
func TestFailedBatchStallsPartition(t *testing.T) {
	for _, withMeta := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit_metadata=%v", withMeta), func(t *testing.T) { testFailedBatchStallsPartition(t, withMeta) })
	}
}

func testFailedBatchStallsPartition(t *testing.T, withMeta bool) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart = 8, 5000
	const batchMax, maxPending = 100, 16
	topic, group := "wm-fail-"+suffix(), "wm-fail-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	bad := int32(rand.IntN(parts))
	badOff := int64(1000 + rand.IntN(2000))
	t.Logf("record %d/%d fails on its first delivery", bad, badOff)
	s := newSink(t, topic, parts, 0, 10*time.Millisecond)
	var failedFirst, failedLast atomic.Int64
	failedFirst.Store(-1)
	s.setFail(func(recs []rec) bool { // called one request at a time
		if failedFirst.Load() >= 0 {
			return false
		}
		for _, r := range recs {
			if r.P == bad && r.O == badOff {
				failedLast.Store(recs[len(recs)-1].O)
				failedFirst.Store(recs[0].O)
				return true
			}
		}
		return false
	})
	failed := func() (int64, int64) { return failedFirst.Load(), failedLast.Load() }

	// While run 1 lasts, no commit of the bad partition may pass the failed
	// batch (nor, before it is known, the failing record).
	var run1 atomic.Bool
	run1.Store(true)
	var passed atomic.Value
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	w.mu.Lock()
	w.onSample = func(c map[int32]int64) {
		if !run1.Load() {
			return
		}
		limit := badOff
		if f := failedFirst.Load(); f >= 0 {
			limit = f
		}
		if off, ok := c[bad]; ok && off > limit {
			passed.Store(fmt.Sprintf("commit %d of partition %d passed the failed batch (limit %d)", off, bad, limit))
		}
	}
	w.mu.Unlock()

	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "run1",
		input: fmt.Sprintf("commit_period: 200ms\nbatch_max_records: %d\nmax_pending_batches: %d\ncommit_metadata: %v\n", batchMax, maxPending, withMeta)}
	p := startProc(t, "run1", conf.yaml())

	// The other partitions complete; the bad one commits exactly up to the
	// failed batch.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ff, _ := failed()
		if !assert.GreaterOrEqual(c, ff, int64(0), "first offset of the failed batch (-1: no batch failed yet)") {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := k.committed(ctx, group, topic)
		if !assert.NoError(c, err, "fetch offsets") {
			return
		}
		for pt, e := range end {
			want := e
			if pt == bad {
				want = ff
			}
			assert.Equalf(c, want, got[pt], "commit of partition %d", pt)
		}
	}, 3*time.Minute, 100*time.Millisecond, "the other partitions to commit their end and partition %d its failed batch", bad)
	ff, fl := failed()
	t.Logf("failed batch %d/%d-%d; other partitions complete", bad, ff, fl)
	// The stall lasts: for ten commit periods the partition's commit stays
	// at the failed batch (the watcher keeps checking it too).
	assert.Never(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := k.committed(ctx, group, topic)
		return err == nil && got[bad] != ff
	}, 2*time.Second, 100*time.Millisecond, "partition %d: the commit moved off the failed batch at %d during the stall", bad, ff)
	if c := k.mustCommitted(group, topic); c[bad] != ff {
		t.Errorf("partition %d: commit moved to %d during the stall, want %d", bad, c[bad], ff)
	}
	if v := passed.Load(); v != nil {
		t.Error(v)
	}
	// The line the monitoring runbook tells an operator to look for.
	msg := fmt.Sprintf("batch %s/%d offsets %d-%d failed", topic, bad, ff, fl)
	if len(p.grep(msg)) == 0 {
		t.Errorf("the log does not say %q", msg)
	}
	s.waitIdle(t, 10*time.Second)
	p.stop(45 * time.Second)
	run1.Store(false)
	if c := k.mustCommitted(group, topic); c[bad] != ff {
		t.Errorf("partition %d: commit %d after a graceful stop, want the failed batch's first offset %d", bad, c[bad], ff)
	}

	// The stalled partition kept delivering only up to max_pending_batches.
	first := s.snapshot()
	var beyond int64
	for o := fl + 1; o < end[bad]; o++ {
		if first.count(bad, o) > 0 {
			beyond++
		}
	}
	t.Logf("run 1: %s; %d records of partition %d after the failed batch were delivered", s.stats(), beyond, bad)
	if limit := int64((maxPending - 1) * batchMax); beyond > limit {
		t.Errorf("partition %d delivered %d records after its failed batch, more than (max_pending_batches-1)*batch_max_records = %d", bad, beyond, limit)
	}
	if first.count(bad, badOff) != 0 {
		t.Errorf("the failing record was recorded as delivered in run 1")
	}
	if beyond == 0 {
		t.Errorf("partition %d delivered nothing after its failed batch: the test proves nothing about skipping", bad)
	}
	if withMeta {
		// The graceful stop's final commit carries, above the failed batch,
		// exactly what run 1 delivered after it.
		c := k.mustCommitStates(group, topic)[bad]
		if c.err != nil || c.m.Base != ff || c.m.Records() != beyond {
			t.Errorf("partition %d: final commit %s (decode error %v), want base %d and ranges holding the %d records delivered after the failed batch", bad, c, c.err, ff, beyond)
		}
		for _, r := range c.ranges() {
			for o := r.From; o < r.To; o++ {
				if first.count(bad, o) == 0 {
					t.Errorf("partition %d: the committed ranges %q hold offset %d, which run 1 never delivered", bad, c.meta, o)
					break
				}
			}
		}
	}

	// Run 2 delivers the failed batch again, and after it what run 1 did
	// not deliver (with commit_metadata) or everything (without), once each
	// and nothing else.
	conf.instance = "run2"
	p2 := startProc(t, "run2", conf.yaml())
	k.waitCommitted(group, topic, end, 2*time.Minute)
	s.waitIdle(t, 10*time.Second)
	p2.stop(45 * time.Second)
	w.check(t)
	final := s.snapshot()
	final.coverage(t, end)
	got := final.since(first)
	for pt := int32(0); pt < parts; pt++ {
		if pt != bad {
			if len(got[pt]) != 0 {
				t.Errorf("run 2 delivered %d records of complete partition %d", len(got[pt]), pt)
			}
			continue
		}
		var want int64
		for o := ff; o < end[bad]; o++ {
			times := 1
			if withMeta && o > fl && first.count(bad, o) > 0 {
				times = 0 // delivered after the failed batch in run 1: skipped
			}
			want += int64(times)
			if got[bad][o] != times {
				t.Errorf("run 2, partition %d: offset %d delivered %d times, want %d (failed batch %d-%d, commit_metadata %v, run 1 delivered it %d times)",
					bad, o, got[bad][o], times, ff, fl, withMeta, first.count(bad, o))
				break
			}
		}
		if n := int64(len(got[bad])); n != want {
			t.Errorf("run 2, partition %d: %d offsets delivered, want %d", bad, n, want)
		}
	}
	skipped := skippedInLog(p2, topic)
	if want := map[int32]int64{bad: beyond}; withMeta && fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Errorf("run 2 logged skipped records %v, want %v", skipped, want)
	} else if !withMeta && len(skipped) != 0 {
		t.Errorf("run 2 skipped records %v with commit_metadata off", skipped)
	}
	t.Logf("after run 2: %s; skipped %v", s.stats(), skipped)
}

// TestCrashRestart: SIGKILL under load at a random moment, then a restart.
// Nothing is lost, and the duplicates are at most the records the sink had
// acknowledged at or above the committed offsets at the moment of the kill
// (delivered but not committed: what a restart from the committed offsets
// alone replays). With commit_metadata (the default) the restart also skips
// the delivered ranges the commits carry, so the duplicates are at most the
// records among those that lie outside the ranges (a bound, not an
// equality: see TestSlowHeadKill for why it is sound).
func TestCrashRestart(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart = 8, 20000
	const total = parts * perPart
	topic, group := "wm-crash-"+suffix(), "wm-crash-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 10*time.Millisecond)
	s.setRate(40000)
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "run1",
		// A short session: the restarted member's join waits until the
		// broker expires the killed one (with the default 1m, about 45 s).
		input: "commit_period: 1s\nbatch_max_records: 200\nmax_pending_batches: 64\nsession_timeout: 6s\nheartbeat_interval: 1s\n"}
	p := startProc(t, "run1", conf.yaml())
	frac := 0.2 + 0.5*rand.Float64()
	s.waitTotal(t, int64(frac*total), 3*time.Minute)
	p.kill()
	t.Logf("killed at %.0f%% of the records (%d acknowledged)", frac*100, s.total())

	// Requests the dead process left behind still finish (and count as
	// delivered); a commit it sent just before dying may still land. Wait
	// for both to settle.
	s.waitIdle(t, 30*time.Second)
	// Settled: the same commits fetched at least 300ms apart.
	const settle = 300 * time.Millisecond
	var atKill map[int32]int64 // the last commits fetched
	var since time.Time        // when atKill was first fetched
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := k.committed(ctx, group, topic)
		if !assert.NoError(c, err, "fetch offsets") {
			return
		}
		if atKill == nil || !equalOffsets(got, atKill) {
			atKill, since = got, time.Now()
		}
		assert.GreaterOrEqualf(c, time.Since(since), settle, "commits %s unchanged for", fmtOffsets(atKill))
	}, 30*time.Second, 100*time.Millisecond, "the commits to settle after the kill")
	d1 := s.snapshot()
	// The bound: records delivered at or above the commit.
	var bound, committedTotal int64
	for pt := int32(0); pt < parts; pt++ {
		c := atKill[pt]
		committedTotal += c
		for o := int64(0); o < d1.len(pt); o++ {
			if d1.count(pt, o) == 0 {
				if o < c {
					t.Errorf("partition %d: committed %d at the kill but offset %d was never delivered", pt, c, o)
				}
				continue
			}
			if o >= c {
				bound++
			}
		}
	}
	ranged := k.mustCommitStates(group, topic) // the settled commits, with their metadata
	var outside int64
	for pt := int32(0); pt < parts; pt++ {
		_, r := replayOf(d1, pt, ranged[pt])
		outside += r
	}
	t.Logf("at the kill: commits %v (%d records behind them), %d records delivered but not committed, %d of them outside the committed ranges",
		fmtOffsets(atKill), committedTotal, bound, outside)

	conf.instance = "run2"
	p2 := startProc(t, "run2", conf.yaml())
	k.waitCommitted(group, topic, end, 3*time.Minute)
	s.waitIdle(t, 10*time.Second)
	p2.stop(45 * time.Second)
	w.check(t)

	final := s.snapshot()
	dups := final.coverage(t, end)
	for pt, offs := range final.since(d1) {
		for o := range offs {
			if o < atKill[pt] {
				t.Errorf("partition %d: offset %d delivered again although it was below the commit %d", pt, o, atKill[pt])
				break
			}
		}
	}
	if dups > bound {
		t.Errorf("%d duplicate deliveries, more than the %d records delivered but not committed at the kill", dups, bound)
	}
	if dups > outside {
		t.Errorf("%d duplicate deliveries, more than the %d records delivered at the kill outside the committed ranges", dups, outside)
	}
	t.Logf("%s", s.stats())
	figure(t, "test=crash records=%d killed_at_pct=%.0f crash_duplicates=%d bound_delivered_not_committed=%d bound_outside_ranges=%d", total, frac*100, dups, bound, outside)
}
