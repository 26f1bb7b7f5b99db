package tests

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// TestShareLockExpiresWhileStopped: two kafka_share processes, s1 and s2,
// on a topic of one partition, in a group whose record lock is 2 s and
// whose session is 30 s. Twice, the sink holds s1's requests and s1 is
// stopped (SIGSTOP) with them in flight, for longer than the lock and much
// shorter than the session: its connections stay open and it stays a
// member, but it renews nothing. So only the locks end: the broker hands
// what s1 held to s2, at the next attempt. Then s1 goes on (SIGCONT), the
// sink takes its held requests, and those records reach the sink twice.
// What becomes of s1's late accepts depends on where the group is:
//
//   - Stop 1: s1 goes on only once s2 accepted the records and the
//     share-partition start offset passed them. Kafka 4.3.1 then ignores
//     the late accepts without an error (SharePartition.acknowledge skips a
//     batch below the start offset: "All offsets in the acknowledgement
//     batch are already archived", logged at TRACE): nothing is refused,
//     nothing counted. These duplicates are invisible to the input.
//   - Stop 2: the sink also holds s2's requests while s1 goes on, so the
//     records are acquired by s2 when s1's accepts (and renewals) come:
//     the broker refuses them (INVALID_RECORD_STATE), and s1 counts them in
//     kafka_share_lock_expired_total and logs a WARN.
//
// Checked from outside: none lost; every record of s1's held requests
// delivered by s2 at a later attempt and by s1 after SIGCONT; every
// duplicate explained by a stop (exactly two deliveries: one by s1, one by
// s2 at a later attempt after the first stop began); s2 refused nothing; the
// share-partition start offset never passes a record the sink has not
// taken; and once both left, the broker hands out nothing of the topic.
func TestShareLockExpiresWhileStopped(t *testing.T) {
	env := needBroker(t)
	k := newKafka(t, env)
	const records = 6000
	const lock = 2 * time.Second
	topic, group := "wm-share-stop-"+suffix(), "wm-share-stop-g-"+suffix()
	k.createTopic(topic, 1)
	k.setGroupConfig(group, "share.record.lock.duration.ms", strconv.Itoa(int(lock/time.Millisecond)),
		"share.session.timeout.ms", "30000")
	k.produce(topic, 1, records, nil)

	s := newShareSink(t, topic, 2*time.Millisecond, 10*time.Millisecond)
	s.SetRate(300) // about 20 s of stream: time for two stops
	// holdS1 and holdS2, when set, hold the requests of s1 and those of
	// s2 that deliver a record again; the records of the requests held are
	// kept in held.
	var holdS1, holdS2 atomic.Pointer[testkit.Gate]
	var heldMu sync.Mutex
	held := map[string][]rec{}
	s.setPick(func(b testkit.Batch) *testkit.Gate {
		var g *testkit.Gate
		switch b.Instance {
		case "s1":
			g = holdS1.Load()
		case "s2":
			// Only s2's requests of records delivered again: the records
			// of s1, which no one else releases here. s2's other
			// requests go on, and its members with them.
			if slices.ContainsFunc(b.Records, func(r rec) bool { return r.A > 1 }) {
				g = holdS2.Load()
			}
		}
		if g != nil {
			heldMu.Lock()
			held[b.Instance] = append(held[b.Instance], b.Records...)
			heldMu.Unlock()
		}
		return g
	})
	heldBy := func(instance string) []rec {
		heldMu.Lock()
		defer heldMu.Unlock()
		return append([]rec(nil), held[instance]...)
	}
	w := k.watchShare(group, topic, s, nil)

	procs := map[string]*proc{}
	addrs := map[string]string{}
	// s1 has one member: while its one poll is held at the sink it
	// fetches nothing, so what it holds when stopped is that poll, and
	// records it sent before whose accepts had not left yet.
	for name, members := range map[string]int{"s1": 1, "s2": 2} {
		addrs[name] = metricsAddr(t)
		conf := sharePipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.URL(), instance: name,
			metrics: addrs[name], poison: -1, input: "members: " + strconv.Itoa(members) + "\nbatch_max_records: 20\n"}
		procs[name] = startProc(t, name, conf.yaml())
	}
	s1 := procs["s1"]
	t.Cleanup(func() { _ = s1.cmd.Process.Signal(syscall.SIGCONT) }) // never left stopped
	lockExpired := func(name string) float64 {
		m, err := scrapeMetrics(testCtx(t, 5*time.Second), addrs[name])
		require.NoError(t, err)
		v, _ := m.Sum("kafka_share_lock_expired_total")
		return v
	}
	refusals := func() []logLine { return s1.grep("level=warn", "no longer held records") }
	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, name := range []string{"s1", "s2"} {
			assert.Positive(c, s.instanceRecords(name), "records accepted from %s", name)
		}
	}, 60*time.Second, 50*time.Millisecond, "both processes to deliver")

	// stop holds s1's requests, stops s1 once one is held, and waits until
	// s2 delivered every record of them at a later attempt; it returns
	// them, and when s1 was stopped.
	var firstStop time.Time
	stop := func(n int) ([]rec, time.Time, *testkit.Gate) {
		g := testkit.NewGate()
		heldMu.Lock()
		clear(held)
		heldMu.Unlock()
		holdS1.Store(g)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Positive(c, g.Waiting(), "requests of s1 held")
		}, 30*time.Second, 20*time.Millisecond, "stop %d: a request of s1 held", n)
		require.NoError(t, s1.cmd.Process.Signal(syscall.SIGSTOP))
		at := time.Now()
		if firstStop.IsZero() {
			firstStop = at
		}
		victims := heldBy("s1")
		t.Logf("stop %d: stopped s1 (SIGSTOP) with %d requests of %d records held", n, g.Waiting(), len(victims))
		return victims, at, g
	}
	// redelivered waits until s2 has every record s1 held at a later
	// attempt: in the sink, or (stop 2) in its requests the sink holds.
	redelivered := func(n int, victims []rec) {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			atS2 := map[int64]int{}
			for _, r := range heldBy("s2") {
				atS2[r.O] = max(atS2[r.O], r.A)
			}
			for _, r := range victims {
				assert.True(c, deliveredBy(s.of(r.O), "s2", r.A) || atS2[r.O] > r.A, "offset %d, held by s1 at attempt %d, taken by s2 at a later attempt", r.O, r.A)
			}
		}, 25*time.Second, 20*time.Millisecond, "stop %d: the records s1 held to go to s2 while s1 is stopped", n)
	}
	resume := func(n int, at time.Time, g *testkit.Gate) time.Time {
		require.NoError(t, s1.cmd.Process.Signal(syscall.SIGCONT))
		cont := time.Now()
		require.Less(t, cont.Sub(at), 25*time.Second, "stop %d within the session timeout: s1 still a member", n)
		t.Logf("stop %d: resumed s1 (SIGCONT) after %v", n, cont.Sub(at).Round(time.Millisecond))
		holdS1.Store(nil)
		g.Open() // s1's held requests complete, as a sink that was only slow would complete them
		return cont
	}
	deliveredAgain := func(n int, victims []rec, cont time.Time) {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			for _, r := range victims {
				assert.True(c, deliveredAfter(s.of(r.O), "s1", cont), "offset %d delivered by s1 after SIGCONT", r.O)
			}
		}, 30*time.Second, 20*time.Millisecond, "stop %d: s1's held requests to complete", n)
	}

	// Stop 1: s2 settles the records before s1 goes on.
	victims1, at1, g1 := stop(1)
	redelivered(1, victims1)
	last := victims1[0].O
	for _, r := range victims1 {
		last = max(last, r.O)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		o, ok, err := k.shareStart(testCtx(t, 5*time.Second), group, topic, 0)
		if assert.NoError(c, err) && assert.True(c, ok) {
			assert.Greater(c, o, last, "share-partition start offset")
		}
	}, 25*time.Second, 50*time.Millisecond, "stop 1: the start offset to pass what s1 held")
	back1 := time.Since(at1)
	cont1 := resume(1, at1, g1)
	deliveredAgain(1, victims1, cont1)
	// kgo sends s1's accepts within a second (its ack timer): none is
	// refused in the next three.
	require.Never(t, func() bool { return lockExpired("s1") > 0 || len(refusals()) > 0 }, 3*time.Second, 100*time.Millisecond,
		"stop 1: a late accept below the start offset refused")

	// Stop 2: s2 still holds the records when s1's accepts come.
	g2s2 := testkit.NewGate()
	victims2, at2, g2 := stop(2)
	holdS2.Store(g2s2)
	redelivered(2, victims2)
	back2 := time.Since(at2)
	cont2 := resume(2, at2, g2)
	deliveredAgain(2, victims2, cont2)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, refusals(), "s1 logged a refused verdict")
		assert.Positive(c, lockExpired("s1"), "s1's kafka_share_lock_expired_total")
	}, 30*time.Second, 50*time.Millisecond, "stop 2: s1 to count its refused verdicts")
	holdS2.Store(nil)
	g2s2.Open()

	waitSettled(t, s, records, -1, addrs["s1"], addrs["s2"])
	took := time.Since(start)
	w.check(t)
	counts := map[string]shareCounts{}
	for _, name := range []string{"s1", "s2"} {
		counts[name] = scrapeShare(t, addrs[name])
		procs[name].stop(45 * time.Second)
	}
	k.checkDrained(group, topic)

	victimSet := map[int64]int{}
	for n, vs := range [][]rec{victims1, victims2} {
		for _, r := range vs {
			victimSet[r.O] = n + 1
		}
	}
	var dups int64
	var dupsHeld [3]int64 // by stop; [0]: records s1 held otherwise (not sent, or sent and not yet accepted)
	for o := range int64(records) {
		ds := s.of(o)
		if len(ds) == 0 {
			t.Errorf("offset %d never reached the sink: lost", o)
			continue
		}
		if len(ds) == 1 {
			continue
		}
		dups += int64(len(ds) - 1)
		explained := len(ds) == 2
		if explained {
			mine, other := ds[0], ds[1]
			if mine.instance != "s1" {
				mine, other = other, mine
			}
			explained = mine.instance == "s1" && other.instance == "s2" && other.attempt > mine.attempt && !other.at.Before(firstStop)
		}
		if !explained {
			t.Errorf("offset %d delivered %d times, not explained by a stop (one delivery by s1, one by s2 at a later attempt after the first stop): %+v", o, len(ds), ds)
			continue
		}
		dupsHeld[victimSet[o]]++
	}
	require.Zero(t, counts["s2"].lockExpired, "s2 held nothing past its lock")
	require.Zero(t, counts["s1"].ackErrors+counts["s2"].ackErrors)
	require.Zero(t, counts["s1"].rejected+counts["s2"].rejected)
	t.Logf("s1 %+v, s2 %+v; s1's refusals: %d WARN lines, first: %s", counts["s1"], counts["s2"], len(refusals()), refusals()[0].text)
	figure(t, "share_lock_expired partitions=1 processes=2 members=4 records=%d lost=0 lock_s=%.0f session_s=30 "+
		"stop1_held_records=%d stop1_back_s=%.1f stop1_refused=0 stop2_held_records=%d stop2_back_s=%.1f "+
		"duplicates=%d duplicates_stop1_held=%d duplicates_stop2_held=%d duplicates_other_held_by_s1=%d "+
		"lock_expired_s1=%d lock_expired_s2=%d refusal_lines_s1=%d renewals_s1=%d seconds=%.1f",
		records, lock.Seconds(), len(victims1), back1.Seconds(), len(victims2), back2.Seconds(),
		dups, dupsHeld[1], dupsHeld[2], dupsHeld[0], counts["s1"].lockExpired, counts["s2"].lockExpired, len(refusals()),
		counts["s1"].renewals, took.Seconds())
}

// deliveredBy tells whether ds holds a delivery by instance at an attempt
// above after.
func deliveredBy(ds []delivery, instance string, after int) bool {
	for _, d := range ds {
		if d.instance == instance && d.attempt > after {
			return true
		}
	}
	return false
}

// deliveredAfter tells whether ds holds a delivery by instance at or after t.
func deliveredAfter(ds []delivery, instance string, t time.Time) bool {
	for _, d := range ds {
		if d.instance == instance && !d.at.Before(t) {
			return true
		}
	}
	return false
}
