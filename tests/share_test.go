package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// TestShareWorkQueue: three kafka_share processes of two members each on
// a topic of one partition, with a group lock of 4 s, and everything that
// can happen to a record at once:
//
//   - the sink fails some requests (each record at most once): their
//     records are released and come back, to any process, at attempt 2 or
//     more;
//   - one record fails in the pipeline on every delivery (a mapping error,
//     nacked alone through reject_errored): after its third attempt it is
//     in the dead-letter topic, never in the sink;
//   - one batch of m1 is held by the sink for 2.5 locks: its locks are
//     renewed, so it is delivered once, at attempt 1, and to no other
//     member;
//   - m3 is killed with kill -9 while the sink holds its requests: their
//     records come back to m1 and m2 at their next attempt (the figure
//     says how soon: Kafka 4.3.1 releases a member's records when its
//     connection closes, before their lock ends); the held requests then
//     complete, as a real sink would finish them, so those records are
//     delivered twice: duplicates caused by the kill.
//
// Checked from outside all along: the share-partition start offset never
// passes a record that reached neither the sink nor the dead-letter topic
// (accepted only after the sink took it). At the end, once the members
// left, the broker hands out nothing of the topic (checkDrained); every record reached
// the sink or the dead-letter topic (none lost); every duplicate has a
// delivery by the killed process; every delivery at attempt 2 or more is
// of a record the sink failed, or came after the kill.
func TestShareWorkQueue(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const records = 6000
	const poison = int64(1234)
	const lock = 4 * time.Second
	topic, group, dlq := "wm-share-"+suffix(), "wm-share-g-"+suffix(), "wm-share-dlq-"+suffix()
	k.createTopic(topic, 1)
	k.createTopic(dlq, 1)
	k.setGroupConfig(group, "share.record.lock.duration.ms", strconv.Itoa(int(lock/time.Millisecond)))
	k.produce(topic, 1, records, nil)

	s := newShareSink(t, topic, 2*time.Millisecond, 10*time.Millisecond)
	s.SetRate(300) // about 20 s of stream: time for the slow batch and the kill
	var failedRequests atomic.Int64
	var armed atomic.Bool // the slow batch and the kill's requests are held from now on
	s.setFailOnce(func(recs []rec) bool {
		// A request of first deliveries holding an offset 5 mod 97 fails,
		// up to 20 of them and none once the holds are armed: no record is
		// failed by the sink twice, and the held requests are not failed.
		if failedRequests.Load() >= 20 || armed.Load() {
			return false
		}
		hit := false
		for _, r := range recs {
			if r.A != 1 {
				return false
			}
			hit = hit || r.O%97 == 5
		}
		if hit {
			failedRequests.Add(1)
		}
		return hit
	})
	slowGate, killGate := testkit.NewGate(), testkit.NewGate()
	var slowOnce sync.Once
	var heldMu sync.Mutex
	var slowRecs, killRecs []rec
	s.setPick(func(b testkit.Batch) *testkit.Gate {
		if !armed.Load() {
			return nil
		}
		switch b.Instance {
		case "m1":
			var g *testkit.Gate
			slowOnce.Do(func() {
				g = slowGate
				heldMu.Lock()
				slowRecs = append(slowRecs, b.Records...)
				heldMu.Unlock()
			})
			return g
		case "m3":
			heldMu.Lock()
			killRecs = append(killRecs, b.Records...)
			heldMu.Unlock()
			return killGate
		}
		return nil
	})
	letters := func(ctx context.Context) (map[int64]bool, error) {
		rs, err := k.readTopic(ctx, dlq)
		if err != nil {
			return nil, err
		}
		out := map[int64]bool{}
		for o := range origins(t, rs)[0] {
			out[o] = true
		}
		return out, nil
	}
	w := k.watchShare(group, topic, s, letters)

	procs := map[string]*proc{}
	addrs := map[string]string{}
	for _, name := range []string{"m1", "m2", "m3"} {
		addrs[name] = metricsAddr(t)
		conf := sharePipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.URL(), instance: name,
			metrics: addrs[name], poison: poison,
			input: fmt.Sprintf("members: 2\nbatch_max_records: 50\ndead_letter:\n  topic: %s\n  max_attempts: 3\n", dlq)}
		procs[name] = startProc(t, name, conf.yaml())
	}
	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, name := range []string{"m1", "m2", "m3"} {
			assert.Positive(c, s.instanceRecords(name), "records accepted from %s", name)
		}
	}, 60*time.Second, 50*time.Millisecond, "every process to deliver")
	armed.Store(true)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.EqualValues(c, 1, slowGate.Waiting(), "slow batch held")
		assert.Positive(c, killGate.Waiting(), "requests of m3 held")
	}, 30*time.Second, 20*time.Millisecond, "a slow batch of m1 and a request of m3 held")
	slowAt := time.Now()

	procs["m3"].kill()
	killedAt := time.Now()
	heldMu.Lock()
	victims := append([]rec(nil), killRecs...)
	heldMu.Unlock()
	// The held records come back to m1 and m2.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, r := range victims {
			assert.NotEmpty(c, s.of(r.O), "offset %d delivered again", r.O)
		}
	}, 30*time.Second, 20*time.Millisecond, "the records m3 held to come back")
	backAfter := time.Since(killedAt)
	for _, r := range victims {
		if ds := s.of(r.O); ds[0].attempt <= r.A || ds[0].instance == "m3" {
			t.Errorf("offset %d, held by m3 at attempt %d, came back as %+v, want a later attempt by m1 or m2", r.O, r.A, ds[0])
		}
	}
	killGate.Open() // m3's requests complete after all: the kill's duplicates

	// The slow batch stays held for 2.5 locks while m1 renews it.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, time.Since(slowAt), 5*lock/2, "held for 2.5 locks")
	}, 30*time.Second, 50*time.Millisecond, "the slow batch held")
	slowGate.Open()
	slowFor := time.Since(slowAt)

	waitSettled(t, s, records, poison, addrs["m1"], addrs["m2"])
	took := time.Since(start)
	w.check(t)
	counts := map[string]shareCounts{}
	for _, name := range []string{"m1", "m2"} {
		counts[name] = scrapeShare(t, addrs[name])
		procs[name].stop(45 * time.Second)
		require.Empty(t, procs[name].grep("held at close"), "%s held nothing when stopped", name)
	}
	total := counts["m1"].add(counts["m2"])
	k.checkDrained(group, topic)

	// The dead-letter topic holds the poison record, at attempt 3.
	rs, err := k.readTopic(testCtx(t, 30*time.Second), dlq)
	require.NoError(t, err)
	require.NotEmpty(t, rs, "the poison record dead-lettered")
	for _, r := range rs {
		h := headers(r)
		require.Equal(t, strconv.FormatInt(poison, 10), h["dead_letter_offset"])
		require.Equal(t, "3", h["dead_letter_attempts"])
		require.Equal(t, group, h["dead_letter_share_group"], "a share group's letter names it")
		require.Equal(t, value(0, poison), string(r.Value))
	}
	require.Empty(t, s.of(poison), "the sink never took the poison record")

	// None lost; duplicates only from the kill; late attempts explained.
	slowSet := map[int64]bool{}
	for _, r := range slowRecs {
		slowSet[r.O] = true
	}
	victimSet := map[int64]bool{}
	for _, r := range victims {
		victimSet[r.O] = true
	}
	// dupsHeld are the duplicates of the requests held at the kill;
	// dupsUnsent those of records m3 had delivered before it, whose accept
	// had not reached the broker (kgo sends verdicts with the member's next
	// fetch, or within a second).
	var dups, dupsHeld, dupsUnsent, retriedFailed, retriedKill int64
	for o := range int64(records) {
		ds := s.of(o)
		if o == poison {
			continue
		}
		if len(ds) == 0 {
			t.Errorf("offset %d reached neither the sink nor the dead-letter topic: lost", o)
			continue
		}
		if slowSet[o] && (len(ds) != 1 || ds[0].attempt != 1 || ds[0].instance != "m1") {
			t.Errorf("offset %d of the slow batch: deliveries %+v, want one, at attempt 1, by m1: renewed, not redelivered", o, ds)
		}
		byKilled := false
		for _, d := range ds {
			byKilled = byKilled || d.instance == "m3"
			if d.attempt > 1 {
				switch {
				case s.wasFailed(o):
					retriedFailed++
				case d.at.After(killedAt):
					retriedKill++
				default:
					t.Errorf("offset %d delivered at attempt %d at %v, before the kill, and never failed by the sink", o, d.attempt, d.at.Sub(start))
				}
			}
		}
		if len(ds) > 1 {
			dups += int64(len(ds) - 1)
			switch {
			case victimSet[o]:
				dupsHeld += int64(len(ds) - 1)
			case byKilled:
				dupsUnsent += int64(len(ds) - 1)
			default:
				t.Errorf("offset %d delivered %d times, none by the killed process: %+v", o, len(ds), ds)
			}
		}
	}
	for _, o := range s.failedOffsets() {
		if ds := s.of(o); len(ds) == 0 || ds[len(ds)-1].attempt < 2 {
			t.Errorf("offset %d, failed by the sink, was accepted at %+v, want attempt 2 or more", o, ds)
		}
	}
	require.Positive(t, s.failedCount(), "the sink failed some requests")
	require.Zero(t, total.rejected, "with a dead-letter topic nothing is rejected")
	require.Positive(t, counts["m1"].renewals, "m1 renewed its slow batch")
	require.Zero(t, total.lockExpired, "no verdict of m1 or m2 came after its lock")
	require.Zero(t, total.ackErrors)

	code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--share-group", group, "--dead-letter-topic", dlq, "--format", "json")
	require.Equal(t, 0, code, "status --share-group: %s %s", stdout, stderr)
	var st struct {
		Lock       int64 `json:"record_lock_duration_ms"`
		Limit      int32 `json:"delivery_count_limit"`
		Partitions []struct {
			Start int64  `json:"start_offset"`
			Lag   *int64 `json:"lag"`
		} `json:"partitions"`
		DeadLettered *struct {
			Topic    string `json:"topic"`
			Count    int    `json:"count"`
			Complete bool   `json:"complete"`
			Last     *struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Offset    int64  `json:"offset"`
				Time      string `json:"time"`
			} `json:"last"`
		} `json:"dead_lettered"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
	require.Equal(t, lock.Milliseconds(), st.Lock)
	require.Len(t, st.Partitions, 1)
	t.Logf("status --share-group: %s", stdout)
	// Its dead letters, read from the dead-letter topic: the poison
	// record's (more than one when a process died before its accept).
	require.NotNil(t, st.DeadLettered, "status read the dead-letter topic")
	require.Equal(t, dlq, st.DeadLettered.Topic)
	require.Equal(t, len(rs), st.DeadLettered.Count, "every dead letter of the run is in the last 24h")
	require.True(t, st.DeadLettered.Complete)
	require.NotNil(t, st.DeadLettered.Last)
	require.Equal(t, topic, st.DeadLettered.Last.Topic)
	require.Equal(t, poison, st.DeadLettered.Last.Offset)
	_, err = time.Parse(time.RFC3339, st.DeadLettered.Last.Time)
	require.NoError(t, err, "the last one's time")
	code, stdout, stderr = runStatus(t, nil, "--seed-brokers", env.Brokers, "--share-group", group, "--dead-letter-topic", dlq)
	require.Equal(t, 0, code, "status --share-group: %s %s", stdout, stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^dead-lettered: %d in the last 24h to %s, the last %s/0@%d at \S+Z: `, len(rs), regexp.QuoteMeta(dlq), regexp.QuoteMeta(topic), poison), stdout)

	distinct := int64(0)
	for o := range int64(records) {
		if len(s.of(o)) > 0 {
			distinct++
		}
	}
	t.Logf("m1 %+v, m2 %+v; %d requests, %d failed on purpose", counts["m1"], counts["m2"], s.Requests(), s.Failed())
	figure(t, "share_work_queue partitions=1 processes=3 members=6 records=%d sink_distinct=%d dead_lettered=%d rejected=%d lost=0 "+
		"sink_failed_records=%d redelivered_after_failure=%d redelivered_after_kill=%d duplicates=%d duplicates_kill_held=%d duplicates_kill_unsent_accept=%d "+
		"kill_held_records=%d back_after_kill_s=%.1f slow_batch_records=%d slow_batch_held_s=%.1f lock_s=%.0f renewals_m1=%d lock_expired=%d "+
		"survivors_accepted=%d survivors_released=%d seconds=%.1f",
		records, distinct, len(rs), total.rejected, s.failedCount(), retriedFailed, retriedKill, dups, dupsHeld, dupsUnsent,
		len(victims), backAfter.Seconds(), len(slowRecs), slowFor.Seconds(), lock.Seconds(), counts["m1"].renewals, total.lockExpired,
		total.accepted, total.released, took.Seconds())
}

