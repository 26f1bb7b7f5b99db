package tests

import (
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Retention overtaking a stall, on the real broker (the issue "faults Kafka
// really has"): partition 0 of a 2-partition topic (2,000 records each)
// stalls at its batch 100-199, pauses at max_pending_batches: 4 with 200-499
// delivered, and every record below 1,500 is deleted (DeleteRecords moves
// the log start as retention does). Then the sink recovers.
//
// Whatever start_offset says, and whether the pipeline runs through the
// deletion or is down while it happens, the 1,100 offsets that were never
// delivered and are gone (100-199 and 500-1499) are reported lost exactly
// once (ERROR lines and kafka_watermark_lost_records_total), the partition
// goes on from the log start without a restart and commits its log end, and
// `status` exits 3 with the loss. Before the fix the running pipeline
// wedged at 100 for ever; the restarted one committed 2,000 in silence; and
// start_offset: latest skipped 1500-1999.
func TestRetentionPastAStallIsReportedLost(t *testing.T) {
	env := needBroker(t)
	for _, tc := range []struct {
		start string
		down  bool // the pipeline is stopped while the records are deleted
	}{
		{start: "earliest"},
		{start: "latest"},
		{start: "committed"},
		{start: "earliest", down: true},
	} {
		name := tc.start
		if tc.down {
			name += "/down"
		}
		t.Run(name, func(t *testing.T) { retentionPastAStall(t, env, tc.start, tc.down) })
	}
}

var retentionLostLine = regexp.MustCompile(`lost (\d+) record offset\(s\) of (\S+)/(\d+) before delivery: offsets (\d+)-(\d+) are no longer in the log, which now starts at (\d+) \(cause: (\w+)\)`)

func retentionPastAStall(t *testing.T, env *brokerEnv, start string, down bool) {
	k := newKafka(t, env)
	const parts, perPart, batchMax = 2, 2000, 100
	const deleteBelow = 1500
	topic, group := "wm-ret-"+suffix(), "wm-ret-g-"+suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)
	// Every partition starts from a commit at 0, so that start_offset
	// decides nothing but what a reset must not use.
	ctx := testCtx(t, time.Minute)
	zero := kadm.Offsets{}
	for p := range int32(parts) {
		zero.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	resp, err := k.adm.CommitOffsets(ctx, group, zero)
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	s := newSink(t, topic, parts, 0, 2*time.Millisecond)
	var sinkDown atomic.Bool
	sinkDown.Store(true)
	s.setFail(func(recs []rec) bool { // called one request at a time
		if !sinkDown.Load() {
			return false
		}
		for _, r := range recs {
			if r.P == 0 && r.O >= 100 && r.O < 200 {
				return true
			}
		}
		return false
	})
	// Commits must never go backwards; the sink-prefix check does not
	// apply (offsets the log no longer holds are passed on purpose), and
	// delivery is checked below instead.
	w := k.watchCommits(group, topic, nil, 100*time.Millisecond)
	conf := pipeline{brokers: env.Brokers, topic: topic, group: group, sinkURL: s.url(), instance: "ret",
		input: fmt.Sprintf("start_offset: %s\ncommit_period: 200ms\nbatch_max_records: %d\nmax_pending_batches: 4\nstall_replay_after: 4s\ntopic_lag_refresh_period: 300ms\n", start, batchMax)}
	addr := metricsAddr(t)
	yaml := withMetrics(t, conf.yaml(), addr)
	p := startProc(t, "ret", yaml)

	stalled := fmt.Sprintf("partition %s/0 stalled since", topic)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, p.grep(stalled))
		assert.Equal(c, int64(100), s.prefix(0), "nothing at or after 100 passes the failed batch")
	}, time.Minute, 50*time.Millisecond, "partition 0 to stall at 100")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 300, deliveredIn(s, 0, 200, 500), "200-499 delivered")
	}, time.Minute, 50*time.Millisecond, "200-499 to be delivered before the deletion")
	// The topic's retention.ms (the broker's default, 7 days), read with
	// DescribeConfigs, and the stalled partition's headroom below it.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m, err := scrapeMetrics(testCtx(t, 10*time.Second), addr)
		if !assert.NoError(c, err) {
			return
		}
		assert.Equal(c, int64(7*24*3600), m.byPartition("kafka_watermark_retention_seconds", topic)[0])
		h, ok := m.byPartition("kafka_watermark_retention_headroom_seconds", topic)[0]
		assert.True(c, ok, "the headroom of the stalled partition is shown")
		assert.Greater(c, h, int64(7*24*3600-600))
		assert.LessOrEqual(c, h, int64(7*24*3600))
	}, time.Minute, 200*time.Millisecond, "the retention gauges of the stalled partition")

	procs := []*proc{p}
	if down {
		p.stop(45 * time.Second)
	}
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: deleteBelow})
	dresp, err := k.adm.DeleteRecords(ctx, del)
	require.NoError(t, err)
	require.NoError(t, dresp.Error())
	sinkDown.Store(false)
	if down {
		p2 := startProc(t, "ret2", yaml)
		procs = append(procs, p2)
		p = p2
	}

	want := map[int32]int64{0: end[0], 1: end[1]}
	k.waitCommitted(group, topic, want, 2*time.Minute)
	require.True(t, p.running(), "went on without a restart")

	// Every offset of the log that still exists was delivered; below the
	// log start only what the sink had taken before the deletion.
	snap := s.snapshot()
	for o := int64(deleteBelow); o < end[0]; o++ {
		require.Positive(t, snap.count(0, o), "offset %d of partition 0 delivered", o)
	}
	for o := int64(0); o < end[1]; o++ {
		require.Positive(t, snap.count(1, o), "offset %d of partition 1 delivered", o)
	}
	var undelivered int64
	for o := int64(0); o < deleteBelow; o++ {
		if snap.count(0, o) == 0 {
			undelivered++
		}
	}
	require.Equal(t, int64(1100), undelivered, "100-199 and 500-1499 never reached the sink")

	// Reported exactly once, across the processes: the same count, the
	// bounds, the cause.
	var reported int64
	first, last := int64(-1), int64(-1)
	for _, pr := range procs {
		for _, l := range pr.grep("lost ", "record offset(s) of "+topic+"/") {
			m := retentionLostLine.FindStringSubmatch(l.text)
			require.NotNil(t, m, "a lost line in the documented form: %s", l.text)
			require.Equal(t, "0", m[3], "only partition 0 lost records")
			require.Equal(t, "retention", m[7])
			n, _ := strconv.ParseInt(m[1], 10, 64)
			f, _ := strconv.ParseInt(m[4], 10, 64)
			e, _ := strconv.ParseInt(m[5], 10, 64)
			reported += n
			if first < 0 || f < first {
				first = f
			}
			last = max(last, e)
		}
	}
	require.Equal(t, int64(1100), reported, "every lost offset reported once")
	require.Equal(t, int64(100), first)
	require.Equal(t, int64(1499), last)

	require.Equal(t, int64(1100), mustScrape(t, addr).total("kafka_watermark_lost_records_total", topic),
		"kafka_watermark_lost_records_total of the process that saw the loss")
	code, stdout, stderr := runStatus(t, nil, "--seed-brokers", env.Brokers, "--consumer-group", group, "--topics", topic)
	require.Equal(t, 3, code, "status exits 3: records lost, nothing stalled; stdout:\n%s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "1100 (offsets 100-1499, retention")

	p.stop(45 * time.Second)
	for _, pr := range procs {
		pr.assertClean()
	}
	w.check(t)
	figure(t, "retention_past_a_stall start_offset=%s down=%v lost_reported=%d", start, down, reported)
}

// deliveredIn counts the offsets of [from, to) of partition p the sink took.
func deliveredIn(s *sink, p int32, from, to int64) int {
	snap := s.snapshot()
	n := 0
	for o := from; o < to; o++ {
		if snap.count(p, o) > 0 {
			n++
		}
	}
	return n
}
