package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// readTopic reads every record of topic, from its start to the end offsets
// listed when it is called.
func (k *kafka) readTopic(ctx context.Context, topic string) ([]*kgo.Record, error) {
	ends, err := k.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(k.env.Brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset < end {
				out = append(out, r)
				if r.Offset == end-1 {
					delete(want, r.Partition)
				}
			}
		})
	}
	return out, nil
}

// origins returns, per partition of the origin topic, the offsets that the
// dead letters name, and how often each was written.
func origins(t testing.TB, letters []*kgo.Record) map[int32]map[int64]int {
	out := map[int32]map[int64]int{}
	for _, r := range letters {
		h := headers(r)
		p, err1 := strconv.Atoi(h["dead_letter_partition"])
		o, err2 := strconv.ParseInt(h["dead_letter_offset"], 10, 64)
		if err1 != nil || err2 != nil {
			t.Errorf("dead letter at %d without its origin: %v", r.Offset, h)
			continue
		}
		if out[int32(p)] == nil {
			out[int32(p)] = map[int64]int{}
		}
		out[int32(p)][o]++
	}
	return out
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, hd := range r.Headers {
		h[hd.Key] = string(hd.Value)
	}
	return h
}

// TestPoisonRecordSurvivesKills: a record the sink never accepts, in a
// group whose members die with kill -9. Each process delivers it once
// (nack_retry off, replays an hour away), so its attempts reach
// max_attempts only across restarts: the first process's nacked attempt is
// carried in the commit; the second process hands it out after committing
// attempt 2 and dies before any verdict (the crash a poison record can
// cause); the third's attempt 3 is refused and the batch goes to the
// dead-letter topic, and the process is killed after that write and before
// any commit past it (commit_period is an hour); the fourth finds attempt 3
// committed, writes the batch to the dead-letter topic again without
// handing it out (at-least-once: twice, never zero times), and commits to
// the log end. All along, no commit passes a record that reached neither
// the sink nor the dead-letter topic.
func TestPoisonRecordSurvivesKills(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const parts, perPart, batchMax = 4, 2000, 100
	const bad, badOff = int32(1), int64(550)
	topic, group, dlq := "wm-poison-"+suffix(), "wm-poison-g-"+suffix(), "wm-poison-dlq-"+suffix()
	k.createTopic(topic, parts)
	k.createTopic(dlq, 1)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)

	s := newSink(t, topic, parts, 0, 5*time.Millisecond)
	var hold atomic.Bool
	var refusals atomic.Int64
	poisoned := func(recs []rec) bool {
		for _, r := range recs {
			if r.P == bad && r.O == badOff {
				return true
			}
		}
		return false
	}
	s.setFail(func(recs []rec) bool {
		if poisoned(recs) {
			refusals.Add(1)
			return true
		}
		return false
	})
	s.setHold(func(recs []rec) bool { return hold.Load() && poisoned(recs) })
	w := k.watchCommits(group, topic, s, 100*time.Millisecond)
	w.deadLettered = func(ctx context.Context) (map[int32]map[int64]bool, error) {
		letters, err := k.readTopic(ctx, dlq)
		if err != nil {
			return nil, err
		}
		out := map[int32]map[int64]bool{}
		for p, offs := range origins(t, letters) {
			out[p] = map[int64]bool{}
			for o := range offs {
				out[p][o] = true
			}
		}
		return out, nil
	}
	input := func(commitPeriod string) string {
		return fmt.Sprintf("commit_period: %s\nbatch_max_records: %d\nmax_pending_batches: 16\nstall_replay_after: 1h\n"+
			"session_timeout: 6s\nheartbeat_interval: 1s\ndead_letter:\n  topic: %s\n  max_attempts: 3\n", commitPeriod, batchMax, dlq)
	}
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "poison1", input: input("200ms")}
	// attemptsCommitted waits until the group's commit of the bad partition
	// counts n attempts of its batch.
	attemptsCommitted := func(n int32) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			st, err := k.commitStates(testCtx(t, 5*time.Second), group, topic)
			if !assert.NoError(c, err) {
				return
			}
			d, err := commitmeta.DecodeCommit(st[bad].meta)
			if assert.NoError(c, err, st[bad].meta) {
				assert.Contains(c, d.Attempts, commitmeta.Attempts{From: badOff - badOff%batchMax, To: badOff - badOff%batchMax + batchMax, N: n}, st[bad].meta)
			}
		}, 2*time.Minute, 100*time.Millisecond, "a commit counting attempt %d", n)
	}

	p := startProc(t, "poison1", conf.yaml())
	attemptsCommitted(1)
	require.Equal(t, int64(1), refusals.Load())
	// The other partitions' first batches go out only once their attempt
	// is committed (the gate, with a dead-letter topic), after batches
	// behind them: a kill before their own delivery is committed would
	// count an attempt of theirs in each of the three processes killed,
	// and the fourth would dead-letter them. The test is about the
	// poisoned batch alone: wait for the others to be committed past.
	require.Eventually(t, func() bool {
		c, err := k.committed(testCtx(t, 5*time.Second), group, topic)
		if err != nil {
			return false
		}
		for q := range int32(parts) {
			if q != bad && c[q] < batchMax {
				return false
			}
		}
		return true
	}, 2*time.Minute, 50*time.Millisecond, "the other partitions committed past their first batch")
	p.kill()

	hold.Store(true)
	conf.instance = "poison2"
	p = startProc(t, "poison2", conf.yaml())
	s.waitHeld(t, 1, 2*time.Minute)
	attemptsCommitted(2) // before it went out
	p.kill()             // mid-delivery: no verdict ever comes

	hold.Store(false)
	conf.instance, conf.input = "poison3", input("1h")
	p = startProc(t, "poison3", conf.yaml())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		letters, err := k.readTopic(testCtx(t, 10*time.Second), dlq)
		if assert.NoError(c, err) {
			assert.Len(c, letters, batchMax)
		}
	}, 2*time.Minute, 100*time.Millisecond, "the third attempt's batch in the dead-letter topic")
	require.Equal(t, int64(2), refusals.Load(), "attempts 1 and 3 were refused; 2 never had a verdict")
	require.NotEmpty(t, p.grep("dead-lettered 100 record(s) of "+topic+"/1 offsets 500-599", "after 3 attempt(s)"))
	p.kill() // after the write, before a commit past it

	conf.instance, conf.input = "poison4", input("200ms")
	p = startProc(t, "poison4", conf.yaml())
	k.waitCommitted(group, topic, end, 2*time.Minute)
	p.stop(45 * time.Second)
	p.assertClean()
	w.check(t)
	require.Equal(t, int64(2), refusals.Load(), "the fourth process dead-lettered the batch without handing it out")

	letters, err := k.readTopic(testCtx(t, 30*time.Second), dlq)
	require.NoError(t, err)
	require.Len(t, letters, 2*batchMax, "written twice: the kill came between the write and its commit")
	for o, n := range origins(t, letters)[bad] {
		require.Equal(t, 2, n, "offset %d", o)
	}
	for _, r := range letters {
		h := headers(r)
		o, _ := strconv.ParseInt(h["dead_letter_offset"], 10, 64)
		require.Equal(t, topic, h["dead_letter_topic"])
		require.Equal(t, "3", h["dead_letter_attempts"], "attempts counted across the restarts")
		require.Contains(t, h["dead_letter_error"], "500")
		require.Equal(t, value(bad, o), string(r.Value), "the original value")
		require.NotEmpty(t, h["dead_letter_first_failed_ms"])
	}
	final := s.snapshot()
	first := badOff - badOff%batchMax
	for pt := int32(0); pt < parts; pt++ {
		for o := int64(0); o < end[pt]; o++ {
			if pt == bad && o >= first && o < first+batchMax {
				require.Zero(t, final.count(pt, o), "the sink never accepted a dead letter: %d", o)
			} else {
				require.NotZero(t, final.count(pt, o), "partition %d offset %d reached the sink", pt, o)
			}
		}
	}
	code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group, "--topics", topic)
	require.Equal(t, 0, code, "dead-lettering is by design: status exits 0; stdout:\n%s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "DEAD-LETTERED")
	require.Contains(t, stdout, "offsets 500-599")
	figure(t, "poison_kill records=%d refusals=%d kills=3 dead_letter_records=%d dead_letter_attempts=3 copies_per_record=2",
		parts*perPart, refusals.Load(), len(letters))
}