// TestShareRejectsWithoutDeadLetter: with no dead-letter topic, a record
// failing at its last attempt (max_attempts 2) is rejected: the broker
// archives it, and the process says so in an ERROR line naming topic,
// partition and offset, and counts it. Every other record is accepted once.
func TestShareRejectsWithoutDeadLetter(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const records, poison = 200, int64(37)
	topic, group := "wm-share-rej-"+suffix(), "wm-share-rej-g-"+suffix()
	k.createTopic(topic, 1)
	k.produce(topic, 1, records, nil)
	s := newShareSink(t, topic, 0, 2*time.Millisecond)
	addr := metricsAddr(t)
	conf := sharePipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.URL(), instance: "r1", metrics: addr,
		poison: poison, input: "members: 1\nbatch_max_records: 20\ndead_letter:\n  max_attempts: 2\n"}
	p := startProc(t, "r1", conf.yaml())
	rejectLine := func() []logLine {
		return p.grep("level=error", "rejected 1 records", fmt.Sprintf("%s/0@%d", topic, poison))
	}
	// A start offset may pass the poison record once it was rejected with
	// its report. The input logs the ERROR line as it gives kgo the verdict,
	// before kgo sends it, and the watch reads the log after the start
	// offset.
	w := k.watchShare(group, topic, s, func(context.Context) (map[int64]bool, error) {
		if len(rejectLine()) > 0 {
			return map[int64]bool{poison: true}, nil
		}
		return nil, nil
	})
	waitSettled(t, s, records, poison, addr)
	w.check(t)
	c := scrapeShare(t, addr)
	require.Len(t, rejectLine(), 1, "one ERROR line names the rejected record")
	p.stop(45 * time.Second)
	k.checkDrained(group, topic) // the rejected record is archived: never handed out again
	require.EqualValues(t, 1, c.rejected)
	require.EqualValues(t, 1, c.released, "the poison record's first attempt")
	require.EqualValues(t, records-1, c.accepted)
	for o := range int64(records) {
		want := 1
		if o == poison {
			want = 0
		}
		require.Len(t, s.of(o), want, "deliveries of offset %d", o)
	}
	figure(t, "share_reject records=%d accepted=%d released=%d rejected=%d dead_lettered=%d duplicates=0", records, c.accepted, c.released, c.rejected, c.deadLettered)
}
